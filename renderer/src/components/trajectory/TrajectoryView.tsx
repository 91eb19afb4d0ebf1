import { useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { Box, MediaRef, Trajectory } from '../../../../app/contract';
import { boxesOn, combinedImages, imageForTurn, stepNumbers } from './geometry';
import { ImageViewer } from './ImageViewer';
import { Lightbox } from './Lightbox';
import { StepCard } from './StepCard';
import { AttentionControls, AttentionHeat, heatRect } from './AttentionOverlay';
import { attentionKey, useAttentionStore } from '../../stores/useAttentionStore';

export interface TrajectoryViewProps {
  trajectory: Trajectory;
  mediaUrl: (id: string) => string;
  /** Turn index of the selected step (controlled); uncontrolled when absent. */
  activeStep?: number;
  onStepChange?(i: number): void;
  /** Live text of the turn being generated. */
  streaming?: { turnIndex: number; text: string } | null;
  /** Step mode holds the streaming turn before its tool call: say so instead of "generating…". */
  paused?: boolean;
  /** Step mode: an editable box on the paused call's target image. */
  edit?: { media: MediaRef; targetIndex: number; box: Box; step: number; onChange(box: Box): void } | null;
  /** ←/→ move through steps (default true); turn off for a second view on the same page. */
  keyboard?: boolean;
  testId?: string;
  /** What the image pane says when there is no image (an imported file without its images says so). */
  noImage?: string;
  /** The stored run and branch this trajectory is: crop steps then offer "where it looked" (attention maps). */
  attention?: { runId: string; branch: string } | null;
}

function typingIn(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);
}

/** A trajectory step by step: the image with every box drawn where it was cut, and a card per turn. */
export function TrajectoryView({ trajectory: t, mediaUrl, activeStep, onStepChange, streaming, paused = false, edit, keyboard = true, testId = 'trajectory-view', noImage = 'No image yet.', attention }: TrajectoryViewProps) {
  const [ownStep, setOwnStep] = useState(0);
  const active = activeStep ?? ownStep;
  const select = (i: number) => {
    if (activeStep === undefined) setOwnStep(i);
    onStepChange?.(i);
  };
  const images = useMemo(() => combinedImages(t), [t]);
  const steps = useMemo(() => stepNumbers(t), [t]);
  /** "Crop 2" / "Step 1 frame 3" / "Step 2 figure 1" for produced images, by combined index. */
  const producedLabels = useMemo(() => {
    const out = new Map<number, string>();
    let k = t.media.length;
    for (const turn of t.turns) {
      const c = turn.call;
      if (!c) continue;
      c.produced.forEach((_, j) => out.set(k++, c.frameIndices ? `Step ${steps.get(turn.index)} frame ${(c.frameIndices[j] ?? j) + 1}` : c.name === 'python' ? `Step ${steps.get(turn.index)} figure ${j + 1}` : `Crop ${steps.get(turn.index)}`));
    }
    return out;
  }, [t, steps]);
  const [shownImage, setShownImage] = useState<number | null>(null);
  const [overlays, setOverlays] = useState(true);
  const [open, setOpen] = useState<{ media: MediaRef; title: string } | null>(null);

  useEffect(() => setShownImage(null), [active]);

  const turnIndices = t.turns.map((x) => x.index);
  useEffect(() => {
    if (!keyboard) return;
    const onKey = (e: KeyboardEvent) => {
      if (typingIn(e.target) || e.altKey || e.ctrlKey || e.metaKey || open) return;
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      if (turnIndices.length === 0) return;
      const pos = turnIndices.indexOf(active);
      const next = e.key === 'ArrowRight' ? Math.min(turnIndices.length - 1, pos + 1) : Math.max(0, pos - 1);
      e.preventDefault();
      select(turnIndices[pos < 0 ? 0 : next]!);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  const imageIndex = edit ? edit.targetIndex : (shownImage ?? imageForTurn(t, active));
  const media = edit ? edit.media : images[imageIndex];
  const attnEntry = useAttentionStore((s) => (attention ? s.entries[attentionKey(attention.runId, attention.branch, active)] : undefined));
  const attnView = useAttentionStore(useShallow((s) => [s.layer, s.opacity, s.shown] as const));
  const maps = attnEntry?.maps;
  const rect = maps && attnView[2] && !edit ? heatRect(t, maps, imageIndex) : null;
  const lastIndex = t.turns.at(-1)?.index;
  const finalIndex = t.finalText !== undefined && lastIndex !== undefined && !t.turns.at(-1)?.call ? lastIndex : -1;

  return (
    <div className="tv" data-testid={testId}>
      <div className="tv-left">
        <div className="tv-tabs" role="tablist" aria-label="Images">
          {images.map((m, i) => (
            <button type="button" role="tab" key={`${m.id}-${i}`} aria-selected={i === imageIndex} className={i === imageIndex ? 'tv-tab active' : 'tv-tab'} onClick={() => setShownImage(i)} data-testid={`image-tab-${i}`}>
              {i < t.media.length ? (t.isVideo ? `Frame ${i + 1}` : `Image ${i + 1}`) : (producedLabels.get(i) ?? `#${i + 1}`)}
            </button>
          ))}
          <span className="grow" />
          <label className="tv-toggle">
            <input type="checkbox" checked={overlays} onChange={(e) => setOverlays(e.target.checked)} data-testid="toggle-overlays" /> boxes
          </label>
        </div>
        {media ? (
          <ImageViewer
            media={media}
            url={mediaUrl(media.id)}
            boxes={edit ? [] : boxesOn(t, imageIndex)}
            activeTurn={active}
            showOverlays={overlays}
            onBoxClick={select}
            label={imageIndex < t.media.length ? (t.isVideo ? `frame ${imageIndex + 1}` : `image ${imageIndex + 1}`) : `image #${imageIndex + 1} (${producedLabels.get(imageIndex) ?? 'produced'})`}
            {...(edit ? { edit: { box: edit.box, step: edit.step, onChange: edit.onChange } } : {})}
            {...(maps && rect ? { underlay: <AttentionHeat maps={maps} layer={attnView[0]} opacity={attnView[1]} rect={rect} /> } : {})}
          />
        ) : (
          <div className="tv-empty muted" data-testid="no-image">{noImage}</div>
        )}
        {t.error ? <div className="tv-run-error" role="alert" data-testid="trajectory-error">{t.error}</div> : null}
      </div>
      <div className="tv-steps" data-testid="step-list">
        {t.turns.map((turn) => (
          <StepCard
            key={turn.index}
            turn={turn}
            {...(steps.has(turn.index) ? { step: steps.get(turn.index)! } : {})}
            active={turn.index === active}
            final={turn.index === finalIndex}
            mediaUrl={mediaUrl}
            onSelect={() => select(turn.index)}
            onOpenMedia={(m, title) => setOpen({ media: m, title })}
            {...(attention && turn.call?.cropBox && turn.call.targetIndex !== undefined && !streaming ? { attention: <AttentionControls source={attention} turnIndex={turn.index} /> } : {})}
          />
        ))}
        {streaming && !t.turns.some((x) => x.index === streaming.turnIndex) ? (
          <article className="tv-step streaming" data-testid="streaming-turn">
            <header>
              <strong>Turn {streaming.turnIndex + 1}</strong>
              <span className="grow" />
              <span className="muted" data-testid="streaming-state">{paused ? 'paused before its tool call' : 'generating…'}</span>
            </header>
            <pre className="tv-text">{streaming.text}{paused ? null : <span className="tv-caret" />}</pre>
          </article>
        ) : null}
        {t.turns.length > 0 && !streaming ? (
          <div className="tv-summary muted" data-testid="trajectory-summary">
            stop: <strong>{t.stopReason}</strong>
            {t.totalTokens !== undefined ? ` · ${t.totalTokens} tokens` : ''}
            {t.latencyMs !== undefined ? ` · ${(t.latencyMs / 1000).toFixed(2)} s` : ''}
          </div>
        ) : null}
      </div>
      {open ? <Lightbox media={open.media} url={mediaUrl(open.media.id)} title={open.title} onClose={() => setOpen(null)} /> : null}
    </div>
  );
}

import { useEffect, useMemo, useState } from 'react';
import { useSlideDeck } from './useSlideDeck';
import type { Box, MediaRef, Trajectory } from '../../../../app/contract';
import { combinedImages, stepNumbers } from '../trajectory/geometry';
import { AnswerText } from './AnswerText';

type Slide =
  | { kind: 'question'; media: MediaRef }
  | { kind: 'box'; step: number; text: string; media: MediaRef; box: Box; padded?: Box }
  | { kind: 'zoom'; step: number; media: MediaRef; box: Box; crop: MediaRef }
  | { kind: 'frames'; step: number; frames: Array<{ media: MediaRef; index: number }> }
  | { kind: 'error'; step: number; text: string }
  | { kind: 'answer'; text: string; stop: string };

function slidesOf(t: Trajectory): Slide[] {
  const images = combinedImages(t);
  const steps = stepNumbers(t);
  const first = t.media[0];
  const out: Slide[] = first ? [{ kind: 'question', media: first }] : [];
  for (const turn of t.turns) {
    const c = turn.call;
    const step = steps.get(turn.index) ?? 0;
    if (!c) continue;
    const reason = turn.text.replace(/<tool_call>[\s\S]*$/, '').trim();
    if (c.error !== undefined) out.push({ kind: 'error', step, text: turn.observation || c.error });
    else if (c.bboxNormalized && c.targetIndex !== undefined && images[c.targetIndex]) {
      out.push({ kind: 'box', step, text: reason, media: images[c.targetIndex]!, box: c.bboxNormalized, ...(c.bboxPadded ? { padded: c.bboxPadded } : {}) });
      const crop = c.produced[0];
      if (crop) out.push({ kind: 'zoom', step, media: images[c.targetIndex]!, box: c.bboxPadded ?? c.bboxNormalized, crop });
    } else if (c.frameIndices) out.push({ kind: 'frames', step, frames: c.produced.map((m, i) => ({ media: m, index: c.frameIndices?.[i] ?? i })) });
  }
  out.push({ kind: 'answer', text: t.finalText ?? t.turns.at(-1)?.text ?? '', stop: t.stopReason });
  return out;
}

/** Fit the image into 72% of the viewport height and the full width, keeping its shape. */
const stageStyle = (m: MediaRef) => ({ aspectRatio: `${m.width / m.height}`, width: `min(100%, calc(72vh / var(--zoom, 1) * ${(m.width / m.height).toFixed(4)}))` });

const pct = (v: number) => `${(v * 100).toFixed(3)}%`;

/** Full screen, large type, keyboard-driven: →/Space next, ← back, Esc leaves; a crop zooms out of its box. */
export function PresentationMode({ trajectory, mediaUrl, onClose }: { trajectory: Trajectory; mediaUrl(id: string): string; onClose(): void }) {
  const slides = useMemo(() => slidesOf(trajectory), [trajectory]);
  const { index: i, root } = useSlideDeck(slides.length, onClose);
  const [zoomed, setZoomed] = useState(false);


  const slide = slides[i]!;
  useEffect(() => {
    setZoomed(false);
    if (slide.kind !== 'zoom') return;
    // Two frames later so the browser paints the start state before the transition runs.
    let r2 = 0;
    const r1 = requestAnimationFrame(() => (r2 = requestAnimationFrame(() => setZoomed(true))));
    return () => {
      cancelAnimationFrame(r1);
      cancelAnimationFrame(r2);
    };
  }, [i, slide.kind]);

  return (
    <div className="present" ref={root} tabIndex={-1} data-testid="presentation" role="dialog" aria-label="Presentation">
      <div className="present-top">
        <span className="present-q">{trajectory.question}</span>
        <span className="present-count" data-testid="slide-counter">{i + 1} / {slides.length}</span>
      </div>
      <div className="present-body" data-testid={`slide-${slide.kind}`}>
        {slide.kind === 'question' ? (
          <div className="present-stage" style={stageStyle(slide.media)}>
            <img src={mediaUrl(slide.media.id)} alt="question" />
          </div>
        ) : slide.kind === 'box' ? (
          <>
            <div className="present-stage" style={stageStyle(slide.media)}>
              <img src={mediaUrl(slide.media.id)} alt={`step ${slide.step}`} />
              {slide.padded ? <div className="tv-box-pad" style={{ left: pct(slide.padded[0]), top: pct(slide.padded[1]), width: pct(slide.padded[2] - slide.padded[0]), height: pct(slide.padded[3] - slide.padded[1]) }} /> : null}
              <div className="tv-box active present-box" style={{ left: pct(slide.box[0]), top: pct(slide.box[1]), width: pct(slide.box[2] - slide.box[0]), height: pct(slide.box[3] - slide.box[1]) }}>
                <span className="tv-box-label">{slide.step}</span>
              </div>
            </div>
            {slide.text ? <p className="present-caption">{slide.text}</p> : null}
          </>
        ) : slide.kind === 'zoom' ? (
          <div className="present-stage present-zoom" style={stageStyle(slide.media)} data-zoomed={zoomed ? 'true' : 'false'}>
            <img
              src={mediaUrl(slide.media.id)}
              alt={`step ${slide.step} source`}
              className="present-zoom-src"
              style={
                zoomed
                  ? (() => {
                      const [x1, y1, x2, y2] = slide.box;
                      const s = Math.min(1 / Math.max(1e-3, x2 - x1), 1 / Math.max(1e-3, y2 - y1));
                      return { transform: `translate(${(0.5 - ((x1 + x2) / 2) * s) * 100}%, ${(0.5 - ((y1 + y2) / 2) * s) * 100}%) scale(${s})` };
                    })()
                  : undefined
              }
            />
            <img src={mediaUrl(slide.crop.id)} alt={`step ${slide.step} crop`} className={`present-zoom-crop${zoomed ? ' shown' : ''}`} />
            <span className="present-crop-size">crop {slide.crop.width}×{slide.crop.height}</span>
          </div>
        ) : slide.kind === 'frames' ? (
          <div className="present-frames">
            {slide.frames.map((f) => (
              <figure key={`${f.media.id}-${f.index}`}>
                <img src={mediaUrl(f.media.id)} alt={`frame ${f.index + 1}`} />
                <figcaption>#{f.index + 1}</figcaption>
              </figure>
            ))}
          </div>
        ) : slide.kind === 'error' ? (
          <pre className="present-error">Step {slide.step}: {slide.text}</pre>
        ) : (
          <div className="present-answer" data-testid="present-answer">
            <div className="present-answer-label">Answer</div>
            <div><AnswerText text={slide.text} testId="present-answer-chip" /></div>
            <div className="present-stop">stop: {slide.stop}</div>
          </div>
        )}
      </div>
      <div className="present-help">← → or Space to move · Esc to leave</div>
    </div>
  );
}

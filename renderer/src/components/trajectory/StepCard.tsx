import type { MediaRef, Turn } from '../../../../app/contract';
import { fmtBox } from './geometry';

export interface StepCardProps {
  turn: Turn;
  /** 1-based step number when the turn is a tool call. */
  step?: number;
  active: boolean;
  final: boolean;
  /** True while this turn's text is still streaming. */
  streaming?: boolean;
  mediaUrl(id: string): string;
  onSelect(): void;
  onOpenMedia(m: MediaRef, title: string): void;
}

/** Hides the call JSON from the prose (it is shown parsed below) but keeps everything else verbatim. */
function prose(text: string): string {
  return text.replace(/<tool_call>[\s\S]*?(<\/tool_call>|$)/g, '').trim();
}

export function StepCard({ turn, step, active, final, streaming, mediaUrl, onSelect, onOpenMedia }: StepCardProps) {
  const c = turn.call;
  const meta = [turn.latencyMs !== undefined ? `${Math.round(turn.latencyMs)} ms` : null, turn.completionTokens !== undefined ? `${turn.completionTokens} tok` : null, turn.promptTokens !== undefined ? `prompt ${turn.promptTokens}` : null].filter(Boolean).join(' · ');
  const cls = ['tv-step', active ? 'active' : '', final ? 'final' : '', c?.error !== undefined ? 'has-error' : ''].filter(Boolean).join(' ');
  return (
    <article className={cls} data-testid={c ? `step-card-${step}` : final ? 'final-answer' : `turn-card-${turn.index}`} onClick={onSelect} aria-current={active ? 'step' : undefined}>
      <header>
        <strong>{c ? `Step ${step}` : final ? 'Answer' : `Turn ${turn.index + 1}`}</strong>
        {c?.name ? <span className="tv-tag">{c.name}</span> : null}
        {c?.edited ? <span className="tv-tag tv-tag-edited">edited</span> : null}
        {c?.error !== undefined ? <span className="tv-badge-error" data-testid="error-badge">error</span> : null}
        <span className="grow" />
        <span className="muted tv-meta" data-testid="step-meta">{streaming ? 'generating…' : meta}</span>
      </header>
      {final ? <div className="tv-final-text">{turn.text}</div> : <pre className="tv-text">{prose(turn.text) || (c ? '' : turn.text)}</pre>}
      {c ? (
        <div className="tv-call">
          <code className="tv-args" data-testid="call-args">{c.arguments !== undefined ? JSON.stringify(c.arguments) : c.raw.trim()}</code>
          {c.bboxRaw ? (
            <dl className="tv-kv">
              <dt>box ({c.bboxMode})</dt>
              <dd>{fmtBox(c.bboxRaw)}</dd>
              <dt>normalized</dt>
              <dd>{fmtBox(c.bboxNormalized)}</dd>
              <dt>padded</dt>
              <dd>{fmtBox(c.bboxPadded)}</dd>
              <dt>on image</dt>
              <dd>{c.targetIndex !== undefined ? `#${c.targetIndex + 1}` : '—'} · pixels {fmtBox(c.cropBox, 0)}</dd>
            </dl>
          ) : null}
          {c.error !== undefined ? (
            <pre className="tv-error" data-testid="error-text">{turn.observation || c.error}</pre>
          ) : null}
          {c.produced.length && c.frameIndices ? (
            <div className="tv-strip" data-testid="frame-strip">
              {c.produced.map((m, i) => (
                <button type="button" key={`${m.id}-${i}`} className="tv-thumb" onClick={(e) => (e.stopPropagation(), onOpenMedia(m, `frame ${(c.frameIndices?.[i] ?? i) + 1}`))}>
                  <img src={mediaUrl(m.id)} alt={`frame ${(c.frameIndices?.[i] ?? i) + 1}`} />
                  <span>#{(c.frameIndices?.[i] ?? i) + 1}</span>
                </button>
              ))}
            </div>
          ) : c.produced.length ? (
            <div className="tv-crops">
              {c.produced.map((m) => (
                <button type="button" key={m.id} className="tv-crop" data-testid={`crop-step-${step}`} onClick={(e) => (e.stopPropagation(), onOpenMedia(m, `Step ${step} crop`))} title="Open full size">
                  <img src={mediaUrl(m.id)} alt={`crop of step ${step}`} />
                  <span className="tv-crop-size" data-testid="crop-size">{m.width}×{m.height}</span>
                </button>
              ))}
            </div>
          ) : null}
        </div>
      ) : null}
    </article>
  );
}

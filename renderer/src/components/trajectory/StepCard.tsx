import type { ReactNode } from 'react';
import type { MediaRef, Turn } from '../../../../app/contract';
import { fmtBox } from './geometry';
import { tokenizePython } from './pythonHighlight';

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
  /** A crop turn's "where it looked" control (AttentionOverlay), shown under the box and before the crop it made. */
  attention?: ReactNode;
}

/** Hides the call JSON and code blocks from the prose (they are shown below) but keeps everything else verbatim. */
function prose(text: string): string {
  return text
    .replace(/<tool_call>[\s\S]*?(<\/tool_call>|$)/g, '')
    .replace(/<code>[\s\S]*?(<\/code>|$)/g, '')
    .trim();
}

/** What a PyVision code turn recorded (`call.name === 'python'`; see app/agent/pyvisionEpisode.ts). */
interface CodeArgs {
  code: string;
  stdout?: string;
  limitsHit?: string[];
  wallMs?: number;
}
function codeArgs(args: unknown): CodeArgs | null {
  if (!args || typeof args !== 'object') return null;
  const a = args as Record<string, unknown>;
  if (typeof a['code'] !== 'string') return null;
  return {
    code: a['code'],
    ...(typeof a['stdout'] === 'string' ? { stdout: a['stdout'] } : {}),
    ...(Array.isArray(a['limitsHit']) ? { limitsHit: a['limitsHit'].filter((x): x is string => typeof x === 'string') } : {}),
    ...(typeof a['wallMs'] === 'number' ? { wallMs: a['wallMs'] } : {}),
  };
}

const MAX_SHOWN_OUTPUT = 4000;

/** The code with syntax colouring, its printed text, and every figure it produced. */
function CodeCall({ turn, step, code, mediaUrl, onOpenMedia }: { turn: Turn; step?: number; code: CodeArgs; mediaUrl(id: string): string; onOpenMedia(m: MediaRef, title: string): void }) {
  const c = turn.call!;
  const out = code.stdout ?? '';
  return (
    <div className="tv-call tv-code-call">
      <pre className="tv-code" data-testid={`code-step-${step}`}>
        {tokenizePython(code.code).map((t, i) => (t.kind === 'text' ? t.text : <span key={i} className={`py-${t.kind}`}>{t.text}</span>))}
      </pre>
      <div className="tv-code-meta muted">
        {/* Imported runs record the output but not the time the code took. */}
        {code.wallMs !== undefined ? `ran ${Math.round(code.wallMs)} ms` : code.stdout !== undefined || c.produced.length > 0 ? 'ran (time not recorded)' : 'not run'}
        {code.limitsHit?.length ? <span className="tv-badge-error"> limit: {code.limitsHit.join(', ')}</span> : null}
      </div>
      {out ? (
        <pre className="tv-stdout" data-testid={`stdout-step-${step}`}>
          {out.length > MAX_SHOWN_OUTPUT ? `${out.slice(0, MAX_SHOWN_OUTPUT)}\n… ${out.length - MAX_SHOWN_OUTPUT} more characters` : out}
        </pre>
      ) : null}
      {c.error !== undefined ? <pre className="tv-error" data-testid="error-text">{turn.observation || c.error}</pre> : null}
      {c.produced.length ? (
        <div className="tv-crops">
          {c.produced.map((m, i) => (
            <button type="button" key={`${m.id}-${i}`} className="tv-crop" data-testid={`figure-step-${step}`} onClick={(e) => (e.stopPropagation(), onOpenMedia(m, `Step ${step} figure ${i + 1}`))} title="Open full size">
              <img src={mediaUrl(m.id)} alt={`figure ${i + 1} of step ${step}`} />
              <span className="tv-crop-size">{m.width}×{m.height}</span>
            </button>
          ))}
        </div>
      ) : null}
    </div>
  );
}

export function StepCard({ turn, step, active, final, streaming, mediaUrl, onSelect, onOpenMedia, attention }: StepCardProps) {
  const c = turn.call;
  const code = c?.name === 'python' ? codeArgs(c.arguments) : null;
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
      {c && code ? <CodeCall turn={turn} step={step} code={code} mediaUrl={mediaUrl} onOpenMedia={onOpenMedia} /> : null}
      {c && !code ? (
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
          {attention ?? null}
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

import { memo } from 'react';
import type { MediaRef, Turn } from '../../../../app/contract';
import type { PairSide } from '../../stores/useDemoPairStore';
import { fmtBox } from '../trajectory/geometry';

export interface PairStepCellProps {
  side: PairSide;
  row: number;
  turn: Turn | undefined;
  /** The tool-call number of this turn (1-based), when it is a call. */
  step: number | undefined;
  /** The text still streaming into this row (null when the row is a finished turn or empty). */
  streamingText: string | null;
  final: boolean;
  active: boolean;
  /** The URL of a workspace media id (the step's crops). */
  mediaUrl(id: string): string;
  onSelect(row: number): void;
}

/** The call JSON is shown as a tag and box below; the prose keeps everything else as the model wrote it. */
function prose(text: string): string {
  return text.replace(/<tool_call>[\s\S]*?(<\/tool_call>|$)/g, '').trim();
}

function Crop({ m, url }: { m: MediaRef; url: string }) {
  return <img className="pair-crop" src={url} alt={`crop ${m.width}×${m.height}`} width={m.width} height={m.height} loading="lazy" />;
}

/**
 * One side's turn in one step row. Memoized: while both columns stream, only the row whose text grows renders again
 * (its props are the turn object, which the store replaces only when that turn changes, and the streaming text).
 */
export const PairStepCell = memo(function PairStepCell({ side, row, turn, step, streamingText, final, active, mediaUrl, onSelect }: PairStepCellProps) {
  if (!turn && streamingText === null) return <div className="pair-cell pair-cell-empty" data-testid={`pair-cell-${side}-${row}`} aria-hidden />;
  const c = turn?.call;
  const heading = streamingText !== null ? `Turn ${row + 1}` : c ? `Step ${step ?? row + 1}` : final ? 'Answer' : `Turn ${row + 1}`;
  return (
    <div className={`pair-cell pair-cell-${side.toLowerCase()}${active ? ' active' : ''}${final ? ' final' : ''}`} data-testid={`pair-cell-${side}-${row}`} onClick={() => onSelect(row)}>
      <div className="pair-cell-head">
        <span className={`pair-tag pair-tag-${side.toLowerCase()}`}>{side}{c && step ? step : ''}</span>
        <strong>{heading}</strong>
        {turn?.latencyMs !== undefined ? <span className="muted small">{(turn.latencyMs / 1000).toFixed(1)} s</span> : null}
        {turn?.completionTokens !== undefined ? <span className="muted small">{turn.completionTokens} tok</span> : null}
        {/* No text yet: the turn waits for its prompt to be read, or (one engine shared by both sides) for the other side's turn. */}
        {streamingText !== null ? <span className="pair-live">{streamingText ? '● streaming' : '● waiting for the engine'}</span> : null}
      </div>
      <pre className="pair-text">{streamingText !== null ? streamingText : prose(turn?.text ?? '')}</pre>
      {c ? (
        <div className="pair-call">
          <span className="tv-tag">{c.name ?? 'unparsed call'}</span>
          {c.bboxNormalized ? <span className="muted small">box {fmtBox(c.bboxNormalized)}</span> : null}
          {c.error !== undefined ? <pre className="tv-error">{c.error}</pre> : null}
          {c.produced.slice(0, 2).map((m) => (
            <Crop key={m.id} m={m} url={mediaUrl(m.id)} />
          ))}
        </div>
      ) : null}
    </div>
  );
});

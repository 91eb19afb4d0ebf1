import { useSlideDeck } from './useSlideDeck';
import type { Turn } from '../../../../app/contract';
import { getClient } from '../../client';
import { pairRows, useDemoPairStore, type PairColumn, type PairSide } from '../../stores/useDemoPairStore';
import { combinedImages } from '../trajectory/geometry';
import { AnswerText } from './AnswerText';

const pct = (v: number) => `${(Math.max(0, Math.min(1, v)) * 100).toFixed(3)}%`;

/** One side at row `row`: that turn's image with its box and the crop, or its answer once it has no more turns. */
function SideSlide({ side, c, row, label, url }: { side: PairSide; c: PairColumn; row: number; label: string; url(id: string): string }) {
  const turns = c.trajectory.turns;
  const turn: Turn | undefined = turns.find((t) => t.index === row);
  const images = combinedImages(c.trajectory);
  const call = turn?.call;
  const target = call?.targetIndex !== undefined ? images[call.targetIndex] : c.trajectory.media[0];
  const answer = !turn || !call;
  return (
    <div className={`pair-slide pair-slide-${side.toLowerCase()}`} data-testid={`pair-slide-${side}`}>
      <div className="pair-slide-head"><span className={`pair-tag pair-tag-${side.toLowerCase()}`}>{side}</span> {label}</div>
      {target ? (
        <div className="pair-stage pair-slide-stage" style={{ aspectRatio: `${target.width} / ${target.height}`, width: `min(100%, calc(46vh * ${(target.width / target.height).toFixed(4)}))` }}>
          <img src={url(target.id)} alt={`${side} image`} />
          {call?.bboxNormalized ? <div className={`pair-box pair-box-${side.toLowerCase()} active`} style={{ left: pct(call.bboxNormalized[0]), top: pct(call.bboxNormalized[1]), width: pct(call.bboxNormalized[2] - call.bboxNormalized[0]), height: pct(call.bboxNormalized[3] - call.bboxNormalized[1]) }} /> : null}
        </div>
      ) : null}
      {call?.produced[0] ? <img className="pair-slide-crop" src={url(call.produced[0].id)} alt={`${side} crop`} /> : null}
      <div className="pair-slide-text">
        {answer ? (
          <>
            <span className="demo-answer-label">{turn ? 'Answer' : 'Done'}</span> <AnswerText text={c.trajectory.finalText ?? turns.at(-1)?.text ?? ''} />
          </>
        ) : (
          turn.text.replace(/<tool_call>[\s\S]*$/, '').trim()
        )}
      </div>
    </div>
  );
}

/** Full screen for a talk: both sides at the same step row, advanced together (→/Space next, ← back, Esc leaves). */
export function PairPresentation({ onClose }: { onClose(): void }) {
  const a = useDemoPairStore((s) => s.cols.A);
  const b = useDemoPairStore((s) => s.cols.B);
  const labels = useDemoPairStore((s) => s.pair?.labels) ?? (['A', 'B'] as const);
  const rows = Math.max(1, pairRows(a, b));
  const { index: row, root } = useSlideDeck(rows, onClose);
  const url = getClient().mediaUrl;


  return (
    <div className="present pair-present" ref={root} tabIndex={-1} role="dialog" aria-label="Side by side presentation" data-testid="pair-presentation">
      <div className="pair-present-cols">
        <SideSlide side="A" c={a} row={row} label={labels[0]} url={url} />
        <SideSlide side="B" c={b} row={row} label={labels[1]} url={url} />
      </div>
      <div className="pair-present-bar">
        <span data-testid="pair-present-counter">{row + 1}/{rows}</span>
        <span className="muted">→ next · ← back · Esc leaves</span>
        <button type="button" className="btn btn-sm" onClick={onClose}>Close</button>
      </div>
    </div>
  );
}

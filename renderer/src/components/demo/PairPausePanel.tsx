import { useState } from 'react';
import { useDemoPairStore, type PairSide } from '../../stores/useDemoPairStore';
import { fmtBox } from '../trajectory/geometry';

/** Step mode for one side: its paused call, continued or stopped on its own (the other side goes on). */
export function PairPausePanel({ side }: { side: PairSide }) {
  const proposal = useDemoPairStore((s) => s.cols[side].proposal);
  const resume = useDemoPairStore((s) => s.resume);
  const [keep, setKeep] = useState(true);
  if (!proposal) return null;
  return (
    <div className="demo-pause pair-pause" role="region" aria-label={`${side} paused before a tool call`} data-testid={`pair-pause-${side}`}>
      <div>
        <strong>{side} paused before turn {proposal.turnIndex + 1}'s call</strong> <span className="tv-tag">{proposal.name ?? 'unparsed'}</span>
      </div>
      {proposal.kind === 'crop' ? <div className="muted small">box {fmtBox(proposal.bboxNormalized)} (dashed on the image)</div> : proposal.kind === 'error' ? <pre className="tv-error">{proposal.error}</pre> : null}
      <div className="demo-row">
        <button type="button" className="btn btn-primary" onClick={() => void resume(side, 'run', keep)} data-testid={`pair-continue-${side}`}>Continue {side}</button>
        <button type="button" className="btn" onClick={() => void resume(side, 'stop', false)} data-testid={`pair-stop-here-${side}`}>Stop here</button>
        <label className="demo-check"><input type="checkbox" checked={keep} onChange={(e) => setKeep(e.target.checked)} /> keep pausing</label>
      </div>
    </div>
  );
}

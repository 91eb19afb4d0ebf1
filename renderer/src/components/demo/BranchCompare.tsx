import { useShallow } from 'zustand/react/shallow';
import { getClient } from '../../client';
import { useDemoStore } from '../../stores/useDemoStore';
import { TrajectoryView } from '../trajectory';

/** The edited branch beside the original, each with its own boxes, crops and answer. */
export function BranchCompare({ onClose }: { onClose(): void }) {
  const branches = useDemoStore(useShallow((s) => s.branches));
  const mediaUrl = getClient().mediaUrl;
  return (
    <div className="demo-compare" data-testid="branch-compare">
      <div className="demo-row">
        <strong>Compare branches</strong>
        <span className="grow" />
        <button type="button" className="btn" onClick={onClose}>Close comparison</button>
      </div>
      <div className="demo-compare-cols">
        {branches.map((b) => (
          <section key={b.id} className="demo-compare-col" data-testid={`compare-${b.id}`}>
            <h3>
              {b.label}
              {b.forkTurn !== undefined ? <span className="muted"> — edited from turn {b.forkTurn + 1}</span> : null}
            </h3>
            <div className="demo-answer" data-testid={`compare-answer-${b.id}`}>{b.trajectory.finalText ?? `(${b.trajectory.stopReason})`}</div>
            <TrajectoryView trajectory={b.trajectory} mediaUrl={mediaUrl} keyboard={false} testId={`trajectory-${b.id}`} />
          </section>
        ))}
      </div>
    </div>
  );
}

import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore } from '../../stores/useTrainingStore';
import { JobStateBadge } from './JobStateBadge';

const ACTIVE = new Set(['pending', 'running']);

/** Every job recorded in this workspace, newest first. */
export function JobList() {
  const jobs = useTrainingStore(useShallow((s) => s.jobs));
  const open = useTrainingStore((s) => s.view?.key ?? null);
  const openJob = useTrainingStore((s) => s.openJob);
  const cancel = useTrainingStore((s) => s.cancelJob);
  if (!jobs.length) return <p className="muted" data-testid="jobs-empty">No jobs yet. Submit one on the left.</p>;
  return (
    <div className="tr-jobs-scroll">
      <table className="table tr-jobs" data-testid="job-list">
        <thead>
          <tr>
            <th>job</th>
            <th>template</th>
            <th>on</th>
            <th>state</th>
            <th>submitted</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <tr key={j.key} data-testid="job-row" data-key={j.key} className={j.key === open ? 'tr-selected' : ''} onClick={() => void openJob(j.key)}>
              <td>
                <div className="tr-jobname">{j.name}</div>
                <div className="muted tr-small tr-mono">{j.id}</div>
              </td>
              <td className="tr-small">{j.templateTitle}</td>
              <td className="tr-small">{j.connector}</td>
              <td>
                <JobStateBadge state={j.state} raw={j.rawState} />
              </td>
              <td className="tr-small muted">{new Date(j.submittedAt).toLocaleTimeString()}</td>
              <td>
                {ACTIVE.has(j.state) ? (
                  <button
                    type="button"
                    className="btn btn-sm"
                    data-testid="job-cancel"
                    onClick={(e) => {
                      e.stopPropagation();
                      void cancel(j.key);
                    }}
                  >
                    Cancel
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

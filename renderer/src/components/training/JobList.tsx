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
  const warnings = useTrainingStore(useShallow((s) => s.jobWarnings));
  // Skipped records are shown, not hidden: the file keeps them, and the user can see which lines to look at.
  const skipped = warnings.length ? (
    <div className="tr-jobs-warning" role="status" data-testid="jobs-warnings">
      <strong>
        {warnings.length} line{warnings.length > 1 ? 's' : ''} of training/jobs.jsonl could not be read and {warnings.length > 1 ? 'were' : 'was'} skipped
      </strong>{' '}
      (the file is left as it is):
      <ul>
        {warnings.slice(0, 5).map((w) => (
          <li key={w} className="tr-mono">
            {w}
          </li>
        ))}
        {warnings.length > 5 ? <li>… and {warnings.length - 5} more</li> : null}
      </ul>
    </div>
  ) : null;
  if (!jobs.length) {
    return (
      <>
        {skipped}
        <p className="muted" data-testid="jobs-empty">No jobs yet. Submit one on the left.</p>
      </>
    );
  }
  // The notice sits above the scrolling table so that it never hides the rows.
  return (
    <>
      {skipped}
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
    </>
  );
}

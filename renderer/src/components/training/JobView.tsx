import { useTrainingStore } from '../../stores/useTrainingStore';
import { JobStateBadge } from './JobStateBadge';
import { LogView } from './LogView';
import { MetricCharts } from './MetricCharts';

const ACTIVE = new Set(['pending', 'running']);

/** One job: state, cancel, checkpoints (→ an eval command), live log and metric charts. */
export function JobView() {
  const view = useTrainingStore((s) => s.view);
  const job = useTrainingStore((s) => s.jobs.find((j) => j.key === s.view?.key));
  const cancel = useTrainingStore((s) => s.cancelJob);
  const close = useTrainingStore((s) => s.closeJob);
  const prepareEval = useTrainingStore((s) => s.prepareEval);
  const evalCommand = useTrainingStore((s) => s.evalCommand);
  const addToModels = useTrainingStore((s) => s.addCheckpointToModels);
  const modelAdds = useTrainingStore((s) => s.modelAdds);
  if (!view) return null;
  return (
    <section className="card tr-jobview" data-testid="job-view" data-key={view.key}>
      <header className="tr-row">
        <h3 className="tr-jobview-title">{job?.name ?? view.key}</h3>
        {job ? <JobStateBadge state={job.state} raw={job.rawState} /> : null}
        <span className="muted tr-small tr-mono">{view.key}</span>
        <span className="grow" />
        {job && ACTIVE.has(job.state) ? (
          <button type="button" className="btn btn-sm" data-testid="view-cancel" onClick={() => void cancel(job.key)}>Cancel job</button>
        ) : null}
        <button type="button" className="btn btn-sm" onClick={close}>Close</button>
      </header>
      {job?.message ? <p className="tr-small muted" data-testid="job-message">{job.rawState}: {job.message}</p> : null}
      {view.error ? <p className="tr-error" role="alert">{view.error}</p> : null}
      {job?.checkpoints.length ? (
        <div className="tr-checkpoints" data-testid="checkpoints">
          <span className="tr-label">Checkpoints</span>
          {job.checkpoints.map((c) => (
            <div key={c} className="tr-checkpoint">
              <div className="tr-row tr-small">
                <code className="tr-mono">{c}</code>
                <button type="button" className="btn btn-sm" data-testid="prepare-eval" onClick={() => void prepareEval(c)}>Prepare eval command</button>
                {job.connectorKind === 'local' ? (
                  <button type="button" className="btn btn-sm" data-testid="add-to-models" disabled={modelAdds[c]?.busy} title="Add this folder to the Models registry (needs its ONNX export)" onClick={() => void addToModels(c)}>
                    Add to Models
                  </button>
                ) : null}
              </div>
              {modelAdds[c] && !modelAdds[c].busy ? (
                <p className={`tr-small ${modelAdds[c].ok ? 'tr-ok' : 'tr-error'}`} data-testid="add-to-models-result" data-ok={String(modelAdds[c].ok)} style={{ whiteSpace: 'pre-wrap' }}>{modelAdds[c].message}</p>
              ) : null}
            </div>
          ))}
          {evalCommand ? (
            <div className="tr-evalcmd">
              <pre className="tr-code" data-testid="eval-command">{evalCommand.command}</pre>
              <p className="muted tr-small">{evalCommand.note}</p>
            </div>
          ) : null}
        </div>
      ) : null}
      <MetricCharts />
      <LogView />
    </section>
  );
}

import { useTrainingStore } from '../../stores/useTrainingStore';

/** The exact script and environment the connector will receive. */
export function ScriptPreview() {
  const job = useTrainingStore((s) => s.rendered);
  const error = useTrainingStore((s) => s.renderError);
  const nIssues = useTrainingStore((s) => Object.keys(s.issues).length);
  if (error) return <p className="tr-error" role="alert">{error}</p>;
  if (!job) return <p className="muted" data-testid="script-preview-empty">{nIssues ? `Fix ${nIssues} parameter${nIssues > 1 ? 's' : ''} to see the job script.` : 'Rendering…'}</p>;
  const env = Object.entries(job.env);
  const res = Object.entries(job.resources);
  return (
    <div className="tr-preview">
      <div className="tr-preview-meta muted tr-small">
        metrics: {job.metricsFormat}
        {res.length ? ` · resources: ${res.map(([k, v]) => `${k}=${v}`).join(', ')}` : ''}
        {job.files.length ? ` · files: ${job.files.map((f) => f.path).join(', ')}` : ''}
      </div>
      {env.length ? <pre className="tr-code tr-env">{env.map(([k, v]) => `${k}=${v}`).join('\n')}</pre> : null}
      <pre className="tr-code" data-testid="script-preview">{job.script}</pre>
      {job.services.map((s) => (
        <details key={s.name}>
          <summary>Side service “{s.name}” — {s.note} (start it yourself)</summary>
          <pre className="tr-code">{s.script}</pre>
        </details>
      ))}
      {job.notes.length ? (
        <ul className="tr-notes">
          {job.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

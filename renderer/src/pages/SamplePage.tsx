import { useEffect, useState } from 'react';
import { useRunsStore } from '../stores/useRunsStore';
import { useAppStore } from '../stores/useAppStore';
import { getClient } from '../client';
import { TurnList } from '../components/browse/TurnList';
import { TrajectoryView } from '../components/trajectory';

/** An imported sample whose file had no images (the importer's warning says the same). */
const IMPORTED_NO_IMAGE = 'Image not in the file; attach a folder (Runs page → Locate images…).';

/** One sample: the question and images, the steps, the raw text, and the scorer's view. */
export function SamplePage({ runId, qid }: { runId: string; qid: string }) {
  const sample = useRunsStore((s) => s.sample);
  const error = useRunsStore((s) => s.sampleError);
  const openSample = useRunsStore((s) => s.openSample);
  const navigate = useAppStore((s) => s.navigate);
  const [raw, setRaw] = useState(false);
  useEffect(() => {
    void openSample(runId, qid);
  }, [runId, qid, openSample]);
  const client = getClient();
  const t = sample?.trajectory;
  return (
    <section className="page" data-testid="sample-page">
      <header className="page-header">
        <div>
          <button type="button" className="btn" onClick={() => navigate('runs')}>← Runs</button>
          <h1 className="inline">{qid}</h1>
          <span className="muted"> in {runId}</span>
        </div>
        <label className="toggle"><input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} data-testid="raw-toggle" /> raw text</label>
      </header>
      {error ? <div className="banner banner-error">{error}</div> : null}
      {sample ? (
        <>
          <div className="card sample-summary">
            <p className="question">{sample.question}</p>
            {sample.options?.length ? <ol className="options" type="A">{sample.options.map((o, i) => <li key={i}>{o}</li>)}</ol> : null}
            <dl className="kv">
              <dt>Ground truth</dt><dd data-testid="ground-truth"><code>{JSON.stringify(sample.answer)}</code></dd>
              <dt>Extracted</dt><dd data-testid="extracted"><code>{JSON.stringify(sample.extracted ?? null)}</code> {sample.correct ? <span className="pill ok">correct</span> : <span className="pill bad">wrong</span>} <span className="muted">score {sample.score}</span></dd>
              <dt>Stop</dt><dd>{sample.stop_reason} · {sample.calls} call(s) · {sample.tool_errors} tool error(s)</dd>
              {sample.error ? (<><dt>Error</dt><dd className="error-text">{sample.error}</dd></>) : null}
            </dl>
            {t?.media.length ? (
              <div className="thumbs">
                {t.media.map((m, i) => (
                  <figure key={m.id}><img src={client.mediaUrl(m.id)} alt={`image ${i + 1}`} /><figcaption>image {i + 1} · {m.width}×{m.height}</figcaption></figure>
                ))}
              </div>
            ) : null}
          </div>
          {raw && t ? (
            <div className="card">
              <h3>Prompt</h3>
              <pre className="turn-text raw" data-testid="raw-prompt">{`${t.system ?? ''}\n\n${t.userText ?? sample.question}`}</pre>
            </div>
          ) : null}
          {t ? (
            raw ? <TurnList trajectory={t} raw /> : <TrajectoryView trajectory={t} mediaUrl={(id) => client.mediaUrl(id)} testId="sample-trajectory" {...(sample.source !== undefined ? { noImage: IMPORTED_NO_IMAGE } : {})} />
          ) : (
            <div className="card"><pre className="turn-text">{sample.prediction}</pre></div>
          )}
        </>
      ) : !error ? <div className="muted">Loading…</div> : null}
    </section>
  );
}

import { useEffect, useState } from 'react';
import type { Paired } from '../../../app/contract';
import { getClient } from '../client';
import { useAppStore } from '../stores/useAppStore';
import { pct } from '../components/browse/format';
import type { SampleRecord } from '../../../app/contract';
import { TrajectoryView } from '../components/trajectory';

/** Paired comparison of two runs on the samples they share: wins, losses, ties and McNemar's p. */
export function ComparePage({ a, b }: { a: string; b: string }) {
  const navigate = useAppStore((s) => s.navigate);
  const [res, setRes] = useState<Paired | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const [pair, setPair] = useState<[SampleRecord | null, SampleRecord | null]>([null, null]);
  useEffect(() => {
    if (!picked) return;
    const qid = picked.slice(picked.indexOf('/') + 1);
    const get = (run: string) => getClient().call('samples:get', { runId: run, qid }).catch(() => null);
    void Promise.all([get(a), get(b)]).then((p) => setPair(p));
  }, [picked, a, b]);
  useEffect(() => {
    getClient().call('runs:compare', { a, b }).then(setRes, (e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  }, [a, b]);
  const client = getClient();
  return (
    <section className="page" data-testid="compare-page">
      <header className="page-header">
        <div>
          <button type="button" className="btn" onClick={() => navigate('runs')}>← Runs</button>
          <h1 className="inline">Compare</h1>
          <p className="muted">A = {a} · B = {b}</p>
        </div>
      </header>
      {error ? <div className="banner banner-error">{error}</div> : null}
      {res ? (
        <>
          <div className="card">
            <p className="big-number small" data-testid="compare-summary">{res.summary}</p>
            <dl className="kv">
              <dt>Shared samples</dt><dd>{res.shared} <span className="muted">(only A: {res.onlyA}, only B: {res.onlyB})</span></dd>
              <dt>Accuracy</dt><dd>A {pct(res.accuracyA)} · B {pct(res.accuracyB)} · Δ {pct(res.delta.value)} <span className="muted">[{pct(res.delta.lo)}, {pct(res.delta.hi)}]</span></dd>
              <dt>McNemar (exact)</dt><dd data-testid="mcnemar-p">p = {res.p === null ? '—' : res.p.toPrecision(3)}</dd>
            </dl>
          </div>
          <div className="compare-cols">
            <div className="card">
              <h3>A better ({res.aBetter})</h3>
              <ul className="keylist">{res.aBetterKeys.map((k) => <li key={k}><button type="button" className={picked === k ? 'linkish strong' : 'linkish'} onClick={() => setPicked(k)} data-testid="compare-key">{k}</button></li>)}</ul>
            </div>
            <div className="card">
              <h3>B better ({res.bBetter})</h3>
              <ul className="keylist">{res.bBetterKeys.map((k) => <li key={k}><button type="button" className={picked === k ? 'linkish strong' : 'linkish'} onClick={() => setPicked(k)} data-testid="compare-key">{k}</button></li>)}</ul>
            </div>
          </div>
          {picked ? (
            <div className="compare-cols" data-testid="compare-side-by-side">
              {([a, b] as const).map((run, i) => {
                const rec = pair[i];
                return (
                  <div key={run} className="card">
                    <h3>{i === 0 ? 'A' : 'B'} · {picked} {rec ? (rec.correct ? <span className="pill ok">correct</span> : <span className="pill bad">wrong</span>) : null}</h3>
                    {rec ? (
                      <>
                        <p className="muted small">extracted <code>{JSON.stringify(rec.extracted ?? null)}</code> · truth <code>{JSON.stringify(rec.answer)}</code> · {rec.calls} call(s) · {rec.stop_reason}</p>
                        {rec.trajectory ? <TrajectoryView trajectory={rec.trajectory} mediaUrl={(id) => client.mediaUrl(id)} keyboard={false} testId={`compare-traj-${i}`} {...(rec.source !== undefined ? { noImage: 'Image not in the file; attach a folder (Runs page → Locate images…).' } : {})} /> : <pre className="turn-text">{rec.prediction}</pre>}
                      </>
                    ) : (
                      <p className="muted">Not in this run.</p>
                    )}
                  </div>
                );
              })}
            </div>
          ) : (
            <p className="muted">Pick a sample above to see both trajectories side by side.</p>
          )}
        </>
      ) : null}
    </section>
  );
}

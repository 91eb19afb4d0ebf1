import { useEffect, useState } from 'react';
import type { Paired } from '../../../app/contract';
import { getClient } from '../client';
import { useAppStore } from '../stores/useAppStore';
import { ci, INTERVAL_NAME, pct } from '../components/browse/format';
import { useRunsStore } from '../stores/useRunsStore';
import type { SampleRecord } from '../../../app/contract';
import { TrajectoryView } from '../components/trajectory';

/**
 * Paired comparison of two runs on the samples they share: wins, losses, ties and McNemar's p. `pick` (a
 * `bench/qid` key) opens that sample's two trajectories at once: the Demo's side by side opens its pair so.
 */
export function ComparePage({ a, b, pick }: { a: string; b: string; pick?: string }) {
  const navigate = useAppStore((s) => s.navigate);
  const [res, setRes] = useState<Paired | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string | null>(pick ?? null);
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
  const runs = useRunsStore((s) => s.runs);
  const loadRuns = useRunsStore((s) => s.load);
  // Opened straight from the Demo (a saved pair), the run list may not be loaded yet: the names come from it.
  const known = runs.some((r) => r.id === a) && runs.some((r) => r.id === b);
  useEffect(() => {
    if (!known) void loadRuns();
  }, [known, loadRuns]);
  const nameOf = (id: string) => runs.find((r) => r.id === id)?.manifest?.name ?? id;
  const signed = (x: number | null) => (x === null ? '—' : `${x > 0 ? '+' : x < 0 ? '−' : '±'}${Math.abs(100 * x).toFixed(1)}`);
  return (
    <section className="page" data-testid="compare-page">
      <header className="page-header">
        <div>
          <button type="button" className="btn" onClick={() => navigate('runs')}>← Runs</button>
          <h1 className="inline">Compare</h1>
          <p className="muted" data-testid="compare-names"><span title={a}>A = {nameOf(a)}</span> · <span title={b}>B = {nameOf(b)}</span></p>
        </div>
      </header>
      {error ? <div className="banner banner-error">{error}</div> : null}
      {res ? (
        <>
          <div className="card">
            <p className="big-number small" data-testid="compare-summary">{res.summary}</p>
            <dl className="kv">
              <dt>Shared samples</dt><dd>{res.shared} <span className="muted">(only A: {res.onlyA}, only B: {res.onlyB})</span></dd>
              <dt>Accuracy</dt><dd>A {pct(res.accuracyA)} · B {pct(res.accuracyB)} · Δ {signed(res.delta.value)} points <span className="muted" title="Newcombe's paired Wilson score interval">{ci(res.delta.lo, res.delta.hi)}</span></dd>
              <dt>McNemar (exact)</dt><dd data-testid="mcnemar-p">p = {res.p === null ? '—' : res.p.toPrecision(3)}</dd>
            </dl>
          </div>
          <div className="card" data-testid="compare-categories">
            <h3>Per category <span className="muted small">(shared samples; A and B: {INTERVAL_NAME}; Δ = B − A in points: Newcombe's paired Wilson interval)</span></h3>
            <div className="stats-scroll">
              <table className="table compact compare-cat-table">
                <thead>
                  <tr><th>Benchmark / category</th><th className="num">n</th><th className="num">Acc. A</th><th className="num">95 % CI</th><th className="num">Acc. B</th><th className="num">95 % CI</th><th className="num">Δ</th><th className="num">95 % CI of Δ</th><th className="num" title="A better / B better">A / B better</th><th className="num" title="exact McNemar">p</th></tr>
                </thead>
                <tbody>
                  {res.byCategory.map((g) => (
                    <tr key={`${g.bench}/${g.category ?? ''}`} data-testid="compare-category-row">
                      <td>{g.bench}{g.category ? <span className="muted"> / </span> : null}{g.category ?? ''}</td>
                      <td className="num">{g.n}</td>
                      <td className="num">{pct(g.accuracyA)}</td>
                      <td className="num muted">{ci(g.ciA.lo, g.ciA.hi)}</td>
                      <td className="num">{pct(g.accuracyB)}</td>
                      <td className="num muted">{ci(g.ciB.lo, g.ciB.hi)}</td>
                      <td className={`num strong ${g.delta.lo !== null && g.delta.lo > 0 ? 'delta-up' : g.delta.hi !== null && g.delta.hi < 0 ? 'delta-down' : ''}`}>{signed(g.delta.value)}</td>
                      <td className="num muted">{ci(g.delta.lo, g.delta.hi)}</td>
                      <td className="num">{g.aBetter} / {g.bBetter}</td>
                      <td className="num muted">{g.p === null ? '—' : g.p.toPrecision(2)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
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
                    <h3>{i === 0 ? 'A' : 'B'} · {picked} {rec ? (rec.answer === null || rec.answer === undefined ? <span className="pill" title="this sample has no answer key (a Demo question), so it is not scored">unscored</span> : rec.correct ? <span className="pill ok">correct</span> : <span className="pill bad">wrong</span>) : null}</h3>
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

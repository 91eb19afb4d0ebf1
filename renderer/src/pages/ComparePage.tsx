import { useEffect, useState } from 'react';
import type { Paired } from '../../../app/contract';
import { getClient } from '../client';
import { useAppStore } from '../stores/useAppStore';
import { pct } from '../components/browse/format';

/** Paired comparison of two runs on the samples they share: wins, losses, ties and McNemar's p. */
export function ComparePage({ a, b }: { a: string; b: string }) {
  const navigate = useAppStore((s) => s.navigate);
  const [res, setRes] = useState<Paired | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getClient().call('runs:compare', { a, b }).then(setRes, (e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  }, [a, b]);
  const open = (runId: string, key: string) => navigate('runs', runId, key.slice(key.indexOf('/') + 1));
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
              <ul className="keylist">{res.aBetterKeys.map((k) => <li key={k}><button type="button" className="linkish" onClick={() => open(a, k)}>{k}</button> <button type="button" className="linkish muted" onClick={() => open(b, k)}>(B)</button></li>)}</ul>
            </div>
            <div className="card">
              <h3>B better ({res.bBetter})</h3>
              <ul className="keylist">{res.bBetterKeys.map((k) => <li key={k}><button type="button" className="linkish" onClick={() => open(b, k)}>{k}</button> <button type="button" className="linkish muted" onClick={() => open(a, k)}>(A)</button></li>)}</ul>
            </div>
          </div>
        </>
      ) : null}
    </section>
  );
}

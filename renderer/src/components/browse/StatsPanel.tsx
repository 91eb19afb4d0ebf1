import { Fragment } from 'react';
import { useRunsStore } from '../../stores/useRunsStore';
import { ci, num, pct } from './format';

/** Accuracy with bootstrap 95 % CIs per benchmark and category, and tool-use statistics. Click a row to filter to it. */
export function StatsPanel() {
  const stats = useRunsStore((s) => s.stats);
  const setQuery = useRunsStore((s) => s.setQuery);
  if (!stats) return null;
  const quote = (v: string) => (/^[\w.-]+$/.test(v) ? v : JSON.stringify(v));
  return (
    <div className="stats-grid" data-testid="stats-panel">
      <div className="card">
        <h3>Accuracy <span className="muted">(95 % bootstrap CI)</span></h3>
        <div className="big-number" data-testid="overall-accuracy">{pct(stats.overall.accuracy)} <span className="muted small">{ci(stats.overall.ci.lo, stats.overall.ci.hi)} · n = {stats.overall.n}</span></div>
        <div className="stats-scroll"><table className="table compact">
          <thead><tr><th>Benchmark / category</th><th className="num">n</th><th className="num">Acc.</th><th className="num">95 % CI</th><th className="num">RaPR</th></tr></thead>
          <tbody>
            {stats.byBench.map((g) => (
              <Fragment key={`b-${g.key.bench}`}>
                <tr className="clickable strong" onClick={() => setQuery(`bench = ${quote(g.key.bench ?? '')}`)}>
                  <td>{g.key.bench}</td><td className="num">{g.n}</td><td className="num">{pct(g.accuracy)}</td><td className="num muted">{ci(g.ci.lo, g.ci.hi)}</td><td className="num">{pct(g.rapr, 0)}</td>
                </tr>
                {stats.byCategory.filter((c) => c.key.bench === g.key.bench && c.key.category).map((c) => (
                  <tr key={`c-${c.key.bench}-${c.key.category}`} className="clickable" onClick={() => setQuery(`bench = ${quote(c.key.bench ?? '')} and category = ${quote(c.key.category ?? '')}`)}>
                    <td className="indent">{c.key.category}</td><td className="num">{c.n}</td><td className="num">{pct(c.accuracy)}</td><td className="num muted">{ci(c.ci.lo, c.ci.hi)}</td><td className="num">{pct(c.rapr, 0)}</td>
                  </tr>
                ))}
              </Fragment>
            ))}
          </tbody>
        </table></div>
      </div>
      <div className="card">
        <h3>Tool use</h3>
        <dl className="kv">
          <dt>RaPR</dt><dd data-testid="rapr">{pct(stats.toolUse.rapr)}</dd>
          <dt>Calls / sample</dt><dd>{num(stats.toolUse.callsPerSample)}</dd>
          <dt>Tool error rate</dt><dd>{pct(stats.toolUse.toolErrorRate)}</dd>
          <dt>With tools</dt><dd className="clickable" onClick={() => setQuery('calls > 0')}>{pct(stats.withTool.accuracy)} <span className="muted small">n = {stats.withTool.n} {ci(stats.withTool.ci.lo, stats.withTool.ci.hi)}</span></dd>
          <dt>Without tools</dt><dd className="clickable" onClick={() => setQuery('calls = 0')}>{pct(stats.withoutTool.accuracy)} <span className="muted small">n = {stats.withoutTool.n} {ci(stats.withoutTool.ci.lo, stats.withoutTool.ci.hi)}</span></dd>
        </dl>
        <h4>Stop reasons</h4>
        <div className="chips">
          {Object.entries(stats.toolUse.stopReasons).sort((a, b) => b[1] - a[1]).map(([k, v]) => (
            <button key={k} type="button" className="chip" onClick={() => setQuery(`stop = ${k}`)}>{k} <b>{v}</b></button>
          ))}
        </div>
        <h4>Calls per sample</h4>
        <div className="histogram">
          {stats.toolUse.callHistogram.map((v, i) => {
            const max = Math.max(1, ...stats.toolUse.callHistogram);
            return (
              <div key={i} className="hist-col" title={`${i === 4 ? '≥ 4' : i} calls: ${v}`}>
                <div className="hist-bar" style={{ height: `${(60 * v) / max}px` }} />
                <span>{i === 4 ? '4+' : i}</span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

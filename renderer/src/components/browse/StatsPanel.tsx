import { Fragment } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { RunStats } from '../../../../app/contract';
import { useRunsStore } from '../../stores/useRunsStore';
import { ci, INTERVAL_NAME, num, pct } from './format';

/**
 * Statistics per selected run (never a silent pool of different runs: ticking vcot and notool shows both side by
 * side); "Pool" is an explicit choice for runs that are parts of one evaluation.
 */
export function StatsPanel() {
  const entries = useRunsStore(useShallow((s) => s.stats ?? []));
  const selected = useRunsStore((s) => s.selected.length);
  const pool = useRunsStore((s) => s.pool);
  const setPool = useRunsStore((s) => s.setPool);
  if (!entries.length) return null;
  return (
    <div className="stats-runs" data-testid="stats-runs">
      {selected > 1 ? (
        <label className="stats-pool muted" title="Count the selected runs' samples as one set (for shards or parts of one evaluation, not for different models or prompts)">
          <input type="checkbox" checked={pool} onChange={(e) => setPool(e.target.checked)} data-testid="stats-pool" /> Pool the {selected} selected runs into one set of numbers
        </label>
      ) : null}
      {entries.map((e) => (
        <RunStatsView key={e.runId} label={e.label} graded={e.graded} stats={e.stats} titled={entries.length > 1 || pool} />
      ))}
    </div>
  );
}

/** Accuracy with 95 % Wilson intervals per benchmark and category, and tool-use statistics. Click a row to filter to it. */
function RunStatsView({ label, graded, stats, titled }: { label: string; graded: boolean; stats: RunStats; titled: boolean }) {
  const setQuery = useRunsStore((s) => s.setQuery);
  const quote = (v: string) => (/^[\w.-]+$/.test(v) ? v : JSON.stringify(v));
  // Without ground truth there is no accuracy: "—", not a misleading 0.0 %.
  const acc = (x: number | null) => (graded ? pct(x) : '—');
  const interval = (lo: number | null, hi: number | null) => (graded ? ci(lo, hi) : '');
  return (
    <div className="stats-grid" data-testid="stats-panel" data-run={label}>
      {titled ? <h3 className="stats-run-title" data-testid="stats-run-title">{label}</h3> : null}
      <div className="card">
        <h3>Accuracy <span className="muted">({INTERVAL_NAME})</span></h3>
        <div className="big-number" data-testid="overall-accuracy">{acc(stats.overall.accuracy)} <span className="muted small">{interval(stats.overall.ci.lo, stats.overall.ci.hi)} · n = {stats.overall.n}{graded ? '' : ' · no ground truth'}</span></div>
        <div className="stats-scroll"><table className="table compact">
          <thead><tr><th>Benchmark / category</th><th className="num">n</th><th className="num">Acc.</th><th className="num" title={INTERVAL_NAME}>95 % CI</th><th className="num">RaPR</th></tr></thead>
          <tbody>
            {stats.byBench.map((g) => (
              <Fragment key={`b-${g.key.bench}`}>
                <tr className="clickable strong" onClick={() => setQuery(`bench = ${quote(g.key.bench ?? '')}`)}>
                  <td>{g.key.bench}</td><td className="num">{g.n}</td><td className="num">{acc(g.accuracy)}</td><td className="num muted">{interval(g.ci.lo, g.ci.hi)}</td><td className="num">{pct(g.rapr, 0)}</td>
                </tr>
                {stats.byCategory.filter((c) => c.key.bench === g.key.bench && c.key.category).map((c) => (
                  <tr key={`c-${c.key.bench}-${c.key.category}`} className="clickable" onClick={() => setQuery(`bench = ${quote(c.key.bench ?? '')} and category = ${quote(c.key.category ?? '')}`)}>
                    <td className="indent">{c.key.category}</td><td className="num">{c.n}</td><td className="num">{acc(c.accuracy)}</td><td className="num muted">{interval(c.ci.lo, c.ci.hi)}</td><td className="num">{pct(c.rapr, 0)}</td>
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
          <dt>With tools</dt><dd className="clickable" onClick={() => setQuery('calls > 0')}>{acc(stats.withTool.accuracy)} <span className="muted small">n = {stats.withTool.n} {interval(stats.withTool.ci.lo, stats.withTool.ci.hi)}</span></dd>
          <dt>Without tools</dt><dd className="clickable" onClick={() => setQuery('calls = 0')}>{acc(stats.withoutTool.accuracy)} <span className="muted small">n = {stats.withoutTool.n} {interval(stats.withoutTool.ci.lo, stats.withoutTool.ci.hi)}</span></dd>
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

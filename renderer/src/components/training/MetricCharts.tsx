import { useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore, type SeriesMap } from '../../stores/useTrainingStore';
import { headlineKeys } from './ema';
import { MetricChart } from './MetricChart';

const EMPTY: SeriesMap = {};

/** Charts for the metrics the parser found: headline ones first, any other on request; EMA and a pinned baseline. */
export function MetricCharts() {
  const viewKey = useTrainingStore((s) => s.view?.key ?? null);
  const series = useTrainingStore((s) => s.view?.series ?? EMPTY);
  const baseline = useTrainingStore((s) => s.baseline);
  const smoothing = useTrainingStore((s) => s.smoothing);
  const setSmoothing = useTrainingStore((s) => s.setSmoothing);
  const pin = useTrainingStore((s) => s.pinBaseline);
  const others = useTrainingStore(useShallow((s) => s.jobs.filter((j) => j.key !== viewKey).map((j) => `${j.key}\t${j.name}`)));
  const keys = useMemo(() => Object.keys(series).sort(), [series]);
  const [chosen, setChosen] = useState<string[] | null>(null);
  useEffect(() => setChosen(null), [viewKey]);
  const shown = chosen ?? headlineKeys(keys);
  return (
    <div className="tr-metrics">
      <div className="tr-row tr-small">
        <label>
          smoothing <input type="range" min={0} max={0.95} step={0.05} value={smoothing} data-testid="smoothing" onChange={(e) => setSmoothing(Number(e.target.value))} /> {smoothing.toFixed(2)}
        </label>
        <span className="grow" />
        <label htmlFor="tr-baseline">baseline</label>
        <select id="tr-baseline" className="input tr-baseline" data-testid="baseline-select" value={baseline?.key ?? ''} onChange={(e) => void pin(e.target.value || null)}>
          <option value="">none</option>
          {others.map((o) => {
            const [k, n] = o.split('\t');
            return (
              <option key={k} value={k}>{n} · {k}</option>
            );
          })}
        </select>
      </div>
      {keys.length ? (
        <details className="tr-keys">
          <summary className="tr-small muted">{keys.length} metrics found · {shown.length} charted</summary>
          <div className="chips">
            {keys.map((k) => (
              <button key={k} type="button" className={`chip${shown.includes(k) ? ' active' : ''}`} onClick={() => setChosen(shown.includes(k) ? shown.filter((x) => x !== k) : [...shown, k])}>
                {k}
              </button>
            ))}
          </div>
        </details>
      ) : (
        <p className="muted tr-small" data-testid="no-metrics">No metric lines parsed yet (verl console/JSONL, OpenRLHF and ms-swift formats are recognised).</p>
      )}
      <div className="tr-charts">
        {shown.map((k) => (
          <MetricChart key={k} name={k} series={series[k]} baseline={baseline?.series[k]} smoothing={smoothing} />
        ))}
      </div>
      {shown.length ? (
        <p className="muted tr-small tr-legend">
          <span className="tr-key tr-key-line" /> this job{smoothing > 0 ? ' (EMA)' : ''}
          {smoothing > 0 ? (
            <>
              <span className="tr-key tr-key-raw" /> raw
            </>
          ) : null}
          {baseline ? (
            <>
              <span className="tr-key tr-key-base" /> baseline {baseline.label} (EMA)
            </>
          ) : null}
        </p>
      ) : null}
    </div>
  );
}

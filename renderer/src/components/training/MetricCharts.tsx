import { useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore, type SeriesMap } from '../../stores/useTrainingStore';
import { headlineKeys } from './ema';
import { MetricChart, OVERLAY_COLORS, type Overlay } from './MetricChart';

const EMPTY: SeriesMap = {};

/** Charts for the metrics the parser found: headline ones first, any other on request; EMA and other jobs overlaid. */
export function MetricCharts() {
  const viewKey = useTrainingStore((s) => s.view?.key ?? null);
  const series = useTrainingStore((s) => s.view?.series ?? EMPTY);
  const overlays = useTrainingStore((s) => s.overlays);
  const smoothing = useTrainingStore((s) => s.smoothing);
  const setSmoothing = useTrainingStore((s) => s.setSmoothing);
  const addOverlay = useTrainingStore((s) => s.addOverlay);
  const removeOverlay = useTrainingStore((s) => s.removeOverlay);
  const others = useTrainingStore(useShallow((s) => s.jobs.filter((j) => j.key !== viewKey && !s.overlays.some((o) => o.key === j.key)).map((j) => `${j.key}\t${j.name}`)));
  const keys = useMemo(() => Object.keys(series).sort(), [series]);
  const [chosen, setChosen] = useState<string[] | null>(null);
  useEffect(() => setChosen(null), [viewKey]);
  const shown = chosen ?? headlineKeys(keys);
  // The open job is never drawn over itself.
  const drawn = overlays.filter((o) => o.key !== viewKey);
  const colorOf = (key: string) => OVERLAY_COLORS[overlays.findIndex((o) => o.key === key) % OVERLAY_COLORS.length]!;
  return (
    <div className="tr-metrics">
      <div className="tr-row tr-small">
        <label>
          smoothing <input type="range" min={0} max={0.95} step={0.05} value={smoothing} data-testid="smoothing" onChange={(e) => setSmoothing(Number(e.target.value))} /> {smoothing.toFixed(2)}
        </label>
        <span className="grow" />
        <label htmlFor="tr-baseline">overlay</label>
        <select id="tr-baseline" className="input tr-baseline" data-testid="baseline-select" value="" onChange={(e) => e.target.value && void addOverlay(e.target.value)} title="Draw another job's metrics over this job's charts (several can be added)">
          <option value="">add a job…</option>
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
      {shown.length ? (
        <p className="muted tr-small tr-legend" data-testid="chart-legend">
          <span className="tr-key tr-key-line" /> this job{smoothing > 0 ? ' (EMA)' : ''}
          {smoothing > 0 ? (
            <>
              <span className="tr-key tr-key-raw" /> raw
            </>
          ) : null}
          {drawn.map((o) => (
            <span key={o.key} className="tr-overlay-chip" data-testid="overlay-chip">
              <span className="tr-key tr-key-base" style={{ borderTopColor: colorOf(o.key) }} /> {o.label}{smoothing > 0 ? ' (EMA)' : ''}{' '}
              <button type="button" className="linkish" aria-label={`remove overlay ${o.label}`} onClick={() => removeOverlay(o.key)}>×</button>
            </span>
          ))}
        </p>
      ) : null}
      <div className="tr-charts">
        {shown.map((k) => (
          <MetricChart key={k} name={k} series={series[k]} overlays={drawn.map((o): Overlay => ({ key: o.key, label: o.label, series: o.series[k], color: colorOf(o.key) }))} smoothing={smoothing} />
        ))}
      </div>
    </div>
  );
}

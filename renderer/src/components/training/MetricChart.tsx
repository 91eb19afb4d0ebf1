import { useMemo } from 'react';
import type { Series } from '../../stores/useTrainingStore';
import { axisValue, ema, formatValue } from './ema';

const W = 260;
const H = 150;
const PAD = { l: 50, r: 8, t: 12, b: 22 };

type Pt = [number, number];

function path(points: readonly Pt[], x: (s: number) => number, y: (v: number) => number): string {
  let d = '';
  let pen = false;
  for (const [s, v] of points) {
    if (!Number.isFinite(v)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${x(s).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
  }
  return d;
}

const pts = (steps: readonly number[], values: ReadonlyArray<number | null>): Pt[] => steps.map((s, i) => [s, values[i] ?? Number.NaN]);

/** One metric as an SVG line chart: raw (faint), EMA-smoothed (solid) and an optional pinned baseline (dashed). */
export function MetricChart({ name, series, baseline, smoothing }: { name: string; series: Series | undefined; baseline: Series | undefined; smoothing: number }) {
  const model = useMemo(() => {
    const raw = series ? pts(series.steps, series.values) : [];
    const smooth = series ? pts(series.steps, ema(series.values, smoothing)) : [];
    const base = baseline ? pts(baseline.steps, ema(baseline.values, smoothing)) : [];
    const all = [...raw, ...base].filter(([, v]) => Number.isFinite(v));
    if (!all.length) return null;
    let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
    let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
    if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
    if (y0 === y1) [y0, y1] = [y0 - Math.abs(y0 || 1) * 0.1, y1 + Math.abs(y1 || 1) * 0.1];
    const pad = (y1 - y0) * 0.06;
    y0 -= pad;
    y1 += pad;
    const x = (s: number): number => PAD.l + ((s - x0) / (x1 - x0)) * (W - PAD.l - PAD.r);
    const y = (v: number): number => H - PAD.b - ((v - y0) / (y1 - y0)) * (H - PAD.t - PAD.b);
    const lastRaw = [...raw].reverse().find(([, v]) => Number.isFinite(v));
    return { raw: path(raw, x, y), smooth: path(smooth, x, y), base: path(base, x, y), x0, x1, y0, y1, n: raw.filter(([, v]) => Number.isFinite(v)).length, last: lastRaw?.[1] ?? null, lastStep: lastRaw?.[0] ?? null };
  }, [series, baseline, smoothing]);

  return (
    <figure className="tr-chart" data-testid="metric-chart" data-metric={name} data-points={model?.n ?? 0} data-baseline={baseline ? baseline.steps.length : 0}>
      <figcaption>
        <span className="tr-chart-name" title={name}>{name}</span>
        <span className="muted">{model ? `${formatValue(model.last)} @ ${model.lastStep}` : 'no data'}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${name} over steps`}>
        <rect x={PAD.l} y={PAD.t} width={W - PAD.l - PAD.r} height={H - PAD.t - PAD.b} className="tr-plot" />
        {model ? (
          <>
            <text x={PAD.l - 4} y={PAD.t + 8} className="tr-axis" textAnchor="end">{axisValue(model.y1)}</text>
            <text x={PAD.l - 4} y={H - PAD.b} className="tr-axis" textAnchor="end">{axisValue(model.y0)}</text>
            <text x={PAD.l} y={H - 8} className="tr-axis">{model.x0}</text>
            <text x={W - PAD.r} y={H - 8} className="tr-axis" textAnchor="end">step {model.x1}</text>
            {model.base ? <path d={model.base} className="tr-line-base" data-testid="baseline-line" /> : null}
            {smoothing > 0 ? <path d={model.raw} className="tr-line-raw" /> : null}
            <path d={smoothing > 0 ? model.smooth : model.raw} className="tr-line" data-testid="metric-line" />
          </>
        ) : null}
      </svg>
    </figure>
  );
}

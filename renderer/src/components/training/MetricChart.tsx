import { useMemo, useRef, useState } from 'react';
import type { Series } from '../../stores/useTrainingStore';
import { axisValue, ema, formatValue, niceTicks } from './ema';

const W = 560;
const H = 280;
const PAD = { l: 58, r: 14, t: 14, b: 34 };

type Pt = [number, number];

/** Colours of overlaid runs, in the order they were added (the open job keeps the theme's line colour). */
export const OVERLAY_COLORS = ['#c2410c', '#15803d', '#7c3aed', '#be185d', '#0e7490', '#a16207'];

/** A job drawn over the open one's chart. */
export interface Overlay {
  key: string;
  label: string;
  series: Series | undefined;
  color: string;
}

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

/** The point of `points` nearest to step `s` (finite values only), or null. */
function nearest(points: readonly Pt[], s: number): Pt | null {
  let best: Pt | null = null;
  for (const p of points) if (Number.isFinite(p[1]) && (!best || Math.abs(p[0] - s) < Math.abs(best[0] - s))) best = p;
  return best;
}

/**
 * One metric as an SVG line chart: axes with ticks and a grid, the open job raw (faint) and EMA-smoothed (solid),
 * other jobs overlaid in their own colours, and the values under the pointer on hover.
 */
export function MetricChart({ name, series, overlays, smoothing, label = 'this job' }: { name: string; series: Series | undefined; overlays: readonly Overlay[]; smoothing: number; label?: string }) {
  const svgRef = useRef<SVGSVGElement>(null);
  const [hoverStep, setHoverStep] = useState<number | null>(null);
  const model = useMemo(() => {
    const raw = series ? pts(series.steps, series.values) : [];
    const smooth = series ? pts(series.steps, ema(series.values, smoothing)) : [];
    const over = overlays.map((o) => ({ ...o, points: o.series ? pts(o.series.steps, ema(o.series.values, smoothing)) : [] }));
    const all = [...raw, ...over.flatMap((o) => o.points)].filter(([, v]) => Number.isFinite(v));
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
    return {
      raw,
      smooth,
      over,
      rawPath: path(raw, x, y),
      smoothPath: path(smooth, x, y),
      overPaths: over.map((o) => path(o.points, x, y)),
      x,
      y,
      x0,
      x1,
      xTicks: niceTicks(x0, x1, 6, true),
      yTicks: niceTicks(y0, y1, 5),
      n: raw.filter(([, v]) => Number.isFinite(v)).length,
      last: lastRaw?.[1] ?? null,
      lastStep: lastRaw?.[0] ?? null,
    };
  }, [series, overlays, smoothing]);

  const onMove = (e: React.MouseEvent<SVGSVGElement>) => {
    const svg = svgRef.current;
    if (!svg || !model) return;
    const r = svg.getBoundingClientRect();
    const vx = ((e.clientX - r.left) / r.width) * W;
    if (vx < PAD.l || vx > W - PAD.r) return setHoverStep(null);
    setHoverStep(model.x0 + ((vx - PAD.l) / (W - PAD.l - PAD.r)) * (model.x1 - model.x0));
  };

  // What the pointer is over: each series' point nearest to that step.
  const hover = model && hoverStep !== null
    ? [
        { label, color: 'var(--tr-line)', p: nearest(smoothing > 0 ? model.smooth : model.raw, hoverStep) },
        ...model.over.map((o) => ({ label: o.label, color: o.color, p: nearest(o.points, hoverStep) })),
      ].filter((h): h is { label: string; color: string; p: Pt } => h.p !== null)
    : [];
  const hx = hover[0] ? model!.x(hover[0].p[0]) : null;

  return (
    <figure className="tr-chart" data-testid="metric-chart" data-metric={name} data-points={model?.n ?? 0} data-baseline={overlays.reduce((n, o) => n + (o.series?.steps.length ?? 0), 0)} data-overlays={overlays.length}>
      <figcaption>
        <span className="tr-chart-name" title={name}>{name}</span>
        <span className="muted">{model ? `${formatValue(model.last)} @ ${model.lastStep}` : 'no data'}</span>
      </figcaption>
      <div className="tr-chart-area">
        <svg ref={svgRef} viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${name} over steps`} onMouseMove={onMove} onMouseLeave={() => setHoverStep(null)} data-testid="chart-svg">
          <rect x={PAD.l} y={PAD.t} width={W - PAD.l - PAD.r} height={H - PAD.t - PAD.b} className="tr-plot" />
          {model ? (
            <>
              {model.yTicks.map((v) => (
                <g key={`y${v}`} data-testid="y-tick">
                  <line x1={PAD.l} x2={W - PAD.r} y1={model.y(v)} y2={model.y(v)} className="tr-grid" />
                  <text x={PAD.l - 6} y={model.y(v) + 4} className="tr-axis" textAnchor="end">{axisValue(v)}</text>
                </g>
              ))}
              {model.xTicks.map((s) => (
                <g key={`x${s}`} data-testid="x-tick">
                  <line x1={model.x(s)} x2={model.x(s)} y1={PAD.t} y2={H - PAD.b} className="tr-grid" />
                  <line x1={model.x(s)} x2={model.x(s)} y1={H - PAD.b} y2={H - PAD.b + 4} className="tr-tick" />
                  <text x={model.x(s)} y={H - PAD.b + 16} className="tr-axis" textAnchor="middle">{s}</text>
                </g>
              ))}
              <text x={(PAD.l + W - PAD.r) / 2} y={H - 3} className="tr-axis" textAnchor="middle">step</text>
              {model.overPaths.map((d, i) => (d ? <path key={model.over[i]!.key} d={d} className="tr-line-base" style={{ stroke: model.over[i]!.color }} data-testid="baseline-line" /> : null))}
              {smoothing > 0 ? <path d={model.rawPath} className="tr-line-raw" /> : null}
              <path d={smoothing > 0 ? model.smoothPath : model.rawPath} className="tr-line" data-testid="metric-line" />
              {hx !== null ? (
                <>
                  <line x1={hx} x2={hx} y1={PAD.t} y2={H - PAD.b} className="tr-hover-line" />
                  {hover.map((h) => <circle key={h.label} cx={model.x(h.p[0])} cy={model.y(h.p[1])} r={3.5} style={{ fill: h.color }} />)}
                </>
              ) : null}
            </>
          ) : null}
        </svg>
        {hover.length && hx !== null ? (
          <div className="tr-tooltip" data-testid="chart-hover" style={{ left: `${(100 * hx) / W}%`, transform: hx > W / 2 ? 'translateX(calc(-100% - 8px))' : 'translateX(8px)' }}>
            <div className="strong">step {hover[0]!.p[0]}</div>
            {hover.map((h) => (
              <div key={h.label} className="tr-tooltip-row">
                <span className="tr-swatch" style={{ background: h.color }} /> <span className="ellipsis">{h.label}</span> <b>{formatValue(h.p[1])}</b>
                {h.p[0] !== hover[0]!.p[0] ? <span className="muted"> @ {h.p[0]}</span> : null}
              </div>
            ))}
          </div>
        ) : null}
      </div>
    </figure>
  );
}

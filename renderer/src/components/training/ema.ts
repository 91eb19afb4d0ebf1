/**
 * Debiased EMA (TensorBoard-style), the same rule as the core's MetricSeries: non-finite values are carried over,
 * not averaged in. 0 = raw.
 */
export function ema(values: ReadonlyArray<number | null>, smoothing: number): Array<number | null> {
  const out: Array<number | null> = [];
  let acc = 0;
  let n = 0;
  let last: number | null = null;
  for (const v of values) {
    if (v !== null && Number.isFinite(v)) {
      acc = smoothing * acc + (1 - smoothing) * v;
      n += 1;
      last = smoothing === 0 ? v : acc / (1 - smoothing ** n);
    }
    out.push(last);
  }
  return out;
}

/** Metric keys worth charting first: reward/score, accuracy, tool calls, response length, loss. */
const HEADLINE = [/reward|score/i, /acc/i, /tool|call/i, /response_length|completion_length|resp_len/i, /loss/i];

export function headlineKeys(keys: readonly string[], max = 6): string[] {
  const out: string[] = [];
  for (const re of HEADLINE) {
    for (const k of keys) if (re.test(k) && !out.includes(k) && out.length < max) out.push(k);
  }
  return out;
}

export function formatValue(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

/** Short tick label (fits the chart's left margin, sign included). */
export function axisValue(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-2 || a >= 1e4)) return v.toExponential(1);
  return Number(v.toPrecision(3)).toString();
}

/**
 * About `count` evenly spaced "nice" tick values (1, 2, 2.5 or 5 × 10^k apart) covering [lo, hi], for a chart axis.
 * `integer` keeps steps whole (training steps).
 */
export function niceTicks(lo: number, hi: number, count = 5, integer = false): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi < lo) return [];
  if (hi === lo) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const out: number[] = [];
  const first = Math.ceil(lo / step - 1e-9) * step;
  for (let v = first; v <= hi + step * 1e-9 && out.length < 50; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

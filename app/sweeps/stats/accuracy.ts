/**
 * Accuracy with seeded percentile-bootstrap 95 % intervals, grouped tables, and tool-use statistics.
 * Inputs are SampleRecord-like rows, so the same code serves a whole run, a slice or a table cell.
 */
import type { SampleRecord } from '../../contract/trajectory';
import { hashSeed, resampledBinaryMeans, resampledMeans } from './rng';

/** The fields the statistics read. */
export type StatRow = Pick<SampleRecord, 'qid' | 'bench' | 'correct' | 'score' | 'calls' | 'tool_errors' | 'stop_reason'> & { category?: string | undefined };

export interface BootstrapOptions {
  /** Resamples (default 1000). */
  resamples?: number;
  /** PRNG seed (default 0). The same rows and seed always give the same interval. */
  seed?: number;
  /** Confidence level (default 0.95). */
  level?: number;
}

export interface Interval {
  lo: number;
  hi: number;
}

/** Linear-interpolation quantile (type 7) of a sorted array. */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const h = (n - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/**
 * Percentile bootstrap interval of the mean of `values`. With every value equal the interval is that
 * value (degenerate); see `wilson` for a small-sample alternative on 0/1 data.
 */
export function bootstrapMean(values: ArrayLike<number>, opts: BootstrapOptions = {}): Interval & { mean: number } {
  const n = values.length;
  if (n === 0) return { mean: NaN, lo: NaN, hi: NaN };
  const B = opts.resamples ?? 1000;
  const level = opts.level ?? 0.95;
  if (!(B >= 1) || !Number.isInteger(B)) throw new RangeError(`bootstrap: resamples must be a positive integer, got ${B}`);
  if (!(level > 0 && level < 1)) throw new RangeError(`bootstrap: level must be in (0, 1), got ${level}`);
  let total = 0;
  let binary = true;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    total += x;
    if (x !== 0 && x !== 1) binary = false;
  }
  // 0/1 data: the resampled count of ones is exactly Binomial(n, mean), so draw it directly.
  const means = binary ? resampledBinaryMeans(total, n, B, opts.seed ?? 0) : resampledMeans(values, B, opts.seed ?? 0);
  means.sort();
  const a = (1 - level) / 2;
  return { mean: total / n, lo: quantileSorted(means, a), hi: quantileSorted(means, 1 - a) };
}

/** Wilson score interval for k successes out of n. */
export function wilson(k: number, n: number, level = 0.95): Interval {
  if (n === 0) return { lo: NaN, hi: NaN };
  const z = normalQuantile(1 - (1 - level) / 2);
  const p = k / n;
  const den = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / den;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / den;
  return { lo: Math.max(0, centre - half), hi: Math.min(1, centre + half) };
}

/** Inverse standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const pl = 0.02425;
  if (p < pl) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  }
  if (p > 1 - pl) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) / (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
}

export interface AccuracyStat {
  n: number;
  correct: number;
  /** correct / n. */
  accuracy: number;
  /** Seeded percentile-bootstrap interval of the accuracy. */
  ci: Interval;
  /** Wilson score interval (for comparison; better behaved for small n or accuracy near 0 or 1). */
  wilson: Interval;
  /** Mean of `score` (differs from accuracy for partial-credit scorers). */
  meanScore: number;
}

/** Accuracy of `rows` with a bootstrap CI. */
export function accuracy(rows: readonly StatRow[], opts: BootstrapOptions = {}): AccuracyStat {
  const n = rows.length;
  const v = new Float64Array(n);
  let k = 0;
  let score = 0;
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    if (r.correct) {
      v[i] = 1;
      k++;
    }
    score += r.score;
  }
  const bs = bootstrapMean(v, opts);
  return { n, correct: k, accuracy: n ? k / n : NaN, ci: { lo: bs.lo, hi: bs.hi }, wilson: wilson(k, n, opts.level), meanScore: n ? score / n : NaN };
}

export interface ToolUseStats {
  n: number;
  /** Samples with at least one tool call. */
  withCalls: number;
  /** RaPR: rate of samples with ≥ 1 tool call. */
  rapr: number;
  totalCalls: number;
  /** Mean tool calls per sample (all samples). */
  callsPerSample: number;
  /** Mean tool calls among samples that used tools. */
  callsPerToolSample: number;
  toolErrors: number;
  /** Failed calls / all calls (NaN when no calls). */
  toolErrorRate: number;
  /** Samples with at least one failed call. */
  samplesWithToolError: number;
  stopReasons: Record<string, number>;
  /** Samples with 0, 1, 2, 3 and ≥ 4 calls. */
  callHistogram: [number, number, number, number, number];
}

export function toolUse(rows: readonly StatRow[]): ToolUseStats {
  const n = rows.length;
  let withCalls = 0;
  let totalCalls = 0;
  let toolErrors = 0;
  let samplesWithToolError = 0;
  const stopReasons: Record<string, number> = {};
  const hist: [number, number, number, number, number] = [0, 0, 0, 0, 0];
  for (const r of rows) {
    if (r.calls > 0) withCalls++;
    totalCalls += r.calls;
    toolErrors += r.tool_errors;
    if (r.tool_errors > 0) samplesWithToolError++;
    stopReasons[r.stop_reason] = (stopReasons[r.stop_reason] ?? 0) + 1;
    hist[Math.min(4, r.calls) as 0 | 1 | 2 | 3 | 4]++;
  }
  return {
    n,
    withCalls,
    rapr: n ? withCalls / n : NaN,
    totalCalls,
    callsPerSample: n ? totalCalls / n : NaN,
    callsPerToolSample: withCalls ? totalCalls / withCalls : NaN,
    toolErrors,
    toolErrorRate: totalCalls ? toolErrors / totalCalls : NaN,
    samplesWithToolError,
    stopReasons,
    callHistogram: hist,
  };
}

export type GroupKey = 'bench' | 'category' | ((r: StatRow) => string | undefined);

export interface GroupRow extends AccuracyStat {
  /** The group's value per key (null: the rows have no value, e.g. no category). */
  key: Record<string, string | null>;
  rapr: number;
  callsPerSample: number;
  toolErrorRate: number;
}

/**
 * One row per distinct combination of `keys` (e.g. ['bench'] or ['bench', 'category']), sorted by key.
 * Each group's bootstrap seed is derived from the seed and the group's key, so a group's interval does
 * not change when other groups come or go.
 */
const keyCollator = new Intl.Collator('en', { numeric: true });
/** The order of grouped statistics: natural order per key name in turn, a missing value last. */
export function byGroupKeys(names: readonly string[]) {
  return (a: { key: Record<string, string | null> }, b: { key: Record<string, string | null> }): number => {
    for (const nm of names) {
      const x = a.key[nm] ?? null;
      const y = b.key[nm] ?? null;
      if (x === y) continue;
      if (x === null) return 1;
      if (y === null) return -1;
      return keyCollator.compare(x, y);
    }
    return 0;
  };
}

export function accuracyTable(rows: readonly StatRow[], keys: readonly GroupKey[], opts: BootstrapOptions = {}): GroupRow[] {
  const names = keys.map((k, i) => (typeof k === 'string' ? k : `key${i}`));
  const get = keys.map((k) => (typeof k === 'string' ? (r: StatRow) => r[k] : k));
  const groups = new Map<string, { key: Record<string, string | null>; rows: StatRow[] }>();
  for (const r of rows) {
    const vals = get.map((g) => g(r) ?? null);
    // '\u0000' marks a missing value, '\u001f' separates keys (neither appears in ids or categories).
    const id = vals.map((v) => v ?? '\u0000').join('\u001f');
    let g = groups.get(id);
    if (!g) {
      const key: Record<string, string | null> = {};
      names.forEach((nm, i) => (key[nm] = vals[i]!));
      groups.set(id, (g = { key, rows: [] }));
    }
    g.rows.push(r);
  }
  const order = byGroupKeys(names);
  return [...groups.entries()]
    .sort(([, a], [, b]) => order(a, b))
    .map(([id, g]) => {
      const acc = accuracy(g.rows, { ...opts, seed: hashSeed(opts.seed ?? 0, id) });
      const tu = toolUse(g.rows);
      return { key: g.key, ...acc, rapr: tu.rapr, callsPerSample: tu.callsPerSample, toolErrorRate: tu.toolErrorRate };
    });
}

export interface ToolSplit {
  /** Samples with ≥ 1 tool call. */
  withTool: AccuracyStat;
  /** Samples answered without any tool call. */
  withoutTool: AccuracyStat;
  /** withTool.accuracy − withoutTool.accuracy, with a bootstrap CI (each group resampled on its own). */
  difference: Interval & { delta: number };
}

/** Accuracy with vs without tool use. Observational: the model chooses when to zoom, so this is not a causal effect. */
export function accuracyByToolUse(rows: readonly StatRow[], opts: BootstrapOptions = {}): ToolSplit {
  const w = rows.filter((r) => r.calls > 0);
  const wo = rows.filter((r) => r.calls === 0);
  const seed = opts.seed ?? 0;
  const withTool = accuracy(w, { ...opts, seed: hashSeed(seed, 'with') });
  const withoutTool = accuracy(wo, { ...opts, seed: hashSeed(seed, 'without') });
  const delta = withTool.accuracy - withoutTool.accuracy;
  if (!w.length || !wo.length) return { withTool, withoutTool, difference: { delta, lo: NaN, hi: NaN } };
  const B = opts.resamples ?? 1000;
  const level = opts.level ?? 0.95;
  const ma = resampledBinaryMeans(withTool.correct, w.length, B, hashSeed(seed, 'difference-with'));
  const mb = resampledBinaryMeans(withoutTool.correct, wo.length, B, hashSeed(seed, 'difference-without'));
  const diffs = new Float64Array(B);
  for (let i = 0; i < B; i++) diffs[i] = ma[i]! - mb[i]!;
  diffs.sort();
  const q = (1 - level) / 2;
  return { withTool, withoutTool, difference: { delta, lo: quantileSorted(diffs, q), hi: quantileSorted(diffs, 1 - q) } };
}

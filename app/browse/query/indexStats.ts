/**
 * The Runs page's statistics straight from a SampleIndex's columns, in one pass over the matching rows: counts per
 * benchmark and per (benchmark, category) in typed arrays indexed by dictionary codes, no row objects. Gives the
 * same numbers as app/sweeps/stats (accuracy, accuracyTable, toolUse, accuracyByToolUse) with Wilson intervals,
 * which is what the contract's RunStats carries (the bootstrap intervals those functions add are not shown there).
 */
import { byGroupKeys, wilson, type Interval } from '../../sweeps/stats/accuracy';
import type { SampleIndex } from './sampleIndex';

export interface IndexGroupStat {
  key: Record<string, string | null>;
  n: number;
  correct: number;
  accuracy: number;
  wilson: Interval;
  rapr: number;
  callsPerSample: number;
  toolErrorRate: number;
}

export interface IndexStats {
  overall: IndexGroupStat;
  byBench: IndexGroupStat[];
  byCategory: IndexGroupStat[];
  toolUse: { n: number; rapr: number; callsPerSample: number; toolErrorRate: number; stopReasons: Record<string, number>; callHistogram: [number, number, number, number, number] };
  withTool: { n: number; correct: number; accuracy: number; wilson: Interval };
  withoutTool: { n: number; correct: number; accuracy: number; wilson: Interval };
}

/** Per-group sums, one slot per group. */
class Sums {
  n: Float64Array;
  correct: Float64Array;
  withCalls: Float64Array;
  calls: Float64Array;
  errors: Float64Array;
  constructor(size: number) {
    this.n = new Float64Array(size);
    this.correct = new Float64Array(size);
    this.withCalls = new Float64Array(size);
    this.calls = new Float64Array(size);
    this.errors = new Float64Array(size);
  }
  stat(g: number, key: Record<string, string | null>): IndexGroupStat {
    const n = this.n[g]!;
    const k = this.correct[g]!;
    const calls = this.calls[g]!;
    return { key, n, correct: k, accuracy: n ? k / n : NaN, wilson: wilson(k, n), rapr: n ? this.withCalls[g]! / n : NaN, callsPerSample: n ? calls / n : NaN, toolErrorRate: calls ? this.errors[g]! / calls : NaN };
  }
}

/** Statistics of the rows `ids` of `index` (all rows when not given). */
export function indexStats(index: SampleIndex, ids?: ArrayLike<number>): IndexStats {
  const bench = index.dict('bench');
  const category = index.dict('category');
  const stop = index.dict('stop');
  const correct = index.bool('correct');
  const calls = index.num('calls');
  const errors = index.num('tool_errors');
  const nb = bench.values.length + 1; // + a slot for a missing value (code -1)
  const nc = category.values.length + 1;
  const byBench = new Sums(nb);
  const byCat = new Sums(nb * nc);
  const stops = new Float64Array(stop.values.length + 1);
  const hist: [number, number, number, number, number] = [0, 0, 0, 0, 0];
  let withN = 0;
  let withK = 0;
  let withoutN = 0;
  let withoutK = 0;
  const count = ids ? ids.length : index.size;
  for (let j = 0; j < count; j++) {
    const i = ids ? ids[j]! : j;
    const b = bench.codes[i]! + 1;
    const g = b * nc + category.codes[i]! + 1;
    const ok = correct[i]!;
    const c = calls[i]!;
    const e = errors[i]!;
    const used = c > 0 ? 1 : 0;
    byBench.n[b]!++;
    byBench.correct[b]! += ok;
    byBench.withCalls[b]! += used;
    byBench.calls[b]! += c;
    byBench.errors[b]! += e;
    byCat.n[g]!++;
    byCat.correct[g]! += ok;
    byCat.withCalls[g]! += used;
    byCat.calls[g]! += c;
    byCat.errors[g]! += e;
    stops[stop.codes[i]! + 1]!++;
    hist[c >= 4 ? 4 : c <= 0 ? 0 : (Math.floor(c) as 1 | 2 | 3)]++;
    if (used) {
      withN++;
      withK += ok;
    } else if (c === 0) {
      withoutN++;
      withoutK += ok;
    }
  }
  const name = (d: { values: readonly string[] }, code: number): string | null => (code > 0 ? d.values[code - 1]! : null);
  const benchRows: IndexGroupStat[] = [];
  const catRows: IndexGroupStat[] = [];
  const total = new Sums(1);
  for (let b = 0; b < nb; b++) {
    if (byBench.n[b]) benchRows.push(byBench.stat(b, { bench: name(bench, b) }));
    total.n[0]! += byBench.n[b]!;
    total.correct[0]! += byBench.correct[b]!;
    total.withCalls[0]! += byBench.withCalls[b]!;
    total.calls[0]! += byBench.calls[b]!;
    total.errors[0]! += byBench.errors[b]!;
    for (let c = 0; c < nc; c++) {
      const g = b * nc + c;
      if (byCat.n[g]) catRows.push(byCat.stat(g, { bench: name(bench, b), category: name(category, c) }));
    }
  }
  benchRows.sort(byGroupKeys(['bench']));
  catRows.sort(byGroupKeys(['bench', 'category']));
  const overall = total.stat(0, {});
  const stopReasons: Record<string, number> = {};
  for (let s = 0; s < stops.length; s++) if (stops[s]) stopReasons[s > 0 ? stop.values[s - 1]! : 'undefined'] = stops[s]!;
  const part = (n: number, k: number) => ({ n, correct: k, accuracy: n ? k / n : NaN, wilson: wilson(k, n) });
  return {
    overall,
    byBench: benchRows,
    byCategory: catRows,
    toolUse: { n: overall.n, rapr: overall.rapr, callsPerSample: overall.callsPerSample, toolErrorRate: overall.toolErrorRate, stopReasons, callHistogram: hist },
    withTool: part(withN, withK),
    withoutTool: part(withoutN, withoutK),
  };
}

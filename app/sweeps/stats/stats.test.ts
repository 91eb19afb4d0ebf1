import { describe, expect, it } from 'vitest';
import { pairedByCategory, pairedDeltaInterval,
  accuracy,
  accuracyByToolUse,
  accuracyTable,
  binomialCdf,
  bootstrapMean,
  createRng,
  mcnemarExact,
  normalQuantile,
  pairedCompare,
  toolUse,
  wilson,
  type StatRow,
} from './index';

const row = (qid: string, correct: boolean, over: Partial<StatRow> = {}): StatRow => ({
  qid,
  bench: 'vstar',
  correct,
  score: correct ? 1 : 0,
  calls: 0,
  tool_errors: 0,
  stop_reason: 'answer',
  ...over,
});

/** Exact two-sided McNemar p with BigInt arithmetic: an independent check of the float code. */
function exactP(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  let term = 1n; // C(n, 0)
  let sum = 0n;
  for (let i = 0; i <= k; i++) {
    sum += term;
    term = (term * BigInt(n - i)) / BigInt(i + 1);
  }
  // 2 · sum / 2^n from the top 60 bits of sum, so tiny p-values keep their precision
  const bits = sum.toString(2).length;
  const e = Math.max(0, bits - 60);
  const mant = Number(sum >> BigInt(e));
  return Math.min(1, 2 * mant * 2 ** (e - n));
}

describe('exact McNemar', () => {
  it('matches hand-computed values', () => {
    // b=2, c=8: 2·(C(10,0)+C(10,1)+C(10,2))/2^10 = 2·56/1024
    expect(mcnemarExact(2, 8).p).toBeCloseTo(112 / 1024, 14);
    // b=0, c=5: 2·1/32
    expect(mcnemarExact(0, 5).p).toBeCloseTo(2 / 32, 14);
    // b=1, c=11: 2·(1+12)/4096
    expect(mcnemarExact(11, 1).p).toBeCloseTo(26 / 4096, 14);
    // symmetric and capped at 1
    expect(mcnemarExact(7, 7).p).toBe(1);
    expect(mcnemarExact(0, 0).p).toBe(1);
    expect(mcnemarExact(3, 4).p).toBe(1);
  });

  it('matches exact BigInt arithmetic for large discordant counts', () => {
    for (const [b, c] of [
      [40, 60],
      [120, 170],
      [500, 560],
      [1, 400],
      [2500, 2600],
    ] as const) {
      const want = exactP(b, c);
      const got = mcnemarExact(b, c).p;
      expect(Math.abs(got - want) / Math.max(want, 1e-300)).toBeLessThan(1e-9);
    }
  });

  it('rejects bad counts', () => {
    expect(() => mcnemarExact(-1, 2)).toThrow(/non-negative integer/);
    expect(() => mcnemarExact(1.5, 2)).toThrow(/non-negative integer/);
  });

  it('binomial CDF edge cases', () => {
    expect(binomialCdf(-1, 10, 0.5)).toBe(0);
    expect(binomialCdf(10, 10, 0.5)).toBe(1);
    expect(binomialCdf(0, 3, 0.5)).toBeCloseTo(1 / 8, 14);
    expect(binomialCdf(1, 4, 0.25)).toBeCloseTo(0.75 ** 4 + 4 * 0.25 * 0.75 ** 3, 14);
  });
});

describe('intervals', () => {
  it('Wilson 95 % for 8/10 is the textbook (0.490, 0.943)', () => {
    const w = wilson(8, 10);
    expect(w.lo.toFixed(3)).toBe('0.490');
    expect(w.hi.toFixed(3)).toBe('0.943');
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963985, 8);
  });

  it('bootstrap is seeded: same seed same interval, other seed different, close to the normal approximation', () => {
    const v = Array.from({ length: 1000 }, (_, i) => (i % 10 < 7 ? 1 : 0));
    const a = bootstrapMean(v, { seed: 1 });
    const b = bootstrapMean(v, { seed: 1 });
    const c = bootstrapMean(v, { seed: 2 });
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(a.mean).toBeCloseTo(0.7, 12);
    const se = Math.sqrt((0.7 * 0.3) / 1000);
    expect(a.lo).toBeGreaterThan(0.7 - 1.96 * se - 0.01);
    expect(a.lo).toBeLessThan(0.7 - 1.96 * se + 0.01);
    expect(a.hi).toBeGreaterThan(0.7 + 1.96 * se - 0.01);
    expect(a.hi).toBeLessThan(0.7 + 1.96 * se + 0.01);
    expect(bootstrapMean([], {}).mean).toBeNaN();
    expect(() => bootstrapMean([1], { resamples: 0 })).toThrow(/resamples/);
  });

  it('the PRNG is uniform enough for resampling', () => {
    const rng = createRng(42);
    const counts = new Array<number>(10).fill(0);
    for (let i = 0; i < 100000; i++) counts[rng.int(10)]!++;
    for (const c of counts) expect(Math.abs(c - 10000)).toBeLessThan(500);
  });
});

describe('accuracy and tables', () => {
  const rows: StatRow[] = [
    row('1', true, { category: 'color', calls: 1 }),
    row('2', false, { category: 'color', calls: 2, tool_errors: 1 }),
    row('3', true, { category: 'position' }),
    row('4', true, { bench: 'hrbench', category: 'fsp', calls: 5, stop_reason: 'max_calls', score: 0.5 }),
    row('5', false, { bench: 'hrbench', stop_reason: 'engine_error' }),
  ];

  it('accuracy counts correct answers and meanScore keeps partial credit', () => {
    const a = accuracy(rows, { seed: 3 });
    expect(a).toMatchObject({ n: 5, correct: 3, accuracy: 0.6 });
    expect(a.meanScore).toBeCloseTo((1 + 0 + 1 + 0.5 + 0) / 5, 12);
    expect(a.ci.lo).toBeLessThanOrEqual(0.6);
    expect(a.ci.hi).toBeGreaterThanOrEqual(0.6);
    expect(accuracy([]).accuracy).toBeNaN();
  });

  it('tool-use statistics', () => {
    const t = toolUse(rows);
    expect(t.rapr).toBeCloseTo(3 / 5, 12);
    expect(t.totalCalls).toBe(8);
    expect(t.callsPerSample).toBeCloseTo(8 / 5, 12);
    expect(t.callsPerToolSample).toBeCloseTo(8 / 3, 12);
    expect(t.toolErrorRate).toBeCloseTo(1 / 8, 12);
    expect(t.samplesWithToolError).toBe(1);
    expect(t.stopReasons).toEqual({ answer: 3, max_calls: 1, engine_error: 1 });
    expect(t.callHistogram).toEqual([2, 1, 1, 0, 1]);
    expect(toolUse([row('x', true)]).toolErrorRate).toBeNaN();
  });

  it('per-bench and per-category tables, missing category last; group CIs do not depend on other groups', () => {
    const byBench = accuracyTable(rows, ['bench']);
    expect(byBench.map((g) => [g.key.bench, g.n, g.correct])).toEqual([
      ['hrbench', 2, 1],
      ['vstar', 3, 2],
    ]);
    const byBoth = accuracyTable(rows, ['bench', 'category'], { seed: 9 });
    expect(byBoth.map((g) => `${g.key.bench}/${g.key.category}`)).toEqual(['hrbench/fsp', 'hrbench/null', 'vstar/color', 'vstar/position']);
    expect(byBoth[2]!.rapr).toBe(1);
    expect(byBoth[2]!.toolErrorRate).toBeCloseTo(1 / 3, 12);
    const onlyVstar = accuracyTable(rows.filter((r) => r.bench === 'vstar'), ['bench', 'category'], { seed: 9 });
    expect(onlyVstar[0]).toEqual(byBoth[2]);
  });

  it('accuracy with vs without tools', () => {
    const many: StatRow[] = [];
    for (let i = 0; i < 400; i++) many.push(row(`t${i}`, i % 10 < 8, { calls: 1 + (i % 3) }));
    for (let i = 0; i < 300; i++) many.push(row(`n${i}`, i % 2 === 0));
    const s = accuracyByToolUse(many, { seed: 5 });
    expect(s.withTool).toMatchObject({ n: 400, accuracy: 0.8 });
    expect(s.withoutTool).toMatchObject({ n: 300, accuracy: 0.5 });
    expect(s.difference.delta).toBeCloseTo(0.3, 12);
    expect(s.difference.lo).toBeGreaterThan(0.2);
    expect(s.difference.hi).toBeLessThan(0.4);
    expect(accuracyByToolUse(many.slice(0, 10)).difference.lo).toBeNaN();
  });
});

describe('pairedCompare', () => {
  it('counts wins, losses and ties on shared (bench, qid) and tests them', () => {
    const a: StatRow[] = [];
    const b: StatRow[] = [];
    // 10 both right, 5 both wrong, A better on 2, B better on 8, plus unshared samples
    let q = 0;
    const add = (ca: boolean, cb: boolean, n: number) => {
      for (let i = 0; i < n; i++, q++) {
        a.push(row(`q${q}`, ca));
        b.push(row(`q${q}`, cb));
      }
    };
    add(true, true, 10);
    add(false, false, 5);
    add(true, false, 2);
    add(false, true, 8);
    a.push(row('onlyA', true));
    b.push(row('onlyB', true), row('onlyB2', false));
    b.push(row('q0', true, { bench: 'hrbench' })); // same qid, other bench: not shared
    a.push(row('q1', true)); // duplicate in A: last wins (still correct)
    const r = pairedCompare(a, b, { names: ['base', 'new'], seed: 1 });
    expect(r).toMatchObject({ shared: 25, onlyA: 1, onlyB: 3, duplicatesA: 1, duplicatesB: 0, bothCorrect: 10, bothWrong: 5, aBetter: 2, bBetter: 8, ties: 15 });
    expect(r.accuracyA).toBeCloseTo(12 / 25, 12);
    expect(r.accuracyB).toBeCloseTo(18 / 25, 12);
    expect(r.delta.value).toBeCloseTo(6 / 25, 12);
    expect(r.delta.lo).toBeLessThan(r.delta.value);
    expect(r.delta.hi).toBeGreaterThan(r.delta.value);
    expect(r.mcnemar.p).toBeCloseTo(112 / 1024, 14);
    expect(r.aBetterKeys).toEqual(['vstar/q15', 'vstar/q16']);
    expect(r.bBetterKeys).toHaveLength(8);
    expect(r.summary).toBe('new better on 8, base better on 2, same on 15 of 25 shared samples (exact McNemar p = 0.11)');
  });

  it('handles runs with nothing in common', () => {
    const r = pairedCompare([row('a', true)], [row('b', true)]);
    expect(r.shared).toBe(0);
    expect(r.mcnemar.p).toBe(1);
    expect(r.accuracyA).toBeNaN();
  });
});

describe('resampledMeans', () => {
  it('draws the same stream as createRng(seed).int(n)', async () => {
    const { resampledMeans } = await import('./rng');
    const v = Float64Array.from({ length: 37 }, (_, i) => (i * 7919) % 13);
    const rng = createRng(11);
    const want = Array.from({ length: 5 }, () => {
      let s = 0;
      for (let i = 0; i < v.length; i++) s += v[rng.int(v.length)]!;
      return s / v.length;
    });
    expect(Array.from(resampledMeans(v, 5, 11))).toEqual(want);
  });
});

describe('binomialSample (exact draws for 0/1 bootstraps)', () => {
  it('matches the Binomial(10, 0.3) pmf', async () => {
    const { binomialSample } = await import('./rng');
    const rng = createRng(5);
    const N = 200000;
    const counts = new Array<number>(11).fill(0);
    for (let i = 0; i < N; i++) counts[binomialSample(rng, 10, 0.3)]!++;
    let c = 1;
    for (let k = 0; k <= 10; k++) {
      const pmf = c * 0.3 ** k * 0.7 ** (10 - k);
      const sd = Math.sqrt(N * pmf * (1 - pmf));
      expect(Math.abs(counts[k]! - N * pmf)).toBeLessThan(5 * sd + 1);
      c = (c * (10 - k)) / (k + 1);
    }
  });

  it('has the right mean and variance for large n, and handles the edges', async () => {
    const { binomialSample } = await import('./rng');
    const rng = createRng(6);
    const n = 50000;
    const p = 0.6;
    const xs = Array.from({ length: 20000 }, () => binomialSample(rng, n, p));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    const v = xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (xs.length - 1);
    expect(Math.abs(mean - n * p)).toBeLessThan(5 * Math.sqrt((n * p * (1 - p)) / xs.length));
    expect(v / (n * p * (1 - p))).toBeGreaterThan(0.95);
    expect(v / (n * p * (1 - p))).toBeLessThan(1.05);
    expect(binomialSample(rng, 10, 0)).toBe(0);
    expect(binomialSample(rng, 10, 1)).toBe(10);
    expect(binomialSample(rng, 0, 0.5)).toBe(0);
  });

  it('a 0/1 bootstrap by binomial draws agrees with resampling indices', async () => {
    const { resampledMeans } = await import('./rng');
    const v = Float64Array.from({ length: 5000 }, (_, i) => (i % 5 < 3 ? 1 : 0));
    const fast = bootstrapMean(v, { seed: 1, resamples: 2000 });
    const slow = Array.from(resampledMeans(v, 2000, 1)).sort((a, b) => a - b);
    expect(Math.abs(fast.lo - slow[49]!)).toBeLessThan(0.004);
    expect(Math.abs(fast.hi - slow[1950]!)).toBeLessThan(0.004);
  });
});

describe('pairedDeltaInterval (Newcombe method 10) and pairedByCategory', () => {
  it('contains the estimate, mirrors when A and B swap, narrows with n, and stays within [-1, 1]', () => {
    const i = pairedDeltaInterval(10, 2, 8, 5);
    const d = (8 - 2) / 25;
    expect(i.lo).toBeLessThan(d);
    expect(i.hi).toBeGreaterThan(d);
    const j = pairedDeltaInterval(10, 8, 2, 5);
    expect(j.lo).toBeCloseTo(-i.hi, 12);
    expect(j.hi).toBeCloseTo(-i.lo, 12);
    const big = pairedDeltaInterval(100, 20, 80, 50);
    expect(big.hi - big.lo).toBeLessThan(i.hi - i.lo);
    const all = pairedDeltaInterval(0, 0, 20, 0);
    expect(all.hi).toBeLessThanOrEqual(1);
    expect(all.lo).toBeGreaterThan(0.7);
    expect(pairedDeltaInterval(0, 0, 0, 0).lo).toBeNaN();
    // No discordant pairs: Δ = 0 and the interval still has width (Wilson, not a degenerate [0, 0]).
    const same = pairedDeltaInterval(12, 0, 0, 8);
    expect(same.lo).toBeLessThan(0);
    expect(same.hi).toBeGreaterThan(0);
  });

  it('matches a hand computation of the hybrid score interval', () => {
    // a=1 both, b=1 A only, c=7 B only, d=12 neither; n=21.
    const i = pairedDeltaInterval(1, 1, 7, 12);
    const z = 1.959963984540054;
    const w = (k: number, n: number) => {
      const p = k / n, den = 1 + (z * z) / n, c = (p + (z * z) / (2 * n)) / den, h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / den;
      return [c - h, c + h] as const;
    };
    const [la, ua] = w(2, 21), [lb, ub] = w(8, 21);
    const pa = 2 / 21, pb = 8 / 21;
    const phi = (1 * 12 - 1 * 7) / Math.sqrt(2 * 19 * 8 * 13);
    const lo = pb - pa - Math.sqrt((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2);
    const hi = pb - pa + Math.sqrt((ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2);
    expect(i.lo).toBeCloseTo(lo, 9);
    expect(i.hi).toBeCloseTo(hi, 9);
  });

  it('groups shared samples by bench and category', () => {
    const r = (qid: string, category: string, correct: boolean) => ({ qid, bench: 'vstar', category, correct, score: correct ? 1 : 0, calls: 0, tool_errors: 0, stop_reason: 'answer' as const });
    const a = [r('1', 'x', true), r('2', 'x', false), r('3', 'y', true), r('4', 'y', true), r('only-a', 'y', true)];
    const b = [r('1', 'x', true), r('2', 'x', true), r('3', 'y', false), r('4', 'y', true)];
    const g = pairedByCategory(a, b);
    expect(g.map((x) => [x.category, x.n, x.accuracyA, x.accuracyB, x.aBetter, x.bBetter])).toEqual([
      ['x', 2, 0.5, 1, 0, 1],
      ['y', 2, 1, 0.5, 1, 0],
    ]);
    expect(g[0]!.ciA.lo).toBeGreaterThan(0);
    expect(g[0]!.delta.value).toBe(0.5);
  });
});

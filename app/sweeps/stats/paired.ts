/**
 * Paired comparison of two runs on the samples they share, keyed by (bench, qid). Worded as
 * "A better / B better" (Zeno #889), with the exact McNemar test on the discordant pairs.
 */
import { mcnemarExact, type McNemarResult } from './binomial';
import type { BootstrapOptions, Interval, StatRow } from './accuracy';
import { wilson } from './accuracy';

export interface PairedComparison {
  /** Samples in both runs. */
  shared: number;
  /** Samples only in A / only in B (not compared). */
  onlyA: number;
  onlyB: number;
  /** Keys that appear more than once in a run; the last record wins (a resumed run may re-record). */
  duplicatesA: number;
  duplicatesB: number;
  bothCorrect: number;
  bothWrong: number;
  /** A correct, B wrong. */
  aBetter: number;
  /** B correct, A wrong. */
  bBetter: number;
  /** bothCorrect + bothWrong. */
  ties: number;
  accuracyA: number;
  accuracyB: number;
  /** accuracyB − accuracyA on the shared samples, with Newcombe's paired Wilson score interval (`pairedDeltaInterval`). */
  delta: Interval & { value: number };
  mcnemar: McNemarResult;
  /** The samples behind the counts, so a cell can open them. Keys are `bench/qid`. */
  aBetterKeys: string[];
  bBetterKeys: string[];
  /** One line in words, e.g. "B better on 12, A better on 5, same on 83 (p = 0.14)". */
  summary: string;
}

/**
 * 95 % interval of accB − accA for paired 0/1 outcomes: Newcombe's method 10 (Statistics in Medicine 17, 1998,
 * "Improved confidence intervals for the difference between binomial proportions based on paired data"), built
 * from the two Wilson score intervals and the pairs' correlation: the accuracies' interval method, carried to Δ.
 * `both` = both correct, `aOnly` = A correct and B wrong, `bOnly` = B correct and A wrong, `neither` = both wrong.
 */
export function pairedDeltaInterval(both: number, aOnly: number, bOnly: number, neither: number, level = 0.95): Interval {
  const n = both + aOnly + bOnly + neither;
  if (n === 0) return { lo: NaN, hi: NaN };
  const pA = (both + aOnly) / n;
  const pB = (both + bOnly) / n;
  const wA = wilson(both + aOnly, n, level);
  const wB = wilson(both + bOnly, n, level);
  const e = both + aOnly; // A correct
  const f = bOnly + neither; // A wrong
  const g = both + bOnly; // B correct
  const h = aOnly + neither; // B wrong
  const prod = e * f * g * h;
  const phi = prod === 0 ? 0 : (both * neither - aOnly * bOnly) / Math.sqrt(prod);
  const d = pB - pA;
  // Δ = pB − pA: its lower end takes B's lower and A's upper distance, the upper end the reverse.
  const down = Math.sqrt(Math.max(0, (pB - wB.lo) ** 2 - 2 * phi * (pB - wB.lo) * (wA.hi - pA) + (wA.hi - pA) ** 2));
  const up = Math.sqrt(Math.max(0, (wB.hi - pB) ** 2 - 2 * phi * (wB.hi - pB) * (pA - wA.lo) + (pA - wA.lo) ** 2));
  return { lo: Math.max(-1, d - down), hi: Math.min(1, d + up) };
}

/** One (bench, category) of a paired comparison: accuracies of A and B on the shared samples, and Δ. */
export interface PairedGroup {
  bench: string;
  category: string | null;
  /** Shared samples of this group. */
  n: number;
  accuracyA: number;
  ciA: Interval;
  accuracyB: number;
  ciB: Interval;
  /** accuracyB − accuracyA with `pairedDeltaInterval`. */
  delta: Interval & { value: number };
  aBetter: number;
  bBetter: number;
  /** Exact McNemar p of this group's discordant pairs. */
  p: number;
}

/** The per-category A/B table of two runs (keyed as `pairedCompare`, the category taken from A's record). */
export function pairedByCategory(a: readonly StatRow[], b: readonly StatRow[], level = 0.95): PairedGroup[] {
  const B = new Map<string, StatRow>();
  for (const r of b) B.set(keyOf(r), r);
  const A = new Map<string, StatRow>();
  for (const r of a) A.set(keyOf(r), r);
  const groups = new Map<string, { bench: string; category: string | null; c: [number, number, number, number] }>();
  for (const [k, ra] of A) {
    const rb = B.get(k);
    if (!rb) continue;
    const category = ra.category ?? rb.category ?? null;
    const gk = JSON.stringify([ra.bench, category]);
    let g = groups.get(gk);
    if (!g) groups.set(gk, (g = { bench: ra.bench, category, c: [0, 0, 0, 0] }));
    g.c[ra.correct ? (rb.correct ? 0 : 1) : rb.correct ? 2 : 3]++;
  }
  const out: PairedGroup[] = [];
  for (const { bench, category, c } of groups.values()) {
    const [both, aOnly, bOnly, neither] = c;
    const n = both + aOnly + bOnly + neither;
    const accA = (both + aOnly) / n;
    const accB = (both + bOnly) / n;
    out.push({
      bench,
      category,
      n,
      accuracyA: accA,
      ciA: wilson(both + aOnly, n, level),
      accuracyB: accB,
      ciB: wilson(both + bOnly, n, level),
      delta: { value: accB - accA, ...pairedDeltaInterval(both, aOnly, bOnly, neither, level) },
      aBetter: aOnly,
      bBetter: bOnly,
      p: mcnemarExact(aOnly, bOnly).p,
    });
  }
  return out.sort((x, y) => x.bench.localeCompare(y.bench) || (x.category ?? '').localeCompare(y.category ?? ''));
}

function keyOf(r: StatRow): string {
  return `${r.bench}/${r.qid}`;
}

export function pairedCompare(a: readonly StatRow[], b: readonly StatRow[], opts: BootstrapOptions & { names?: [string, string] } = {}): PairedComparison {
  const index = (rows: readonly StatRow[]): { map: Map<string, StatRow>; dup: number } => {
    const map = new Map<string, StatRow>();
    let dup = 0;
    for (const r of rows) {
      const k = keyOf(r);
      if (map.has(k)) dup++;
      map.set(k, r);
    }
    return { map, dup };
  };
  const A = index(a);
  const B = index(b);
  let bothCorrect = 0;
  let bothWrong = 0;
  const aBetterKeys: string[] = [];
  const bBetterKeys: string[] = [];
  const pairs: Array<[number, number]> = [];
  let onlyA = 0;
  for (const [k, ra] of A.map) {
    const rb = B.map.get(k);
    if (!rb) {
      onlyA++;
      continue;
    }
    pairs.push([ra.correct ? 1 : 0, rb.correct ? 1 : 0]);
    if (ra.correct && rb.correct) bothCorrect++;
    else if (!ra.correct && !rb.correct) bothWrong++;
    else if (ra.correct) aBetterKeys.push(k);
    else bBetterKeys.push(k);
  }
  const shared = pairs.length;
  const onlyB = B.map.size - shared;
  const accA = shared ? (bothCorrect + aBetterKeys.length) / shared : NaN;
  const accB = shared ? (bothCorrect + bBetterKeys.length) / shared : NaN;

  const { lo, hi } = pairedDeltaInterval(bothCorrect, aBetterKeys.length, bBetterKeys.length, bothWrong, opts.level ?? 0.95);
  const mcnemar = mcnemarExact(aBetterKeys.length, bBetterKeys.length);
  const [na, nb] = opts.names ?? ['A', 'B'];
  const pText = mcnemar.p < 0.001 ? 'p < 0.001' : `p = ${mcnemar.p.toPrecision(2)}`;
  const summary = `${nb} better on ${bBetterKeys.length}, ${na} better on ${aBetterKeys.length}, same on ${bothCorrect + bothWrong} of ${shared} shared samples (exact McNemar ${pText})`;
  return {
    shared,
    onlyA,
    onlyB,
    duplicatesA: A.dup,
    duplicatesB: B.dup,
    bothCorrect,
    bothWrong,
    aBetter: aBetterKeys.length,
    bBetter: bBetterKeys.length,
    ties: bothCorrect + bothWrong,
    accuracyA: accA,
    accuracyB: accB,
    delta: { value: accB - accA, lo, hi },
    mcnemar,
    aBetterKeys: aBetterKeys.sort(),
    bBetterKeys: bBetterKeys.sort(),
    summary,
  };
}

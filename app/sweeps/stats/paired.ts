/**
 * Paired comparison of two runs on the samples they share, keyed by (bench, qid). Worded as
 * "A better / B better" (Zeno #889), with the exact McNemar test on the discordant pairs.
 */
import { mcnemarExact, type McNemarResult } from './binomial';
import type { BootstrapOptions, Interval, StatRow } from './accuracy';
import { quantileSorted } from './accuracy';
import { binomialSample, createRng } from './rng';

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
  /** accuracyB − accuracyA on the shared samples, with a paired bootstrap CI. */
  delta: Interval & { value: number };
  mcnemar: McNemarResult;
  /** The samples behind the counts, so a cell can open them. Keys are `bench/qid`. */
  aBetterKeys: string[];
  bBetterKeys: string[];
  /** One line in words, e.g. "B better on 12, A better on 5, same on 83 (p = 0.14)". */
  summary: string;
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

  // Paired bootstrap: resample shared samples, keeping each pair together.
  let lo = NaN;
  let hi = NaN;
  if (shared) {
    const R = opts.resamples ?? 1000;
    const level = opts.level ?? 0.95;
    // Each pair's difference is −1 (A better), 0 or +1 (B better); a resample's counts are multinomial,
    // drawn exactly as Binomial(n, c₊/n) then Binomial(n − X₊, c₋/(n − c₊)).
    const up = bBetterKeys.length;
    const down = aBetterKeys.length;
    const rng = createRng(opts.seed ?? 0);
    const ds = new Float64Array(R);
    for (let r = 0; r < R; r++) {
      const xu = binomialSample(rng, shared, up / shared);
      const rest = shared - up;
      const xd = rest > 0 ? binomialSample(rng, shared - xu, down / rest) : 0;
      ds[r] = (xu - xd) / shared;
    }
    ds.sort();
    lo = quantileSorted(ds, (1 - level) / 2);
    hi = quantileSorted(ds, 1 - (1 - level) / 2);
  }
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

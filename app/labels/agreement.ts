/**
 * Inter-annotator agreement.
 *
 * - Cohen's kappa for two annotators, Fleiss' kappa for two or more (with two raters Fleiss' kappa is
 *   Scott's pi, which is why the report uses Cohen whenever there are exactly two).
 * - Only units labelled by **all** chosen annotators count (a unit with labels from some annotators but not
 *   others is "partial" and reported as a count, not scored): an unlabelled sample means "not looked at yet",
 *   not "no failure".
 * - Multi-label: failures can have several labels, which ordinary kappa does not model. We report
 *   (1) a **per-label binary kappa**: for each label, each annotator says present/absent on every unit;
 *   (2) a **primary-label kappa**: each annotator's primary label on a unit is the earliest-added label that
 *   is still present (the first judgment), and kappa is computed over those categories.
 * - When chance agreement is 1 (everyone used one single category everywhere), kappa is undefined and
 *   reported as NaN, with the observed agreement alongside.
 */
import { parseUnitKey, sampleKey, type LabelFold } from './fold';

export interface KappaResult {
  kappa: number;
  /** Observed agreement. */
  po: number;
  /** Agreement expected by chance. */
  pe: number;
  /** Number of rated units. */
  n: number;
}

/** Cohen's kappa for two raters' categorical ratings of the same units (same order). */
export function cohenKappa(a: readonly string[], b: readonly string[]): KappaResult {
  if (a.length !== b.length) throw new Error(`cohenKappa: the raters rated different numbers of units (${a.length} vs ${b.length})`);
  const n = a.length;
  if (n === 0) return { kappa: NaN, po: NaN, pe: NaN, n: 0 };
  const ca = new Map<string, number>();
  const cb = new Map<string, number>();
  let agree = 0;
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) agree++;
    ca.set(x, (ca.get(x) ?? 0) + 1);
    cb.set(y, (cb.get(y) ?? 0) + 1);
  }
  const po = agree / n;
  let pe = 0;
  for (const [k, v] of ca) pe += (v / n) * ((cb.get(k) ?? 0) / n);
  return { kappa: kappaOf(po, pe), po, pe, n };
}

/** Cohen's kappa from a k×k confusion matrix (rows: rater A, columns: rater B). */
export function cohenKappaFromMatrix(m: readonly (readonly number[])[]): KappaResult {
  const k = m.length;
  let n = 0;
  let agree = 0;
  const rows = new Array<number>(k).fill(0);
  const cols = new Array<number>(k).fill(0);
  for (let i = 0; i < k; i++) {
    const r = m[i]!;
    if (r.length !== k) throw new Error(`cohenKappaFromMatrix: row ${i} has ${r.length} cells, expected ${k}`);
    for (let j = 0; j < k; j++) {
      const v = r[j]!;
      n += v;
      rows[i]! += v;
      cols[j]! += v;
      if (i === j) agree += v;
    }
  }
  if (n === 0) return { kappa: NaN, po: NaN, pe: NaN, n: 0 };
  const po = agree / n;
  let pe = 0;
  for (let i = 0; i < k; i++) pe += (rows[i]! / n) * (cols[i]! / n);
  return { kappa: kappaOf(po, pe), po, pe, n };
}

function kappaOf(po: number, pe: number): number {
  return pe >= 1 - 1e-12 ? NaN : (po - pe) / (1 - pe);
}

/**
 * Fleiss' kappa from an N×k table: `counts[i][j]` = raters who put unit i in category j. Every row must
 * sum to the same number of raters m ≥ 2.
 */
export function fleissKappa(counts: readonly (readonly number[])[]): KappaResult & { raters: number } {
  const N = counts.length;
  if (N === 0) return { kappa: NaN, po: NaN, pe: NaN, n: 0, raters: 0 };
  const k = counts[0]!.length;
  const m = counts[0]!.reduce((s, v) => s + v, 0);
  if (m < 2) throw new Error(`fleissKappa: each unit needs at least 2 ratings (unit 0 has ${m})`);
  const colSums = new Array<number>(k).fill(0);
  let pSum = 0;
  for (let i = 0; i < N; i++) {
    const r = counts[i]!;
    if (r.length !== k) throw new Error(`fleissKappa: unit ${i} has ${r.length} categories, expected ${k}`);
    let s = 0;
    let sq = 0;
    for (let j = 0; j < k; j++) {
      const v = r[j]!;
      if (!(v >= 0) || !Number.isInteger(v)) throw new Error(`fleissKappa: unit ${i}, category ${j}: count must be a non-negative integer, got ${v}`);
      s += v;
      sq += v * v;
      colSums[j]! += v;
    }
    if (s !== m) throw new Error(`fleissKappa: unit ${i} has ${s} ratings, unit 0 has ${m}; every unit needs the same number of raters`);
    pSum += (sq - m) / (m * (m - 1));
  }
  const po = pSum / N;
  let pe = 0;
  for (let j = 0; j < k; j++) {
    const p = colSums[j]! / (N * m);
    pe += p * p;
  }
  return { kappa: kappaOf(po, pe), po, pe, n: N, raters: m };
}

/** Fleiss' kappa from per-unit rating lists (`ratings[i]` = every rater's category for unit i). */
export function fleissKappaFromRatings(ratings: readonly (readonly string[])[]): KappaResult & { raters: number } {
  const cats = new Map<string, number>();
  for (const r of ratings) for (const c of r) if (!cats.has(c)) cats.set(c, cats.size);
  const table = ratings.map((r) => {
    const row = new Array<number>(cats.size).fill(0);
    for (const c of r) row[cats.get(c)!]! += 1;
    return row;
  });
  return fleissKappa(table);
}

export interface LabelAgreement extends KappaResult {
  label: string;
  /** Units where each annotator marked the label, in `annotators` order. */
  positives: number[];
}

export interface AgreementReport {
  annotators: string[];
  /** 'cohen' for two annotators, 'fleiss' for more. */
  method: 'cohen' | 'fleiss';
  level: 'sample' | 'unit';
  /** Units labelled by every annotator: the ones scored. */
  units: number;
  /** Units labelled by some but not all annotators (not scored). */
  partial: number;
  perLabel: LabelAgreement[];
  /** Mean of the defined per-label kappas (labels nobody used are left out). */
  meanPerLabelKappa: number;
  /** Kappa over each annotator's primary (earliest-added, still present) label. */
  primary: KappaResult;
}

/**
 * Agreement between `annotators` over the current labels in `fold`.
 * `level: 'sample'` (default) merges step labels into their sample; `'unit'` scores each (sample, step)
 * separately. `labels` lists the label ids to score (e.g. the taxonomy's); ids seen in the data are added.
 */
export function agreementReport(
  fold: LabelFold,
  opts: { annotators: readonly string[]; labels?: readonly string[]; level?: 'sample' | 'unit'; run?: string },
): AgreementReport {
  const annotators = [...opts.annotators];
  if (annotators.length < 2) throw new Error(`agreement needs at least 2 annotators, got ${annotators.length}`);
  if (new Set(annotators).size !== annotators.length) throw new Error('agreement: an annotator is listed twice');
  const level = opts.level ?? 'sample';
  // unit → annotator → label → seq of the add (earliest wins when merging steps)
  const units = new Map<string, Map<string, Map<string, number>>>();
  for (const [key, byWho] of fold) {
    const u = parseUnitKey(key);
    if (opts.run !== undefined && u.run !== opts.run) continue;
    const k = level === 'sample' ? sampleKey(u.run, u.qid) : key;
    let per = units.get(k);
    if (!per) units.set(k, (per = new Map()));
    for (const [who, list] of byWho) {
      let m = per.get(who);
      if (!m) per.set(who, (m = new Map()));
      for (const c of list) m.set(c.label, Math.min(m.get(c.label) ?? Infinity, c.seq));
    }
  }
  const scored: Array<Map<string, Map<string, number>>> = [];
  let partial = 0;
  for (const per of units.values()) {
    const have = annotators.filter((a) => (per.get(a)?.size ?? 0) > 0).length;
    if (have === annotators.length) scored.push(per);
    else if (have > 0) partial++;
  }
  const labelIds = new Set(opts.labels ?? []);
  for (const per of scored) for (const a of annotators) for (const l of per.get(a)!.keys()) labelIds.add(l);

  const method = annotators.length === 2 ? 'cohen' : 'fleiss';
  const score = (ratings: string[][]): KappaResult => {
    if (method === 'cohen') return cohenKappa(ratings.map((r) => r[0]!), ratings.map((r) => r[1]!));
    const f = fleissKappaFromRatings(ratings);
    return { kappa: f.kappa, po: f.po, pe: f.pe, n: f.n };
  };

  const perLabel: LabelAgreement[] = [];
  for (const label of labelIds) {
    const positives = annotators.map(() => 0);
    const ratings = scored.map((per) =>
      annotators.map((a, ai) => {
        const has = per.get(a)!.has(label);
        if (has) positives[ai]! += 1;
        return has ? '1' : '0';
      }),
    );
    perLabel.push({ label, positives, ...score(ratings) });
  }
  const defined = perLabel.filter((p) => Number.isFinite(p.kappa) && p.positives.some((x) => x > 0));
  const meanPerLabelKappa = defined.length ? defined.reduce((s, p) => s + p.kappa, 0) / defined.length : NaN;

  const primaryOf = (m: Map<string, number>): string => {
    let best = '';
    let bestSeq = Infinity;
    for (const [l, s] of m) {
      if (s < bestSeq || (s === bestSeq && l < best)) {
        best = l;
        bestSeq = s;
      }
    }
    return best;
  };
  const primary = score(scored.map((per) => annotators.map((a) => primaryOf(per.get(a)!))));

  return { annotators, method, level, units: scored.length, partial, perLabel, meanPerLabelKappa, primary };
}

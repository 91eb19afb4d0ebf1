/**
 * Exact binomial tail probabilities in log space (stable for n in the hundreds of thousands) and the
 * exact McNemar test built on them.
 */

const logFactCache: number[] = [0];
/** ln(n!) by cumulative sums (exact to double rounding; n up to a few million is fine). */
export function logFactorial(n: number): number {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`logFactorial: n must be a non-negative integer, got ${n}`);
  for (let i = logFactCache.length; i <= n; i++) logFactCache.push(logFactCache[i - 1]! + Math.log(i));
  return logFactCache[n]!;
}

export function logChoose(n: number, k: number): number {
  return logFactorial(n) - logFactorial(k) - logFactorial(n - k);
}

/** P(X ≤ k) for X ~ Binomial(n, p). */
export function binomialCdf(k: number, n: number, p: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  const lp = Math.log(p);
  const lq = Math.log1p(-p);
  // log-sum-exp over the terms 0..k
  const terms: number[] = [];
  let max = -Infinity;
  for (let i = 0; i <= k; i++) {
    const t = logChoose(n, i) + i * lp + (n - i) * lq;
    terms.push(t);
    if (t > max) max = t;
  }
  let s = 0;
  for (const t of terms) s += Math.exp(t - max);
  return Math.min(1, Math.exp(max + Math.log(s)));
}

export interface McNemarResult {
  /** Discordant pairs: A right, B wrong. */
  b: number;
  /** Discordant pairs: A wrong, B right. */
  c: number;
  /** Exact two-sided p-value: min(1, 2·P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2). 1 when b + c = 0. */
  p: number;
  method: 'exact-binomial';
}

/** The exact (binomial) McNemar test on the discordant counts. */
export function mcnemarExact(b: number, c: number): McNemarResult {
  for (const [name, v] of [['b', b], ['c', c]] as const) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`mcnemarExact: ${name} must be a non-negative integer, got ${v}`);
  }
  const n = b + c;
  const p = n === 0 ? 1 : Math.min(1, 2 * binomialCdf(Math.min(b, c), n, 0.5));
  return { b, c, p, method: 'exact-binomial' };
}

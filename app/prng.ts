/**
 * The one home of Loupe's seeded pseudo-random numbers. Nothing that must repeat draws from `Math.random`:
 * benchmarks' option shuffles, loupe-synth scenes, bootstrap intervals, engine sampling and the seeded benchmarks
 * all come from the generators below, so one seed gives the same bytes on every machine.
 *
 * The algorithms are fixed: changing a line here changes every seeded output (loupe-synth's golden scenes,
 * bootstrap intervals, option orders), so the tests that pin those outputs fail first.
 */

/** 32-bit FNV-1a over a string's UTF-16 code units, starting from `basis` (the standard offset basis by default). */
export function fnv1a32(text: string, basis = 0x811c9dc5): number {
  let h = basis >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** splitmix32: a 32-bit seed → a stream of well-mixed 32-bit words (fills a larger generator's state). */
export function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** mulberry32: a 32-bit-state generator, uniform in [0, 1). Small and fast; used where one 32-bit seed is all there is. */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * sfc32 (a small fast chaotic generator with a 128-bit state). The state words are public so a hot loop can copy
 * them into locals and inline `nextU32` (a call per draw costs ~10× in the bootstrap); such a copy must step exactly
 * as `nextU32` does.
 */
export class Sfc32 {
  constructor(
    public a: number,
    public b: number,
    public c: number,
    public d: number,
  ) {}

  nextU32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Throw away `n` outputs (mixing after seeding). */
  skip(n: number): this {
    for (let i = 0; i < n; i++) this.nextU32();
    return this;
  }
}

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

/** sfc32 seeded through splitmix32 and mixed 12 steps: the state `createRng(seed)` starts from. */
export function seededSfc32(seed: number): Sfc32 {
  const sm = splitmix32(seed);
  return new Sfc32(sm(), sm(), sm(), sm()).skip(12);
}

/** The general-purpose seeded generator (bootstrap intervals, generated runs, seeded tests). */
export function createRng(seed: number): Rng {
  const g = seededSfc32(seed);
  return {
    next: () => g.nextU32() / 4294967296,
    int: (n: number) => Math.floor((g.nextU32() / 4294967296) * n),
  };
}

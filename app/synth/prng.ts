/**
 * Seeded pseudo-random numbers for loupe-synth. Everything the generator draws comes from here, never
 * from `Math.random`, so one seed gives the same benchmark on every machine.
 */

import { fnv1a32, Sfc32 } from '../prng';

/** 32-bit FNV-1a over the parts joined by NUL: derives independent sub-seeds from (seed, index, purpose). */
export function hashSeed(...parts: Array<string | number>): number {
  return fnv1a32(parts.join('\u0000'));
}

/** The one sfc32 (`app/prng.ts`), seeded loupe-synth's way: fixed constants plus the seed, mixed 15 steps. */
export class Prng extends Sfc32 {
  constructor(seed: number) {
    super(0x9e3779b9, 0x243f6a88, 0xb7e15162, seed >>> 0);
    this.skip(15);
  }

  /** A child generator whose stream does not depend on how much of this one is used later. */
  fork(label: string | number): Prng {
    return new Prng(hashSeed(this.d, this.a, label));
  }

  /** Uniform in [lo, hi). */
  range(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** Integer uniform in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Prng.pick: empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Fisher–Yates on a copy. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const tmp = out[i] as T;
      out[i] = out[j] as T;
      out[j] = tmp;
    }
    return out;
  }

  /** `k` distinct items. */
  sample<T>(items: readonly T[], k: number): T[] {
    return this.shuffle(items).slice(0, k);
  }
}

/** Token choice and stop strings for local engines (pure; the worker calls these per step). */

/** The seeded token sampler's generator: mulberry32 from the one PRNG module, so `seed` makes sampling reproducible. */
export { mulberry32 as seededRandom } from '../../prng';

export interface SamplingParams {
  temperature: number;
  topP: number;
  /** -1 or 0 = off. */
  topK: number;
}

/** Index of the largest value; the first on ties (as torch.argmax). */
export function argmax(logits: ArrayLike<number>, offset = 0, length = logits.length - offset): number {
  let best = 0;
  let bv = -Infinity;
  for (let i = 0; i < length; i++) {
    const v = logits[offset + i]!;
    if (v > bv) {
      bv = v;
      best = i;
    }
  }
  return best;
}

/** Greedy when temperature <= 0; else temperature, then top-k, then top-p (nucleus), as vLLM orders them. */
export function sampleToken(logits: ArrayLike<number>, offset: number, vocab: number, p: SamplingParams, rand: () => number): number {
  if (!(p.temperature > 0)) return argmax(logits, offset, vocab);
  const idx = Array.from({ length: vocab }, (_, i) => i);
  idx.sort((x, y) => logits[offset + y]! - logits[offset + x]!);
  let keep = p.topK > 0 ? Math.min(p.topK, vocab) : vocab;
  const maxL = logits[offset + idx[0]!]! / p.temperature;
  const probs: number[] = [];
  let sum = 0;
  for (let i = 0; i < keep; i++) {
    const e = Math.exp(logits[offset + idx[i]!]! / p.temperature - maxL);
    probs.push(e);
    sum += e;
  }
  if (p.topP > 0 && p.topP < 1) {
    let acc = 0;
    for (let i = 0; i < keep; i++) {
      acc += probs[i]! / sum;
      if (acc >= p.topP) {
        keep = i + 1;
        break;
      }
    }
    sum = probs.slice(0, keep).reduce((a, b) => a + b, 0);
  }
  let r = rand() * sum;
  for (let i = 0; i < keep; i++) {
    r -= probs[i]!;
    if (r <= 0) return idx[i]!;
  }
  return idx[keep - 1]!;
}

/**
 * Finds stop strings in streamed text. `check(text)` returns the cut position of the earliest stop string (text is
 * final up to there) or -1; `safeLength(text)` is how much may be shown now without revealing a stop string's start.
 */
export class StopStrings {
  constructor(private readonly stops: readonly string[]) {}

  check(text: string, from = 0): number {
    let cut = -1;
    for (const s of this.stops) {
      if (!s) continue;
      const i = text.indexOf(s, Math.max(0, from - s.length));
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    return cut;
  }

  safeLength(text: string): number {
    let n = text.length;
    // an unfinished UTF-8 sequence decodes as U+FFFD; hold it back until the next token completes it
    while (n > 0 && text.charCodeAt(n - 1) === 0xfffd) n--;
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, n); k > hold; k--) {
        if (text.slice(n - k, n) === s.slice(0, k)) {
          hold = k;
          break;
        }
      }
    }
    return n - hold;
  }
}

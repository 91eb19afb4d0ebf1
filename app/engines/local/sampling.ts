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
  const keep = p.topK > 0 ? Math.min(p.topK, vocab) : vocab;
  // top-k 1 keeps the first of the order below: the largest logit, the smaller id on ties, which is argmax
  if (keep === 1) return argmax(logits, offset, vocab);
  return drawInOrder(logits, offset, byLogitDescending(logits, offset, vocab, keep), p, rand);
}

/**
 * The draw once the candidates are known: `order` holds the ids top-k kept, largest logit first (ties by id). Their
 * probabilities at `p.temperature`, cut to the nucleus `p.topP`, then one `rand()` walked down them in that order.
 */
export function drawInOrder(logits: ArrayLike<number>, offset: number, order: ArrayLike<number>, p: SamplingParams, rand: () => number): number {
  let keep = order.length;
  const maxL = logits[offset + order[0]!]! / p.temperature;
  const probs: number[] = [];
  let sum = 0;
  for (let i = 0; i < keep; i++) {
    const e = Math.exp(logits[offset + order[i]!]! / p.temperature - maxL);
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
    if (r <= 0) return order[i]!;
  }
  return order[keep - 1]!;
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

const KEY_INDEX_BITS = 20;

/**
 * Token ids ordered by logit, largest first, equal logits in id order: what a stable sort of the ids by
 * `logits[y] - logits[x]` gives. For float32 logits (what onnxruntime returns) each id becomes one number, the
 * logit's bits made orderable then the id, and a typed-array sort orders them: the same order, without a comparator
 * call per comparison (about 2.6 M of them for a 150k vocabulary).
 */
export function byLogitDescending(logits: ArrayLike<number>, offset: number, vocab: number, first = vocab): Int32Array {
  if (!(logits instanceof Float32Array) || vocab > 2 ** KEY_INDEX_BITS) {
    const idx = Array.from({ length: vocab }, (_, i) => i);
    idx.sort((x, y) => logits[offset + y]! - logits[offset + x]!);
    return Int32Array.from(idx.slice(0, first));
  }
  const keys = new Float64Array(vocab);
  const mask = 2 ** KEY_INDEX_BITS - 1;
  const bits = new Uint32Array(logits.buffer, logits.byteOffset + offset * 4, vocab);
  for (let i = 0; i < vocab; i++) {
    const b = logits[offset + i] === 0 ? 0 : bits[i]!; // -0 sorts with +0, as the comparator has it
    const asc = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0; // unsigned order = float order
    keys[i] = (0xffffffff - asc) * 1048576 + i; // largest logit first, then the smaller id (1048576 = 2^KEY_INDEX_BITS)
  }
  // only the first `first` are wanted (top-k): take those keys (they are distinct), then sort just them
  const head = first < vocab ? smallest(keys, first) : keys;
  head.sort();
  const out = new Int32Array(head.length);
  for (let i = 0; i < head.length; i++) out[i] = head[i]! % (mask + 1);
  return out;
}

/** The k smallest values of `a` (distinct), in no order: a max-heap of k, O(n log k). */
function smallest(a: Float64Array, k: number): Float64Array {
  const h = a.slice(0, k);
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < k && h[l]! > h[m]!) m = l;
      if (r < k && h[r]! > h[m]!) m = r;
      if (m === i) return;
      const t = h[i]!;
      h[i] = h[m]!;
      h[m] = t;
      i = m;
    }
  };
  for (let i = (k >> 1) - 1; i >= 0; i--) down(i);
  for (let i = k; i < a.length; i++) {
    if (a[i]! < h[0]!) {
      h[0] = a[i]!;
      down(0);
    }
  }
  return h;
}

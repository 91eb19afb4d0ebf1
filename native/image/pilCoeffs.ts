/**
 * The precomputed fixed-point weights of Pillow's bicubic resample (Resample.c `precompute_coeffs`
 * and `normalize_coeffs_8bpc`), shared by the TypeScript kernels (pilResample.ts) and the
 * WebAssembly ones (pilResampleWasm.ts).
 */

export const PRECISION_BITS = 32 - 8 - 2;
export const HALF = 1 << (PRECISION_BITS - 1);
export const ONE = 1 << PRECISION_BITS;

function bicubic(x: number): number {
  const a = -0.5;
  if (x < 0) x = -x;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}
const SUPPORT = 2;

export interface Coeffs {
  ksize: number;
  /** [xmin, count] per output pixel, with zero weights trimmed off both ends (they add nothing). */
  bounds: Int32Array;
  /** Fixed-point weights, ksize per output pixel; the first `count` are used. */
  kk: Int32Array;
}

/** Weights by (inSize, outSize), most recent last: a sweep resizes many images between the same few sizes. */
const memo = new Map<string, Coeffs>();
const MEMO_SIZES = 64;

/**
 * The weights for resizing `inSize` pixels to `outSize` (remembered for the last MEMO_SIZES pairs; callers only
 * read them, and pilResampleWasm caches its split of a Coeffs by identity, so a remembered one skips both).
 */
export function precompute(inSize: number, outSize: number): Coeffs {
  const key = `${inSize}:${outSize}`;
  const hit = memo.get(key);
  if (hit) {
    memo.delete(key);
    memo.set(key, hit);
    return hit;
  }
  const c = computeCoeffs(inSize, outSize);
  memo.set(key, c);
  if (memo.size > MEMO_SIZES) memo.delete(memo.keys().next().value!);
  return c;
}

function computeCoeffs(inSize: number, outSize: number): Coeffs {
  const scale = inSize / outSize;
  const filterscale = scale < 1 ? 1 : scale;
  const support = SUPPORT * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kk = new Int32Array(outSize * ksize);
  const w = new Float64Array(ksize);
  const q = new Int32Array(ksize);
  const ss = 1 / filterscale;
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    // C `(int)` truncates toward zero.
    let xmin = Math.trunc(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    let xmax = Math.trunc(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    let ww = 0;
    for (let x = 0; x < xmax; x++) {
      const v = bicubic((x + xmin - center + 0.5) * ss);
      w[x] = v;
      ww += v;
    }
    for (let x = 0; x < xmax; x++) {
      const k = ww !== 0 ? w[x]! / ww : w[x]!;
      q[x] = k < 0 ? Math.trunc(-0.5 + k * ONE) : Math.trunc(0.5 + k * ONE);
    }
    // Trim zero weights at both ends: exact (they add 0), and most windows become 4 taps.
    let a = 0;
    let b = xmax;
    while (a < b && q[a] === 0) a++;
    while (b > a && q[b - 1] === 0) b--;
    for (let x = a; x < b; x++) kk[xx * ksize + x - a] = q[x]!;
    bounds[xx * 2] = xmin + a;
    bounds[xx * 2 + 1] = b - a;
  }
  return { ksize, bounds, kk };
}


/** The source rows [first, last) that output rows [from, to) read (the horizontal pass computes only these). */
export function sourceSpan(cv: Coeffs, from: number, to: number): [number, number] {
  let first = Infinity;
  let last = -Infinity;
  for (let yy = from; yy < to; yy++) {
    const a = cv.bounds[yy * 2]!;
    const n = cv.bounds[yy * 2 + 1]!;
    if (n === 0) continue;
    if (a < first) first = a;
    if (a + n > last) last = a + n;
  }
  return first < last ? [first, last] : [0, 0];
}


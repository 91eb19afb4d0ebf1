/**
 * Pillow's `Image.resize(size, Image.BICUBIC)` for 8-bit RGB, re-implemented to give the same bytes
 * (Pillow `src/libImaging/Resample.c`: `precompute_coeffs`, `normalize_coeffs_8bpc`, horizontal pass
 * into an 8-bit temp image over only the rows the vertical pass needs, then the vertical pass;
 * 22-bit fixed point, round-half-up bias, clip to 0..255). Algorithm re-derived from the published
 * behaviour, no code copied.
 *
 * Why: libvips (sharp) implements the same Catmull-Rom kernel, but its upscaling path and
 * fixed-point details differ; on a near-1 zoom resize of a detailed image the outputs differed by a
 * mean of ~3 levels and up to 80 (tests/bench/imageops.bench.ts). The reference model saw Pillow's
 * pixels, so Loupe uses these.
 */

import { HALF, PRECISION_BITS, type Coeffs, precompute, sourceSpan } from './pilCoeffs';
import { wasmResampleAvailable, wasmResizeRows } from './pilResampleWasm';

// Kernels. Products are int32 (`Math.imul`, which V8 also compiles tighter than `*`) and their sums
// stay within int32 (the C code's headroom bits), so the JS arithmetic is exact; `>> PRECISION_BITS`
// then a store into a Uint8ClampedArray is the C `clip8` (the stored value is an integer, so
// clamping is all that happens). The common 4-tap window (near-1 and upscales) is unrolled.

/** Rows per block of the horizontal pass (it walks each block column by column). */
const HBLOCK = 16;

/** Horizontal pass: rows [from, to) of the (outW × rows) output, reading source row `y0 + y`. */
function horizontal(src: Uint8Array, w: number, y0: number, out: Uint8ClampedArray, outW: number, c: Coeffs, from: number, to: number): void {
  const { ksize, bounds, kk } = c;
  const inStride = w * 3;
  const outStride = outW * 3;
  // Column by column within blocks of rows: an output pixel's weights are loaded once per block,
  // and the block's source lines stay in the L1 cache from one column to the next.
  for (let b0 = from; b0 < to; b0 += HBLOCK) {
    const b1 = Math.min(to, b0 + HBLOCK);
    for (let xx = 0, kb = 0; xx < outW; xx++, kb += ksize) {
      const xmin = bounds[xx * 2]!;
      const n = bounds[xx * 2 + 1]!;
      let p = (y0 + b0) * inStride + xmin * 3;
      let o = b0 * outStride + xx * 3;
      if (n === 4) {
        const k0 = kk[kb]!;
        const k1 = kk[kb + 1]!;
        const k2 = kk[kb + 2]!;
        const k3 = kk[kb + 3]!;
        for (let y = b0; y < b1; y++, p += inStride, o += outStride) {
          out[o] = (HALF + Math.imul(src[p]!, k0) + Math.imul(src[p + 3]!, k1) + Math.imul(src[p + 6]!, k2) + Math.imul(src[p + 9]!, k3)) >> PRECISION_BITS;
          out[o + 1] = (HALF + Math.imul(src[p + 1]!, k0) + Math.imul(src[p + 4]!, k1) + Math.imul(src[p + 7]!, k2) + Math.imul(src[p + 10]!, k3)) >> PRECISION_BITS;
          out[o + 2] = (HALF + Math.imul(src[p + 2]!, k0) + Math.imul(src[p + 5]!, k1) + Math.imul(src[p + 8]!, k2) + Math.imul(src[p + 11]!, k3)) >> PRECISION_BITS;
        }
      } else {
        for (let y = b0; y < b1; y++, p += inStride, o += outStride) {
          let s0 = HALF;
          let s1 = HALF;
          let s2 = HALF;
          let x = 0;
          let q = p;
          for (; x + 1 < n; x += 2, q += 6) {
            const k = kk[kb + x]!;
            const l = kk[kb + x + 1]!;
            s0 = (s0 + Math.imul(src[q]!, k) + Math.imul(src[q + 3]!, l)) | 0;
            s1 = (s1 + Math.imul(src[q + 1]!, k) + Math.imul(src[q + 4]!, l)) | 0;
            s2 = (s2 + Math.imul(src[q + 2]!, k) + Math.imul(src[q + 5]!, l)) | 0;
          }
          if (x < n) {
            const k = kk[kb + x]!;
            s0 = (s0 + Math.imul(src[q]!, k)) | 0;
            s1 = (s1 + Math.imul(src[q + 1]!, k)) | 0;
            s2 = (s2 + Math.imul(src[q + 2]!, k)) | 0;
          }
          out[o] = s0 >> PRECISION_BITS;
          out[o + 1] = s1 >> PRECISION_BITS;
          out[o + 2] = s2 >> PRECISION_BITS;
        }
      }
    }
  }
}

/** Vertical pass, output rows [from, to): `src` is w × rows RGB whose row 0 is source row `yOffset`. */
function vertical(src: Uint8Array, w: number, out: Uint8ClampedArray, c: Coeffs, yOffset: number, from: number, to: number): void {
  const { ksize, bounds, kk } = c;
  const stride = w * 3;
  let acc: Int32Array | null = null;
  for (let yy = from; yy < to; yy++) {
    const r0 = (bounds[yy * 2]! - yOffset) * stride;
    const n = bounds[yy * 2 + 1]!;
    const kb = yy * ksize;
    const ro = yy * stride;
    if (n === 4) {
      // One sweep over the row, four source rows at once: no accumulator traffic.
      const k0 = kk[kb]!;
      const k1 = kk[kb + 1]!;
      const k2 = kk[kb + 2]!;
      const k3 = kk[kb + 3]!;
      const r1 = r0 + stride;
      const r2 = r1 + stride;
      const r3 = r2 + stride;
      for (let i = 0; i < stride; i++) {
        out[ro + i] = (HALF + Math.imul(src[r0 + i]!, k0) + Math.imul(src[r1 + i]!, k1) + Math.imul(src[r2 + i]!, k2) + Math.imul(src[r3 + i]!, k3)) >> PRECISION_BITS;
      }
      continue;
    }
    if (n === 0) {
      out.fill(0, ro, ro + stride);
      continue;
    }
    // General count: accumulate whole rows (sequential memory), up to four source rows per sweep.
    acc ??= new Int32Array(stride);
    let first = true;
    for (let y = 0; y < n; y += 4) {
      const m = n - y;
      const k0 = kk[kb + y]!;
      const k1 = m > 1 ? kk[kb + y + 1]! : 0;
      const k2 = m > 2 ? kk[kb + y + 2]! : 0;
      const k3 = m > 3 ? kk[kb + y + 3]! : 0;
      // Rows past the count get weight 0; point them at row 0 of the window so reads stay in range.
      const a0 = r0 + y * stride;
      const a1 = r0 + (m > 1 ? y + 1 : 0) * stride;
      const a2 = r0 + (m > 2 ? y + 2 : 0) * stride;
      const a3 = r0 + (m > 3 ? y + 3 : 0) * stride;
      const base = first ? HALF : 0;
      if (first) for (let i = 0; i < stride; i++) acc[i] = base + Math.imul(src[a0 + i]!, k0) + Math.imul(src[a1 + i]!, k1) + Math.imul(src[a2 + i]!, k2) + Math.imul(src[a3 + i]!, k3);
      else for (let i = 0; i < stride; i++) acc[i] = acc[i]! + Math.imul(src[a0 + i]!, k0) + Math.imul(src[a1 + i]!, k1) + Math.imul(src[a2 + i]!, k2) + Math.imul(src[a3 + i]!, k3);
      first = false;
    }
    for (let i = 0; i < stride; i++) out[ro + i] = acc[i]! >> PRECISION_BITS;
  }
}

interface Plan {
  needH: boolean;
  needV: boolean;
  ch: Coeffs;
  cv: Coeffs;
}

function checkArgs(src: Uint8Array, w: number, h: number, outW: number, outH: number): void {
  if (src.length !== w * h * 3) throw new Error(`pilResizeBicubicRGB: buffer is ${src.length} bytes, expected ${w}×${h}×3`);
  if (!(outW >= 1 && outH >= 1 && Number.isInteger(outW) && Number.isInteger(outH))) throw new Error(`pilResizeBicubicRGB: bad output size ${outW}×${outH}`);
}

function plan(w: number, h: number, outW: number, outH: number): Plan {
  return { needH: outW !== w, needV: outH !== h, ch: precompute(w, outW), cv: precompute(h, outH) };
}

function clamped(a: Uint8Array): Uint8ClampedArray {
  return new Uint8ClampedArray(a.buffer, a.byteOffset, a.byteLength);
}

/** Which kernels compute the rows: 'auto' = WebAssembly SIMD where it runs, else TypeScript. */
export type PilKernels = 'auto' | 'ts';

/**
 * Output rows [from, to) of the resize of `src` (w×h RGB) to outW×outH, written into `out`
 * (outW×outH×3 bytes; other rows untouched). Each output row's bytes depend only on the source, so
 * any split of the rows gives the same image. `scratch.bytes` holds the TS horizontal pass's rows
 * (grown when too small), so a caller that keeps it across calls spares the page faults of new memory.
 */
export function pilResizeBicubicRGBRows(src: Uint8Array, w: number, h: number, outW: number, outH: number, out: Uint8Array, from: number, to: number, scratch: { bytes: Uint8Array } = { bytes: new Uint8Array(0) }, kernels: PilKernels = 'auto'): void {
  checkArgs(src, w, h, outW, outH);
  if (out.length !== outW * outH * 3) throw new Error(`pilResizeBicubicRGBRows: output is ${out.length} bytes, expected ${outW}×${outH}×3`);
  if (!(Number.isInteger(from) && Number.isInteger(to) && from >= 0 && to <= outH && from <= to)) throw new Error(`pilResizeBicubicRGBRows: bad rows [${from}, ${to})`);
  if (from === to) return;
  const p = plan(w, h, outW, outH);
  if (!p.needH && !p.needV) {
    out.set(src.subarray(from * w * 3, to * w * 3), from * w * 3);
  } else if (kernels === 'auto' && wasmResizeRows(src, w, outW, out, from, to, p.needH, p.needV, p.ch, p.cv)) {
    // done by the WebAssembly kernels
  } else if (!p.needV) {
    horizontal(src, w, 0, clamped(out), outW, p.ch, from, to);
  } else if (!p.needH) {
    vertical(src, w, clamped(out), p.cv, 0, from, to);
  } else {
    const [first, last] = sourceSpan(p.cv, from, to);
    const n = outW * (last - first) * 3;
    if (scratch.bytes.length < n) scratch.bytes = new Uint8Array(n);
    const tmp = scratch.bytes.subarray(0, n);
    horizontal(src, w, first, clamped(tmp), outW, p.ch, 0, last - first);
    vertical(tmp, outW, clamped(out), p.cv, first, from, to);
  }
}

/** Resize packed 8-bit RGB `src` (w×h) to outW×outH exactly as Pillow's BICUBIC resize does. */
export function pilResizeBicubicRGB(src: Uint8Array, w: number, h: number, outW: number, outH: number, kernels: PilKernels = 'auto'): Uint8Array {
  checkArgs(src, w, h, outW, outH);
  if (outW === w && outH === h) return src.slice();
  const out = new Uint8Array(outW * outH * 3);
  pilResizeBicubicRGBRows(src, w, h, outW, outH, out, 0, outH, undefined, kernels);
  return out;
}

/** Output rows per slice of the async version: the WebAssembly kernels do ~64 rows of a 4K image in a few ms. */
function sliceRows(outW: number, ksize: number, sliceOps: number): number {
  return Math.max(1, Math.floor(sliceOps / Math.max(1, outW * ksize * 3)));
}

/**
 * The same, in slices of about `sliceOps` multiply-adds with an event-loop turn between slices, so a
 * 4K resize on the main thread never blocks it for long. Same bytes as `pilResizeBicubicRGB`.
 * Each slice is a band of output rows computed whole (the WebAssembly kernels), or, with the TS
 * kernels, the horizontal pass then the vertical pass in row slices.
 */
export async function pilResizeBicubicRGBAsync(src: Uint8Array, w: number, h: number, outW: number, outH: number, sliceOps = 2_000_000, kernels: PilKernels = 'auto'): Promise<Uint8Array> {
  checkArgs(src, w, h, outW, outH);
  const p = plan(w, h, outW, outH);
  if (!p.needH && !p.needV) return src.slice();
  const tick = () => new Promise<void>((r) => setImmediate(r));
  const out = new Uint8Array(outW * outH * 3);
  if (kernels === 'auto' && (!p.needV || outW * 3 >= 16) && wasmResampleAvailable()) {
    // Bands of at least 32 rows, so the source rows two bands share (the vertical window) stay a
    // small part of each band's horizontal pass; the WebAssembly kernels are ~10x the TS ones.
    const step = Math.max(32, sliceRows(outW, p.ch.ksize + p.cv.ksize, sliceOps * 10));
    for (let y = 0; y < outH; y += step) {
      if (y > 0) await tick();
      if (!wasmResizeRows(src, w, outW, out, y, Math.min(outH, y + step), p.needH, p.needV, p.ch, p.cv)) throw new Error('pilResizeBicubicRGBAsync: the WebAssembly kernels refused a resize they had accepted');
    }
    return out;
  }
  let cur = src;
  let offset = 0;
  if (p.needH) {
    const [first, last] = p.needV ? sourceSpan(p.cv, 0, outH) : [0, h];
    const rows = last - first;
    cur = p.needV ? new Uint8Array(outW * rows * 3) : out;
    const curC = clamped(cur);
    const step = sliceRows(outW, p.ch.ksize, sliceOps);
    for (let y = 0; y < rows; y += step) {
      horizontal(src, w, first, curC, outW, p.ch, y, Math.min(rows, y + step));
      if (y + step < rows) await tick();
    }
    offset = first;
  }
  if (!p.needV) return cur;
  const outC = clamped(out);
  const step = sliceRows(outW, p.cv.ksize, sliceOps);
  for (let y = 0; y < outH; y += step) {
    if (y > 0) await tick();
    vertical(cur, outW, outC, p.cv, offset, y, Math.min(outH, y + step));
  }
  return out;
}

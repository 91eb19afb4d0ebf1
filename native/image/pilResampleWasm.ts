/**
 * Pillow-exact bicubic resize with the WebAssembly SIMD kernels of pilResample.wat (the same
 * weights and integer arithmetic as pilResample.ts, so the same bytes; see the .wat's header).
 *
 * One instance per thread, made on first use (the module is under 1 KB, compiled synchronously).
 * Its memory holds, per call: the weights, the source rows the call reads, the horizontal pass's
 * rows and the output rows; it grows as needed and is dropped after a call that needed more than
 * KEEP_BYTES, so one huge image does not pin its memory for the life of the process.
 * Calls are synchronous and self-contained (nothing survives between calls but the memory's size),
 * so interleaved async callers on one thread cannot disturb each other.
 */
import { type Coeffs, sourceSpan } from './pilCoeffs';
import { PIL_RESAMPLE_WASM_BASE64 } from './pilResampleWasmBytes';

/** The slice of the WebAssembly JS API used here (the Node type definitions do not declare it all). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
type WasmModule = object;
interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: unknown };
}
const WA = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

interface Kernels {
  memory: WasmMemory;
  hpass(src: number, inStride: number, rows: number, out: number, outW: number, bounds: number, wts: number, pstride: number): void;
  vpass(src: number, stride: number, out: number, from: number, to: number, bounds: number, kk: number, ksize: number, yOffset: number): void;
}

const KEEP_BYTES = 256 << 20;
let module: WasmModule | null | undefined;
let kernels: Kernels | null = null;

/** The compiled module, or null where WebAssembly SIMD is unavailable (then callers use the TS kernels). */
function compiled(): WasmModule | null {
  if (module !== undefined) return module;
  try {
    if (!WA) throw new Error('no WebAssembly');
    module = new WA.Module(Buffer.from(PIL_RESAMPLE_WASM_BASE64, 'base64'));
  } catch {
    module = null;
  }
  return module;
}

function instance(): Kernels | null {
  if (kernels) return kernels;
  const m = compiled();
  if (!m) return null;
  kernels = new WA!.Instance(m, {}).exports as unknown as Kernels;
  return kernels;
}

/** Bytes of kernel memory this thread holds now (0: none; tests check it is given back). */
export function wasmResampleMemoryBytes(): number {
  return kernels ? kernels.memory.buffer.byteLength : 0;
}

/** Whether the WebAssembly kernels run here (tests and the bench report it). */
export function wasmResampleAvailable(): boolean {
  return compiled() !== null;
}

const align = (n: number) => (n + 15) & ~15;

/** The horizontal weights as hpass reads them (see the .wat): per tap pair, i16x8 high then low halves. */
const splitCache = new WeakMap<Coeffs, Int16Array>();

/** Bytes of split weights per output pixel. */
const pairStride = (ksize: number) => ((ksize + 1) >> 1) * 32;

function splitWeights(c: Coeffs): Int16Array {
  const hit = splitCache.get(c);
  if (hit) return hit;
  const { ksize, bounds, kk } = c;
  const outW = bounds.length >> 1;
  const per = pairStride(ksize) >> 1; // int16s per pixel
  const out = new Int16Array(outW * per);
  for (let xx = 0; xx < outW; xx++) {
    const n = bounds[xx * 2 + 1]!;
    for (let t = 0; t < n; t += 2) {
      const k0 = kk[xx * ksize + t]!;
      const k1 = t + 1 < n ? kk[xx * ksize + t + 1]! : 0;
      const at = xx * per + (t >> 1) * 16;
      for (let lane = 0; lane < 3; lane++) {
        out[at + lane * 2] = k0 >> 11;
        out[at + lane * 2 + 1] = k1 >> 11;
        out[at + 8 + lane * 2] = k0 & 2047;
        out[at + 8 + lane * 2 + 1] = k1 & 2047;
      }
    }
  }
  splitCache.set(c, out);
  return out;
}

/**
 * Output rows [from, to) of the resize into `out` (outW×outH×3; other rows untouched), or false
 * (nothing written) where the kernels cannot take it: no WebAssembly SIMD here, or a vertical pass
 * over rows narrower than 16 bytes (outW < 6), which the TS kernels do instead.
 */
export function wasmResizeRows(src: Uint8Array, w: number, outW: number, out: Uint8Array, from: number, to: number, needH: boolean, needV: boolean, ch: Coeffs, cv: Coeffs): boolean {
  if (needV && outW * 3 < 16) return false;
  const k = instance();
  if (!k) return false;
  const [first, last] = needV ? sourceSpan(cv, from, to) : [from, to];
  const rows = last - first;
  const inStride = w * 3;
  const outStride = outW * 3;
  // Layout: weights, then the source rows, the horizontal pass's rows, the output rows (each
  // padded: hpass reads up to 5 bytes past a row's last pixel).
  const split = needH ? splitWeights(ch) : null;
  const hb = 0;
  const hk = align(hb + (needH ? ch.bounds.byteLength : 0));
  const vb = align(hk + (split ? split.byteLength : 0));
  const vk = align(vb + (needV ? cv.bounds.byteLength : 0));
  const srcAt = align(vk + (needV ? cv.kk.byteLength : 0));
  const tmpAt = align(srcAt + rows * inStride + 16);
  const outAt = align(tmpAt + (needH && needV ? rows * outStride + 16 : 0));
  const total = outAt + (to - from) * outStride + 16;
  const have = k.memory.buffer.byteLength;
  if (total > have) {
    try {
      k.memory.grow(Math.ceil((total - have) / 65536));
    } catch {
      // Over WebAssembly's 4 GiB or out of memory: drop this instance; the TS kernels do this one.
      kernels = null;
      return false;
    }
  }
  const mem = new Uint8Array(k.memory.buffer);
  const put = (at: number, a: Int32Array | Int16Array) => mem.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
  if (split) {
    put(hb, ch.bounds);
    put(hk, split);
  }
  if (needV) {
    put(vb, cv.bounds);
    put(vk, cv.kk);
  }
  mem.set(src.subarray(first * inStride, last * inStride), srcAt);
  if (needH && needV) {
    k.hpass(srcAt, inStride, rows, tmpAt, outW, hb, hk, pairStride(ch.ksize));
    k.vpass(tmpAt, outStride, outAt, from, to, vb, vk, cv.ksize, first);
  } else if (needH) {
    k.hpass(srcAt, inStride, rows, outAt, outW, hb, hk, pairStride(ch.ksize));
  } else {
    k.vpass(srcAt, inStride, outAt, from, to, vb, vk, cv.ksize, first);
  }
  out.set(mem.subarray(outAt, outAt + (to - from) * outStride), from * outStride);
  if (k.memory.buffer.byteLength > KEEP_BYTES) kernels = null;
  return true;
}

/**
 * `ImageOps` with sharp (libvips). Decoding, resizing and encoding run on libuv's thread pool, so
 * these calls are async and keep the calling thread's event loop free; `WorkerImageOps` moves the
 * remaining JS-side work (buffer copies, hashing, file writes) onto a worker thread as well.
 *
 * Pixels are normalized the way the reference pipeline (PIL) sees them:
 * - first frame only (GIF/animated WebP), alpha flattened onto white, converted to 8-bit sRGB RGB;
 * - **no EXIF auto-rotation**: `PIL.Image.open` does not apply the EXIF orientation, and crop boxes
 *   are computed in the stored pixel grid. Originals with an orientation tag are therefore stored as
 *   a re-encoded PNG of the un-rotated pixels, so a viewer cannot show them rotated.
 *
 * Resampling (`resampler`): 'pillow' (default) = `pilResample.ts`, byte-identical to Pillow's
 * `Image.resize(size, BICUBIC)` (the reference's default resample), with WebAssembly SIMD kernels
 * (`pilResample.wat`; TS kernels where SIMD is missing), on worker threads for large images and in
 * event-loop-friendly bands otherwise; about as fast as libvips' own resize in the 4K pipeline
 * (tests/bench/imageops.bench.ts). 'libvips' =
 * sharp's `cubic` kernel: the same Catmull-Rom (a = -0.5) kernel, but libvips box-shrinks first for
 * reductions ≥ 2×, upsamples through a different path and rounds its fixed point differently: vs
 * Pillow, a mean |Δ| of ~0.2–0.3 levels (max ~9) on plain downscales and ~3.2 (max 81) on the bench's
 * near-1 zoom resize of a detailed image (tests/bench/imageops.bench.ts). Decoding (libjpeg-turbo /
 * mozjpeg, libpng, libwebp) gave pixels identical to Pillow 9.4 on the bench JPEG. Sizes never differ.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import sharp, { type Metadata, type Sharp } from 'sharp';
import type { MediaRef } from '../../app/contract/trajectory';
import type { EngineImage } from '../../app/engines/types';
import { isHeldRef, type ImageOps } from '../../app/tools/imageOps';
import type { MediaStore } from '../../app/workspace/mediaStore';
import { pilResizeBicubicRGBParallel } from './pilResampleParallel';

export interface ImageLimits {
  /** Refuse images with more pixels than this (header check, before decoding). */
  maxPixels: number;
  /** Refuse images with a side longer than this. */
  maxSide: number;
  /** Refuse files larger than this many bytes. */
  maxFileBytes: number;
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = { maxPixels: 100_000_000, maxSide: 20_000, maxFileBytes: 512 * 1024 * 1024 };

export type ImageErrorCode = 'too-large' | 'corrupt' | 'unsupported' | 'not-found' | 'bad-box' | 'bad-size';

/** An image problem a user can act on: names the file and what was wrong. */
export class ImageError extends Error {
  constructor(
    readonly code: ImageErrorCode,
    message: string,
    readonly file?: string,
  ) {
    super(message);
    this.name = 'ImageError';
  }
}

const ACCEPTED = new Set(['jpeg', 'png', 'webp', 'gif', 'tiff']);
const EXT: Record<string, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', gif: 'gif', tiff: 'tif' };
const MIME: Record<string, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', gif: 'image/gif', tiff: 'image/tiff' };

/** Decoded RGB pixels of a stored media file. */
interface Decoded {
  data: Buffer;
  width: number;
  height: number;
}

/** A stored image's pixels in the decode cache, with the PNG bytes it was stored as when this ImageOps wrote them. */
interface Remembered extends Decoded {
  png?: Buffer;
}

export interface SharpImageOpsOptions {
  limits?: Partial<ImageLimits>;
  /** Bytes of decoded pixels kept in memory, so a crop of a just-made image skips re-decoding. */
  cacheBytes?: number;
  /**
   * PNG zlib level for derived images (0–9), or 'auto' (default): level 1 where deflate pays, else
   * 0 (stored), decided from a sample of the rows (`pngLevelFor`). Every level is lossless.
   */
  pngCompressionLevel?: number | 'auto';
  /** 'pillow' (default): byte-identical to PIL BICUBIC; 'libvips': sharp's cubic, faster, not identical. */
  resampler?: 'pillow' | 'libvips';
  /**
   * Bytes of pixels of derived images held in memory and not yet kept (default 512 MiB). Past it, the oldest are
   * kept (written, as `keep` would) and their pixels dropped, so nothing held is ever lost.
   */
  heldBytes?: number;
}

/** Held ids of kept images remembered (what they were kept as); the oldest are forgotten past this many. */
const KEPT_IDS = 16384;

/** A derived image held in memory: its pixels, and once asked for, its PNG bytes and its stored ref. */
interface Held {
  d: Decoded;
  png?: Promise<Buffer>;
  kept?: Promise<MediaRef>;
}

const deflate = promisify(zlib.deflate);

/** Images smaller than this always get level 1 (deflating them costs little either way). */
const PNG_SAMPLE_MIN_BYTES = 1 << 20;
/** Sampled bands of rows, and about how many bytes each. */
const PNG_SAMPLE_BANDS = 4;
const PNG_SAMPLE_BAND_BYTES = 32 << 10;
/** Deflate must shrink the sample below this fraction for level 1 to be used. */
const PNG_DEFLATE_PAYS = 0.9;

/**
 * The zlib level for a derived PNG: 1 where deflate shrinks a sample of the rows (bands spread over
 * the image, unfiltered as the encoder writes them) below PNG_DEFLATE_PAYS, else 0 (stored).
 * Photos with sensor noise barely compress (the 3332×1876 resize of the bench's 4K JPEG: level 1 gave
 * 19.2 MB for 18.8 MB of pixels at ~11× the CPU of level 0), while screenshots, charts and
 * renders shrink 10-50×. The choice depends only on the pixels, so the same pixels always give
 * the same bytes (and media id).
 */
export async function pngLevelFor(data: Uint8Array, width: number, height: number): Promise<0 | 1> {
  if (data.length < PNG_SAMPLE_MIN_BYTES) return 1;
  const stride = width * 3;
  const rows = Math.max(1, Math.min(height, Math.ceil(PNG_SAMPLE_BAND_BYTES / stride)));
  const bands = Math.min(PNG_SAMPLE_BANDS, Math.floor(height / rows));
  const sample = Buffer.allocUnsafe(bands * rows * stride);
  for (let i = 0; i < bands; i++) {
    const y = Math.floor((i * (height - rows)) / Math.max(1, bands - 1));
    sample.set(data.subarray(y * stride, (y + rows) * stride), i * rows * stride);
  }
  const z = await deflate(sample, { level: 1 });
  return z.length < sample.length * PNG_DEFLATE_PAYS ? 1 : 0;
}

/** Bytes a decode-cache entry holds: its pixels and, for an image kept here, its PNG. */
const cachedSize = (r: Remembered) => r.data.length + (r.png?.length ?? 0);

function mp(w: number, h: number): string {
  return `${((w * h) / 1e6).toFixed(1)} MP`;
}

export class SharpImageOps implements ImageOps {
  readonly limits: ImageLimits;
  private readonly cacheBytes: number;
  private readonly pngLevel: number | 'auto';
  readonly resampler: 'pillow' | 'libvips';
  private readonly cache = new Map<string, Remembered>();
  private cached = 0;
  private readonly heldLimit: number;
  /** Derived images held in memory by held id, oldest first (`isHeldRef`). */
  private readonly held = new Map<string, Held>();
  private heldTotal = 0;
  /** Held ids whose image was kept and whose pixels left `held`: the stored ref they became. */
  private readonly keptAs = new Map<string, Promise<MediaRef>>();

  constructor(
    readonly media: MediaStore,
    opts: SharpImageOpsOptions = {},
  ) {
    this.limits = { ...DEFAULT_IMAGE_LIMITS, ...opts.limits };
    this.cacheBytes = opts.cacheBytes ?? 256 * 1024 * 1024;
    this.pngLevel = opts.pngCompressionLevel ?? 'auto';
    this.resampler = opts.resampler ?? 'pillow';
    this.heldLimit = opts.heldBytes ?? 512 * 1024 * 1024;
  }

  pathOf(ref: MediaRef): string {
    if (isHeldRef(ref)) throw new ImageError('not-found', `media ${ref.id} is held in memory and has no file yet; keep it first`);
    return this.media.pathOf(ref.id);
  }

  /** Hold derived pixels in memory under a new held id; nothing is encoded or written (see `keep`). */
  private hold(d: Decoded): MediaRef {
    const id = `mem-${randomBytes(12).toString('hex')}.png`;
    this.held.set(id, { d });
    this.heldTotal += d.data.length;
    // Over the limit: the oldest held images are kept (written) and leave memory; none is dropped unwritten.
    let excess = this.heldTotal - this.heldLimit;
    for (const [k, h] of this.held) {
      if (excess <= 0 || k === id) break;
      excess -= h.d.data.length;
      if (!h.kept) void this.keepHeld(k, h).catch(() => undefined); // a failure is reported to whoever keeps or reads it next
    }
    return { id, width: d.width, height: d.height, mime: 'image/png' };
  }

  private heldOf(ref: MediaRef): Held | undefined {
    return this.held.get(ref.id);
  }

  /** The PNG bytes a held image is stored as (encoded once: `keep` and an engine's data URL share them). */
  private pngOf(h: Held): Promise<Buffer> {
    h.png ??= this.encodePng(h.d);
    return h.png;
  }

  private keepHeld(id: string, h: Held): Promise<MediaRef> {
    h.kept ??= (async () => {
      const png = await this.pngOf(h);
      const put = await this.media.put(png, 'png');
      // The PNG stays with the pixels: an engine asking for the kept image's bytes gets them without a read back.
      this.remember(put.id, h.d, png);
      const ref: MediaRef = { id: put.id, width: h.d.width, height: h.d.height, mime: 'image/png' };
      this.keptAs.set(id, Promise.resolve(ref));
      // Bounded: a held id is used for the length of an episode, not forever (an old one then fails clearly).
      if (this.keptAs.size > KEPT_IDS) this.keptAs.delete(this.keptAs.keys().next().value!);
      if (this.held.delete(id)) this.heldTotal -= h.d.data.length;
      return ref;
    })();
    return h.kept;
  }

  keep(ref: MediaRef): Promise<MediaRef> {
    if (!isHeldRef(ref)) return Promise.resolve(ref);
    const h = this.heldOf(ref);
    if (h) return this.keepHeld(ref.id, h);
    return this.keptAs.get(ref.id) ?? Promise.reject(this.unknownHeld(ref));
  }

  private unknownHeld(ref: MediaRef): ImageError {
    return new ImageError('not-found', `media ${ref.id}: no image is held under this id here (held images live in the ImageOps that made them)`);
  }

  /** A held image's pixels (engines in this process read them instead of a file). */
  async pixelsOf(ref: MediaRef): Promise<Decoded> {
    const { data, width, height } = await this.decode(ref);
    return { data, width, height };
  }

  /** A held image's PNG bytes, the same bytes `keep` writes (from memory while the decode cache holds them). */
  async bytesOf(ref: MediaRef): Promise<Buffer> {
    const h = this.heldOf(ref);
    if (h) return this.pngOf(h);
    const kept = await this.keep(ref);
    return this.cache.get(kept.id)?.png ?? this.media.read(kept.id);
  }

  engineImage(ref: MediaRef): EngineImage {
    if (!isHeldRef(ref)) return { ...ref, path: this.pathOf(ref) };
    return { ...ref, pixels: () => this.pixelsOf(ref), bytes: () => this.bytesOf(ref) };
  }

  async importFile(file: string): Promise<MediaRef> {
    let stat;
    try {
      stat = await fsp.stat(file);
    } catch (err) {
      throw new ImageError('not-found', `${file}: cannot read the image (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, file);
    }
    if (!stat.isFile()) throw new ImageError('not-found', `${file}: not a file`, file);
    if (stat.size > this.limits.maxFileBytes) {
      throw new ImageError('too-large', `${file}: the file is ${(stat.size / 2 ** 20).toFixed(0)} MiB, over the ${(this.limits.maxFileBytes / 2 ** 20).toFixed(0)} MiB image file limit`, file);
    }
    return this.importBytesNamed(await fsp.readFile(file), file);
  }

  importBytes(bytes: Uint8Array): Promise<MediaRef> {
    if (bytes.length > this.limits.maxFileBytes) {
      return Promise.reject(new ImageError('too-large', `image bytes: ${bytes.length} bytes, over the ${this.limits.maxFileBytes}-byte limit`));
    }
    return this.importBytesNamed(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), '(image bytes)');
  }

  /** Read only the header and refuse what is unsupported or too large, before any decoding. */
  async inspect(bytes: Buffer, name: string): Promise<Metadata> {
    let meta: Metadata;
    try {
      meta = await sharp(bytes, { limitInputPixels: false }).metadata();
    } catch (err) {
      throw new ImageError('corrupt', `${name}: not a readable image (${(err as Error).message}); expected PNG, JPEG, WebP or GIF`, name);
    }
    const format = String(meta.format);
    if (!ACCEPTED.has(format)) throw new ImageError('unsupported', `${name}: unsupported image format "${format}"; use PNG, JPEG, WebP or GIF`, name);
    const w = meta.width;
    const h = meta.pageHeight ?? meta.height;
    if (!w || !h) throw new ImageError('corrupt', `${name}: the header has no image size`, name);
    const { maxPixels, maxSide } = this.limits;
    if (w * h > maxPixels || Math.max(w, h) > maxSide) {
      throw new ImageError(
        'too-large',
        `${name}: ${w}×${h} px (${mp(w, h)}) is over the image limit (${mp(maxPixels, 1)}, ${maxSide} px per side); refused without decoding. Downscale it first or raise the limit.`,
        name,
      );
    }
    return meta;
  }

  private pipeline(input: Buffer | string): Sharp {
    // failOn 'warning' (the default, made explicit) turns truncated/corrupt data into errors.
    return sharp(input, { pages: 1, failOn: 'warning', limitInputPixels: this.limits.maxPixels })
      .flatten({ background: { r: 255, g: 255, b: 255 } })
      .toColourspace('srgb')
      .removeAlpha();
  }

  private async importBytesNamed(bytes: Buffer, name: string): Promise<MediaRef> {
    const meta = await this.inspect(bytes, name);
    const format = String(meta.format);
    let decoded: Decoded;
    try {
      const { data, info } = await this.pipeline(bytes).raw().toBuffer({ resolveWithObject: true });
      decoded = { data, width: info.width, height: info.height };
    } catch (err) {
      throw new ImageError('corrupt', `${name}: the image data is corrupt or truncated (${(err as Error).message})`, name);
    }
    if (decoded.data.length !== decoded.width * decoded.height * 3) {
      throw new ImageError('corrupt', `${name}: decoded to an unexpected pixel layout`, name);
    }
    // Keep the exact original bytes when the pixels need no normalization; else store what the model sees.
    const asIs =
      (format === 'jpeg' || format === 'png' || format === 'webp') &&
      !meta.hasAlpha &&
      (meta.pages ?? 1) <= 1 &&
      (meta.orientation ?? 1) === 1 &&
      meta.space === 'srgb' &&
      (meta.depth === 'uchar' || meta.depth === undefined);
    if (asIs) {
      const put = await this.media.put(bytes, EXT[format] ?? format);
      this.remember(put.id, decoded);
      return { id: put.id, width: decoded.width, height: decoded.height, mime: MIME[format] ?? `image/${format}` };
    }
    return this.storeDecoded(decoded);
  }

  /** The PNG a derived image is stored as: deterministic, so the same pixels always give the same bytes (and id). */
  private async encodePng(d: Decoded): Promise<Buffer> {
    const level = this.pngLevel === 'auto' ? await pngLevelFor(d.data, d.width, d.height) : this.pngLevel;
    return sharp(d.data, { raw: { width: d.width, height: d.height, channels: 3 } })
      .png({ compressionLevel: level, adaptiveFiltering: false })
      .toBuffer();
  }

  /** Store decoded pixels at once (an import whose pixels needed normalizing: an original, not a derived image). */
  private async storeDecoded(d: Decoded): Promise<MediaRef> {
    const put = await this.media.put(await this.encodePng(d), 'png');
    this.remember(put.id, d);
    return { id: put.id, width: d.width, height: d.height, mime: 'image/png' };
  }

  private remember(id: string, d: Decoded, png?: Buffer): void {
    const entry: Remembered = png ? { ...d, png } : d;
    const size = cachedSize(entry);
    if (size > this.cacheBytes) return;
    const had = this.cache.get(id);
    if (had) {
      this.cache.delete(id);
      this.cached -= cachedSize(had);
    }
    this.cache.set(id, entry);
    this.cached += size;
    for (const [k, v] of this.cache) {
      if (this.cached <= this.cacheBytes) break;
      this.cache.delete(k);
      this.cached -= cachedSize(v);
    }
  }

  /** Decoded pixels of a held image or a stored media file (from the cache when recent). */
  async decode(ref: MediaRef): Promise<Decoded> {
    if (isHeldRef(ref)) {
      const h = this.heldOf(ref);
      if (h) return h.d;
      const kept = this.keptAs.get(ref.id);
      if (!kept) throw this.unknownHeld(ref);
      return this.decode(await kept);
    }
    const hit = this.cache.get(ref.id);
    if (hit) {
      this.cache.delete(ref.id);
      this.cache.set(ref.id, hit);
      return hit;
    }
    const file = this.pathOf(ref);
    let d: Decoded;
    try {
      const { data, info } = await this.pipeline(file).raw().toBuffer({ resolveWithObject: true });
      d = { data, width: info.width, height: info.height };
    } catch (err) {
      const missing = (err as Error).message.includes('missing') || !(await fsp.stat(file).then(() => true, () => false));
      throw new ImageError(missing ? 'not-found' : 'corrupt', `media ${ref.id}: cannot decode ${path.basename(file)} (${(err as Error).message})`, file);
    }
    this.remember(ref.id, d);
    return d;
  }

  async resize(src: MediaRef, width: number, height: number): Promise<MediaRef> {
    this.checkSize(`resize of ${src.id}`, width, height);
    const d = await this.decode(src);
    if (d.width === width && d.height === height) return { id: src.id, width, height, mime: src.mime ?? 'image/png' };
    return this.hold(await this.resizePixels(d, width, height));
  }

  private checkSize(what: string, width: number, height: number): void {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
      throw new ImageError('bad-size', `${what}: target size must be positive integers, got ${width}×${height}`);
    }
    if (width * height > this.limits.maxPixels || Math.max(width, height) > this.limits.maxSide) {
      throw new ImageError('too-large', `${what}: ${width}×${height} is over the image limit`);
    }
  }

  /** The pixels of `d` resized to width × height with the configured resampler (nothing stored). */
  private async resizePixels(d: Decoded, width: number, height: number): Promise<Decoded> {
    if (this.resampler === 'pillow') {
      const out = await pilResizeBicubicRGBParallel(d.data, d.width, d.height, width, height);
      return { data: Buffer.from(out.buffer, out.byteOffset, out.byteLength), width, height };
    }
    const { data, info } = await sharp(d.data, { raw: { width: d.width, height: d.height, channels: 3 } })
      .resize(width, height, { kernel: 'cubic', fit: 'fill' })
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height };
  }

  async crop(src: MediaRef, box: [number, number, number, number], size?: [number, number]): Promise<MediaRef> {
    const [l, t, r, b] = box;
    if (![l, t, r, b].every(Number.isInteger)) throw new ImageError('bad-box', `crop of ${src.id}: box must be integers, got [${box.join(', ')}]`);
    if (size) this.checkSize(`crop of ${src.id}`, size[0], size[1]);
    const d = await this.decode(src);
    if (l < 0 || t < 0 || r > d.width || b > d.height || r <= l || b <= t) {
      throw new ImageError('bad-box', `crop of ${src.id}: box [${box.join(', ')}] is empty or outside the ${d.width}×${d.height} image`);
    }
    // A row copy on this thread: a few MB at most for the crops the agent loop makes, cheaper than
    // a libvips pipeline's set-up and copies.
    const cw = r - l;
    const chh = b - t;
    const data = Buffer.allocUnsafe(cw * chh * 3);
    const rowBytes = cw * 3;
    for (let y = 0; y < chh; y++) {
      const from = ((t + y) * d.width + l) * 3;
      d.data.copy(data, y * rowBytes, from, from + rowBytes);
    }
    const cropped = { data, width: cw, height: chh };
    // With a size, the crop is an intermediate: only its resize is held.
    if (size && (size[0] !== cw || size[1] !== chh)) return this.hold(await this.resizePixels(cropped, size[0], size[1]));
    return this.hold(cropped);
  }
}

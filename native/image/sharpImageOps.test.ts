import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDeflate } from 'node:zlib';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MediaStore } from '../../app/workspace/mediaStore';
import { isHeldRef } from '../../app/tools/imageOps';
import { ImageError, SharpImageOps, pngLevelFor } from './sharpImageOps';
import { pilResizeBicubicRGB } from './pilResample';
import { noise } from '../../tests/support/noise';
import { findPillowPython } from './pillow';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, '..', '..', 'tests', 'fixtures', 'images');
const GLASS = path.join(fixtures, 'animate_glass.jpg');

let tmp: string;
let ops: SharpImageOps;
beforeEach(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-img-'));
  ops = new SharpImageOps(new MediaStore(path.join(tmp, 'media')));
});
afterEach(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** PNG chunk with CRC. */
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A complete, valid 1-bit grayscale PNG of w×h white pixels (compressed, so small on disk). */
async function bigPng(w: number, h: number): Promise<Buffer> {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // grayscale
  const stride = 1 + Math.ceil(w / 8);
  const rowsPerBlock = 2000;
  const block = Buffer.alloc(stride * rowsPerBlock, 0xff);
  for (let r = 0; r < rowsPerBlock; r++) block[r * stride] = 0; // filter byte: none
  const z = createDeflate({ level: 6 });
  const parts: Buffer[] = [];
  z.on('data', (d: Buffer) => parts.push(d));
  const done = new Promise<void>((r) => z.on('end', () => r()));
  for (let y = 0; y < h; y += rowsPerBlock) {
    const rows = Math.min(rowsPerBlock, h - y);
    if (!z.write(block.subarray(0, rows * stride))) await new Promise((r) => z.once('drain', r));
  }
  z.end();
  await done;
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, chunk('IHDR', ihdr), chunk('IDAT', Buffer.concat(parts)), chunk('IEND', Buffer.alloc(0))]);
}

async function rawOf(file: string): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

describe('SharpImageOps import', () => {
  it('imports a real JPEG as its exact bytes under its sha256', async () => {
    const ref = await ops.importFile(GLASS);
    const bytes = await fsp.readFile(GLASS);
    expect(ref).toEqual({ id: `${createHash('sha256').update(bytes).digest('hex')}.jpg`, width: 1920, height: 830, mime: 'image/jpeg' });
    expect(Buffer.compare(await fsp.readFile(ops.pathOf(ref)), bytes)).toBe(0);
    // Same bytes again: same id (dedupe).
    expect((await ops.importBytes(bytes)).id).toBe(ref.id);
  });

  it('flattens alpha onto white and stores RGB PNG', async () => {
    const w = 40, h = 30;
    const rgba = Buffer.alloc(w * h * 4);
    for (let i = 0; i < w * h; i++) {
      const x = i % w;
      rgba.set(x < 20 ? [200, 10, 10, 255] : [0, 0, 0, 0], i * 4);
    }
    const png = await sharp(rgba, { raw: { width: w, height: h, channels: 4 } }).png().toBuffer();
    const ref = await ops.importBytes(png);
    expect(ref.mime).toBe('image/png');
    const out = await rawOf(ops.pathOf(ref));
    expect(out.data.length).toBe(w * h * 3);
    expect([...out.data.subarray(0, 3)]).toEqual([200, 10, 10]);
    expect([...out.data.subarray((w - 1) * 3, w * 3)]).toEqual([255, 255, 255]);
  });

  it('takes the first frame of an animated GIF', async () => {
    const w = 16, h = 16;
    const frames = Buffer.alloc(w * h * 2 * 3);
    frames.fill(0, 0, w * h * 3); // frame 1 black
    frames.fill(255, w * h * 3); // frame 2 white
    const gif = await sharp(frames, { raw: { width: w, height: h * 2, channels: 3, pageHeight: h } }).gif().toBuffer();
    expect((await sharp(gif).metadata()).pages).toBe(2);
    const ref = await ops.importBytes(gif);
    expect([ref.width, ref.height, ref.mime]).toEqual([16, 16, 'image/png']);
    const out = await rawOf(ops.pathOf(ref));
    expect(Math.max(...out.data)).toBeLessThan(10);
  });

  it('imports WebP, grayscale and a JPEG named .png by content', async () => {
    const webp = path.join(tmp, 'x.webp');
    await sharp(GLASS).resize(200).webp({ lossless: true }).toFile(webp);
    expect(await ops.importFile(webp)).toMatchObject({ width: 200, mime: 'image/webp' });
    const gray = await sharp(GLASS).resize(64).grayscale().png().toBuffer();
    const g = await ops.importBytes(gray);
    expect(g.mime).toBe('image/png');
    expect((await sharp(ops.pathOf(g)).metadata()).channels).toBe(3);
    const misnamed = path.join(tmp, 'photo.png');
    await fsp.copyFile(GLASS, misnamed);
    expect((await ops.importFile(misnamed)).id.endsWith('.jpg')).toBe(true);
  });

  it('stores an EXIF-rotated JPEG un-rotated, as PIL sees it', async () => {
    const file = path.join(tmp, 'rot.jpg');
    await sharp(GLASS).resize(300, 100).jpeg().withMetadata({ orientation: 6 }).toFile(file);
    const ref = await ops.importFile(file);
    expect([ref.width, ref.height, ref.mime]).toEqual([300, 100, 'image/png']);
  });

  it('refuses a real 50 000 × 50 000 PNG from its header, without decoding', async () => {
    const file = path.join(tmp, 'bomb.png');
    const png = await bigPng(50_000, 50_000);
    await fsp.writeFile(file, png);
    const meta = await sharp(file, { limitInputPixels: false }).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([50_000, 50_000, 'png']);
    const before = process.memoryUsage().rss;
    const err = await ops.importFile(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageError);
    expect((err as ImageError).code).toBe('too-large');
    expect((err as ImageError).message).toContain(file);
    expect((err as ImageError).message).toContain('50000×50000 px (2500.0 MP)');
    // Decoding 2.5 GP as RGB would need 7.5 GB; the refusal allocates next to nothing.
    expect(process.memoryUsage().rss - before).toBeLessThan(500 * 2 ** 20);
    await expect(ops.importBytes(png)).rejects.toThrow(/\(image bytes\): 50000×50000/);
  });

  it('honours configurable limits (side and pixel count)', async () => {
    const small = new SharpImageOps(new MediaStore(path.join(tmp, 'm2')), { limits: { maxSide: 1000 } });
    await expect(small.importFile(GLASS)).rejects.toThrow(/1920×830 px .* over the image limit/);
    const fewPixels = new SharpImageOps(new MediaStore(path.join(tmp, 'm3')), { limits: { maxPixels: 1_000_000 } });
    await expect(fewPixels.importFile(GLASS)).rejects.toThrow(/1\.6 MP/);
  });

  it('gives clear errors for truncated, garbage and missing files', async () => {
    const bytes = await fsp.readFile(GLASS);
    const cut = path.join(tmp, 'cut.jpg');
    await fsp.writeFile(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const e1 = await ops.importFile(cut).then(() => { throw new Error('expected a failure'); }, (e: unknown) => e as ImageError);
    expect(e1.code).toBe('corrupt');
    expect(e1.message).toMatch(new RegExp(`${cut.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: the image data is corrupt or truncated`));
    const junk = path.join(tmp, 'junk.png');
    await fsp.writeFile(junk, Buffer.from('this is not an image at all'));
    await expect(ops.importFile(junk)).rejects.toThrow(/junk\.png: not a readable image/);
    const pngCut = path.join(tmp, 'cut.png');
    const png = await sharp(GLASS).png().toBuffer();
    await fsp.writeFile(pngCut, png.subarray(0, 5000));
    await expect(ops.importFile(pngCut)).rejects.toThrow(/cut\.png: the image data is corrupt or truncated/);
    await expect(ops.importFile(path.join(tmp, 'nope.jpg'))).rejects.toThrow(/nope\.jpg: cannot read the image \(ENOENT\)/);
    // Nothing half-written was left in the media store.
    const left = await fsp.readdir(path.join(tmp, 'media')).catch(() => []);
    expect(left).toEqual([]);
  });
});

describe('SharpImageOps crop and resize', () => {
  it('crops an integer box pixel-exactly', async () => {
    const ref = await ops.importFile(GLASS);
    const box: [number, number, number, number] = [1001, 203, 1333, 517];
    const crop = await ops.crop(ref, box);
    expect([crop.width, crop.height]).toEqual([332, 314]);
    const src = await rawOf(GLASS);
    const got = await rawOf(ops.pathOf(await ops.keep(crop)));
    // Independent expectation: copy the rows out of the fully decoded original.
    const want = Buffer.alloc(332 * 314 * 3);
    for (let y = 0; y < 314; y++) src.data.copy(want, y * 332 * 3, ((203 + y) * src.width + 1001) * 3, ((203 + y) * src.width + 1333) * 3);
    expect(Buffer.compare(got.data, want)).toBe(0);
  });

  it('refuses bad boxes and sizes with the media id in the message', async () => {
    const ref = await ops.importFile(GLASS);
    await expect(ops.crop(ref, [0, 0, 1921, 10])).rejects.toThrow(new RegExp(`crop of ${ref.id}: box \\[0, 0, 1921, 10\\] is empty or outside the 1920×830 image`));
    await expect(ops.crop(ref, [10, 10, 10, 20])).rejects.toThrow(/empty or outside/);
    await expect(ops.crop(ref, [0.5, 0, 10, 10])).rejects.toThrow(/must be integers/);
    await expect(ops.resize(ref, 0, 10)).rejects.toThrow(/positive integers/);
    await expect(ops.resize({ ...ref, id: 'f'.repeat(64) + '.png' }, 10, 10)).rejects.toThrow(/cannot decode/);
  });

  it('resizes to exactly w×h; same size is a no-op; survives a cold cache', async () => {
    const ref = await ops.importFile(GLASS);
    const r = await ops.resize(ref, 1316, 560);
    expect([r.width, r.height, r.mime]).toEqual([1316, 560, 'image/png']);
    const meta = await sharp(ops.pathOf(await ops.keep(r))).metadata();
    expect([meta.width, meta.height, meta.channels]).toEqual([1316, 560, 3]);
    expect(await ops.resize(r, 1316, 560)).toEqual(r);
    // A fresh instance (no cache) decodes from disk and produces the same bytes.
    const cold = new SharpImageOps(new MediaStore(path.join(tmp, 'media')), { cacheBytes: 0 });
    expect((await cold.keep(await cold.resize(ref, 1316, 560))).id).toBe((await ops.keep(r)).id);
  });

  it('crop with a size stores only the resized crop, with the bytes crop-then-resize gives', async () => {
    const ref = await ops.importFile(GLASS);
    const box: [number, number, number, number] = [1001, 203, 1333, 517];
    const fused = await ops.keep(await ops.crop(ref, box, [504, 476]));
    expect([fused.width, fused.height, fused.mime]).toEqual([504, 476, 'image/png']);
    // Only the original and the resized crop are in the store: the crop itself was never written.
    expect((await fsp.readdir(path.join(tmp, 'media'))).sort()).toEqual([ref.id, fused.id].sort());
    // Independent expectation: the crop's rows copied out of the decoded original, resized Pillow-exactly.
    const src = await rawOf(GLASS);
    const crop = Buffer.alloc(332 * 314 * 3);
    for (let y = 0; y < 314; y++) src.data.copy(crop, y * 332 * 3, ((203 + y) * src.width + 1001) * 3, ((203 + y) * src.width + 1333) * 3);
    const want = pilResizeBicubicRGB(crop, 332, 314, 504, 476);
    expect(Buffer.compare((await rawOf(ops.pathOf(fused))).data, Buffer.from(want))).toBe(0);
    // The two-step path gives the same media id; a size equal to the box is a plain crop.
    const twoStep = await ops.keep(await ops.resize(await ops.crop(ref, box), 504, 476));
    expect(twoStep.id).toBe(fused.id);
    expect((await ops.keep(await ops.crop(ref, box, [332, 314]))).id).toBe((await ops.keep(await ops.crop(ref, box))).id);
    await expect(ops.crop(ref, box, [0, 10])).rejects.toThrow(new RegExp(`crop of ${ref.id}: target size must be positive integers`));
  });

  it('stores noisy pixels as a stored (level 0) PNG and smooth ones deflated, both lossless and deterministic', async () => {
    const w = 1200;
    const h = 700;
    const noisy = Buffer.from(noise(w, h, 7));
    const smooth = Buffer.alloc(w * h * 3);
    for (let i = 0; i < smooth.length; i += 3) smooth[i] = (i / 3) % w & 255;
    expect(await pngLevelFor(noisy, w, h)).toBe(0);
    expect(await pngLevelFor(smooth, w, h)).toBe(1);
    const other = new SharpImageOps(new MediaStore(path.join(tmp, 'media2')));
    const stored: Record<string, number> = {};
    for (const [name, px] of [['noisy', noisy], ['smooth', smooth]] as const) {
      const png = await sharp(px, { raw: { width: w, height: h, channels: 3 } }).png().toBuffer();
      const a = await ops.importBytes(png);
      // A crop one row short is a derived image, encoded by the store; another instance encodes the same bytes.
      const d = await ops.keep(await ops.crop(a, [0, 0, w, h - 1]));
      expect((await other.keep(await other.crop(await other.importBytes(png), [0, 0, w, h - 1]))).id).toBe(d.id);
      expect(Buffer.compare((await rawOf(ops.pathOf(d))).data, px.subarray(0, w * (h - 1) * 3))).toBe(0);
      stored[name] = (await fsp.stat(ops.pathOf(d))).size;
    }
    expect(stored['noisy']).toBeGreaterThan(w * (h - 1) * 3);
    expect(stored['smooth']).toBeLessThan((w * (h - 1) * 3) / 10);
  });

  const py = findPillowPython();
  it.skipIf(!py)('resize gives exactly PIL BICUBIC bytes (downscale, upscale, mixed); libvips stays close', async () => {
    const ref = await ops.importFile(GLASS);
    const vips = new SharpImageOps(new MediaStore(path.join(tmp, 'media-vips')), { resampler: 'libvips' });
    const vref = await vips.importFile(GLASS);
    for (const [w, h] of [[812, 364], [2100, 900], [1904, 868]] as const) {
      const pilOut = path.join(tmp, `pil-${w}.png`);
      execFileSync(py!, ['-c', `import sys\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('RGB').resize((${w},${h}), Image.BICUBIC).save(sys.argv[2])`, GLASS, pilOut]);
      const theirs = await rawOf(pilOut);
      const ours = await rawOf(ops.pathOf(await ops.keep(await ops.resize(ref, w, h))));
      expect(Buffer.compare(ours.data, theirs.data)).toBe(0);
      const v = await rawOf(vips.pathOf(await vips.keep(await vips.resize(vref, w, h))));
      let sum = 0;
      for (let i = 0; i < v.data.length; i++) sum += Math.abs(v.data[i]! - theirs.data[i]!);
      expect(sum / v.data.length).toBeLessThan(3);
    }
  });
});

describe('SharpImageOps: derived images held in memory until kept', () => {
  const mediaFiles = async () => (await fsp.readdir(path.join(tmp, 'media')).catch(() => [] as string[])).filter((f) => !f.startsWith('.')).sort();

  it('never writes a derived image that is not kept; the next op and an engine read it from memory', async () => {
    const ref = await ops.importFile(GLASS);
    const r = await ops.resize(ref, 1316, 560);
    const c = await ops.crop(r, [100, 50, 600, 400], [700, 490]);
    const plain = await ops.crop(r, [0, 0, 10, 10]);
    for (const h of [r, c, plain]) expect(isHeldRef(h)).toBe(true);
    expect(isHeldRef(ref)).toBe(false);
    // What an engine gets: no file, the pixels and the PNG bytes on demand.
    const e = ops.engineImage(c);
    expect(e.path).toBeUndefined();
    const px = await e.pixels!();
    const png = await e.bytes!();
    expect(() => ops.pathOf(c)).toThrow(/held in memory and has no file yet; keep it first/);
    // Still only the original on disk: resize, crop, zoom, pixels and bytes wrote nothing.
    expect(await mediaFiles()).toEqual([ref.id]);
    // The same pixels and bytes a keep then writes (identical pixels whichever way an engine reads them).
    const kept = await ops.keep(c);
    expect(Buffer.compare(await fsp.readFile(ops.pathOf(kept)), Buffer.from(png))).toBe(0);
    expect(Buffer.compare((await rawOf(ops.pathOf(kept))).data, Buffer.from(px.data))).toBe(0);
    expect(ops.engineImage(kept)).toEqual({ ...kept, path: ops.pathOf(kept) });
    expect(await mediaFiles()).toEqual([ref.id, kept.id].sort());
  });

  it('writes a kept image exactly once, under the sha256 of its bytes, and finds it by either id afterwards', async () => {
    const ref = await ops.importFile(GLASS);
    const r = await ops.resize(ref, 812, 364);
    const puts: string[] = [];
    const media = ops.media;
    const put = media.put.bind(media);
    media.put = async (bytes, ext) => {
      const out = await put(bytes, ext);
      puts.push(out.id);
      return out;
    };
    try {
      const [a, b] = await Promise.all([ops.keep(r), ops.keep(r)]);
      const c = await ops.keep(r);
      expect(a).toEqual(b);
      expect(c).toEqual(a);
      expect(puts).toEqual([a.id]);
      expect(a.id).toBe(`${createHash('sha256').update(await fsp.readFile(ops.pathOf(a))).digest('hex')}.png`);
      expect(await ops.keep(a)).toBe(a);
      // The held id still works after the keep (the loop's lists hold it until the episode ends).
      const z1 = await ops.keep(await ops.crop(r, [10, 10, 300, 200], [400, 300]));
      const z2 = await ops.keep(await ops.crop(a, [10, 10, 300, 200], [400, 300]));
      expect(z1.id).toBe(z2.id);
    } finally {
      media.put = put;
    }
  });

  it('gives an engine the bytes of a kept image from memory, not read back from its file', async () => {
    const ref = await ops.importFile(GLASS);
    const r = await ops.resize(ref, 812, 364);
    const kept = await ops.keep(r); // the sweep's look-ahead keeps an image before its request is built
    const media = ops.media;
    const read = media.read.bind(media);
    const reads: string[] = [];
    media.read = async (id) => {
      reads.push(id);
      return read(id);
    };
    try {
      const png = await ops.engineImage(r).bytes!();
      expect(reads).toEqual([]);
      expect(Buffer.compare(Buffer.from(png), await fsp.readFile(ops.pathOf(kept)))).toBe(0);
      // Without room in the decode cache the bytes come from the file: the same bytes.
      const nocache = new SharpImageOps(media, { cacheBytes: 0 });
      const r2 = await nocache.resize(await nocache.importFile(GLASS), 812, 364);
      const k2 = await nocache.keep(r2);
      expect(k2.id).toBe(kept.id);
      expect(Buffer.compare(Buffer.from(await nocache.engineImage(r2).bytes!()), Buffer.from(png))).toBe(0);
      expect(reads).toEqual([kept.id]);
    } finally {
      media.read = read;
    }
  });

  it('past its held limit writes the oldest held images instead of dropping them', async () => {
    const small = new SharpImageOps(new MediaStore(path.join(tmp, 'media')), { heldBytes: 1_000_000, cacheBytes: 0 });
    const ref = await small.importFile(GLASS);
    const first = await small.resize(ref, 600, 300); // 540 000 bytes
    const second = await small.resize(ref, 601, 300); // over the limit: the first is written
    await expect.poll(async () => (await mediaFiles()).length, { timeout: 5000 }).toBe(2);
    // Both still usable by their held ids; the first now reads from its file.
    const k1 = await small.keep(first);
    expect(await mediaFiles()).toContain(k1.id);
    expect(isHeldRef(second)).toBe(true);
    expect((await small.crop(first, [0, 0, 10, 10])).width).toBe(10);
    await expect(small.keep({ ...first, id: 'mem-000000000000000000000000.png' })).rejects.toThrow(/no image is held under this id here/);
  });
});

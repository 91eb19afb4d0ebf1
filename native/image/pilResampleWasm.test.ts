import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script (no types); the test uses its two functions
import { OUT, WAT, assemble, moduleText } from '../../scripts/build-wasm.mjs';
import { findPillowPython } from './pillow';
import { pilResizeBicubicRGB, pilResizeBicubicRGBAsync, pilResizeBicubicRGBRows } from './pilResample';
import { wasmResampleAvailable, wasmResampleMemoryBytes } from './pilResampleWasm';
import { noise } from '../../tests/support/noise';

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;

describe('pilResample WebAssembly SIMD kernels', () => {
  it('run here (Node and Electron both have WebAssembly SIMD)', () => {
    expect(wasmResampleAvailable()).toBe(true);
  });

  it('the committed bytes are what pilResample.wat assembles to', async () => {
    const built = moduleText(await assemble(await fsp.readFile(WAT as string, 'utf8'))) as string;
    expect(built === (await fsp.readFile(OUT as string, 'utf8'))).toBe(true);
  });

  // Odd sizes, up/down/mixed scales, widths around the 16-byte vector and the 6-pixel cut-over to
  // the TS kernels, 1-pixel sides, one-axis resizes, large factors (long windows).
  const cases: Array<[number, number, number, number]> = [
    [301, 207, 297, 211], [97, 45, 31, 130], [64, 80, 64, 41], [50, 9, 203, 9], [13, 11, 6, 30], [13, 11, 5, 30],
    [7, 7, 6, 6], [6, 6, 7, 7], [1, 1, 9, 9], [9, 9, 1, 1], [257, 131, 1000, 1], [257, 131, 3, 2], [1, 131, 17, 40],
    [333, 1, 6, 1], [1003, 17, 101, 17], [17, 1003, 17, 99], [641, 479, 37, 23], [37, 23, 641, 479], [1936, 1291, 1932, 1288],
  ];

  it('give the TypeScript kernels\' bytes on odd, tiny, one-axis, up and down sizes', () => {
    for (const [w, h, ow, oh] of cases) {
      const n = noise(w, h, w * 31 + h);
      expect([w, h, ow, oh, same(pilResizeBicubicRGB(n, w, h, ow, oh), pilResizeBicubicRGB(n, w, h, ow, oh, 'ts'))]).toEqual([w, h, ow, oh, true]);
    }
  });

  it('extremes of the clip: black/white checkerboards overshoot and are clipped the same way', () => {
    const w = 41, h = 29;
    const src = new Uint8Array(w * h * 3);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) src.fill((x + y) & 1 ? 255 : 0, (y * w + x) * 3, (y * w + x) * 3 + 3);
    for (const [ow, oh] of [[97, 61], [40, 28], [20, 15], [123, 7], [83, 59]] as const) {
      const a = pilResizeBicubicRGB(src, w, h, ow, oh);
      expect(same(a, pilResizeBicubicRGB(src, w, h, ow, oh, 'ts'))).toBe(true);
      // upscales ring past both ends: the clip is exercised
      if (ow > w && oh > h) expect(a.includes(0) && a.includes(255)).toBe(true);
    }
  });

  it('bands and async slices give the whole image\'s bytes, and write only their rows', async () => {
    const [w, h, ow, oh] = [403, 287, 389, 301];
    const n = noise(w, h, 5);
    const whole = pilResizeBicubicRGB(n, w, h, ow, oh, 'ts');
    const out = new Uint8Array(ow * oh * 3).fill(211);
    const cuts = [0, 1, 2, 40, 41, 150, 299, oh];
    for (let i = cuts.length - 2; i >= 0; i--) pilResizeBicubicRGBRows(n, w, h, ow, oh, out, cuts[i]!, cuts[i + 1]!);
    expect(same(out, whole)).toBe(true);
    const band = new Uint8Array(ow * oh * 3).fill(211);
    pilResizeBicubicRGBRows(n, w, h, ow, oh, band, 40, 41);
    expect(band.subarray(0, 40 * ow * 3).every((v) => v === 211) && band.subarray(41 * ow * 3).every((v) => v === 211)).toBe(true);
    expect(same(await pilResizeBicubicRGBAsync(n, w, h, ow, oh, 50_000), whole)).toBe(true);
  });

  it('one huge resize, then a small one: the memory is given back and the results stay right', () => {
    // 6000×5000 up to 6200×5100 needs > 256 MB of kernel memory: the instance is dropped after it.
    const [w, h, ow, oh] = [6000, 5000, 6200, 5100];
    const src = new Uint8Array(w * h * 3);
    for (let i = 0; i < src.length; i += 4099) src[i] = 255;
    const big = pilResizeBicubicRGB(src, w, h, ow, oh);
    expect(wasmResampleMemoryBytes()).toBe(0);
    const row = 2000;
    const ref = new Uint8Array(ow * oh * 3);
    pilResizeBicubicRGBRows(src, w, h, ow, oh, ref, row, row + 1, undefined, 'ts');
    expect(same(big.subarray(row * ow * 3, (row + 1) * ow * 3), ref.subarray(row * ow * 3, (row + 1) * ow * 3))).toBe(true);
    const n = noise(90, 70, 3);
    expect(same(pilResizeBicubicRGB(n, 90, 70, 61, 83), pilResizeBicubicRGB(n, 90, 70, 61, 83, 'ts'))).toBe(true);
    expect(wasmResampleMemoryBytes()).toBeGreaterThan(0);
    expect(wasmResampleMemoryBytes()).toBeLessThan(1 << 20);
  });

  const py = findPillowPython();
  it.skipIf(!py)('match Pillow byte for byte on odd sizes, upscales and downscales (BICUBIC, the only filter the protocols use)', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pilwasm-'));
    try {
      for (const [i, [w, h]] of cases.entries()) await fsp.writeFile(path.join(dir, `in${i}`), noise(w, h, 700 + i));
      const script = `import sys\nfrom PIL import Image\nfor i,(w,h,a,b) in enumerate(${JSON.stringify(cases)}):\n    im=Image.frombytes('RGB',(w,h),open(sys.argv[1]+'/in'+str(i),'rb').read())\n    open(sys.argv[1]+'/out'+str(i),'wb').write(im.resize((a,b), Image.BICUBIC).tobytes())\n`;
      execFileSync(py!, ['-c', script, dir]);
      for (const [i, [w, h, ow, oh]] of cases.entries()) {
        const theirs = await fsp.readFile(path.join(dir, `out${i}`));
        const ours = pilResizeBicubicRGB(noise(w, h, 700 + i), w, h, ow, oh);
        expect([w, h, ow, oh, same(ours, theirs)]).toEqual([w, h, ow, oh, true]);
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findPillowPython } from './pillow';
import { pilResizeBicubicRGB, pilResizeBicubicRGBAsync, pilResizeBicubicRGBRows } from './pilResample';
import { noise } from '../../tests/support/noise';
import { precompute } from './pilCoeffs';

describe('pilResizeBicubicRGB', () => {
  it('keeps a flat image flat and the identity exact', () => {
    const flat = new Uint8Array(37 * 23 * 3).fill(77);
    expect(pilResizeBicubicRGB(flat, 37, 23, 101, 9).every((v) => v === 77)).toBe(true);
    const n = noise(13, 11, 1);
    expect(Buffer.compare(Buffer.from(pilResizeBicubicRGB(n, 13, 11, 13, 11)), Buffer.from(n))).toBe(0);
    expect(() => pilResizeBicubicRGB(n, 13, 12, 5, 5)).toThrow(/expected 13×12×3/);
  });

  it('remembered weights give the same bytes as fresh ones', () => {
    const n = noise(301, 207, 11);
    const first = pilResizeBicubicRGB(n, 301, 207, 140, 333);
    expect(precompute(301, 140)).toBe(precompute(301, 140));
    // Many other sizes push the pair out of the remembered ones; its weights are then computed again.
    for (let k = 1; k <= 80; k++) precompute(1000 + k, 500);
    const again = pilResizeBicubicRGB(n, 301, 207, 140, 333);
    const twice = pilResizeBicubicRGB(n, 301, 207, 140, 333);
    expect(Buffer.compare(Buffer.from(first), Buffer.from(again))).toBe(0);
    expect(Buffer.compare(Buffer.from(first), Buffer.from(twice))).toBe(0);
    const fresh = precompute(999, 333);
    expect(fresh).toEqual(precompute(999, 333));
  });

  it('the sliced async version gives the same bytes', async () => {
    const n = noise(301, 207, 7);
    const a = pilResizeBicubicRGB(n, 301, 207, 140, 333);
    const b = await pilResizeBicubicRGBAsync(n, 301, 207, 140, 333, 5_000);
    expect(Buffer.compare(Buffer.from(a), Buffer.from(b))).toBe(0);
  });

  it('any split of the output rows gives the same bytes', () => {
    for (const [w, h, ow, oh] of [[301, 207, 297, 211], [97, 45, 31, 130], [64, 80, 64, 41], [50, 9, 203, 9]] as const) {
      const n = noise(w, h, w + h);
      const whole = pilResizeBicubicRGB(n, w, h, ow, oh);
      for (const cuts of [[0, oh], [0, 1, oh], [0, oh >> 1, oh - 1, oh], [0, 3, 4, 17, oh].map((c) => Math.min(c, oh))]) {
        const out = new Uint8Array(ow * oh * 3).fill(211);
        // Bands in reverse order, so a band that wrote outside its rows would be overwritten or show.
        for (let i = cuts.length - 2; i >= 0; i--) pilResizeBicubicRGBRows(n, w, h, ow, oh, out, cuts[i]!, cuts[i + 1]!);
        expect([w, h, ow, oh, cuts.join(','), Buffer.compare(Buffer.from(out), Buffer.from(whole))]).toEqual([w, h, ow, oh, cuts.join(','), 0]);
      }
      const band = new Uint8Array(ow * oh * 3).fill(211);
      pilResizeBicubicRGBRows(n, w, h, ow, oh, band, 2, 5);
      expect(band.subarray(0, 2 * ow * 3).every((v) => v === 211)).toBe(true);
      expect(band.subarray(5 * ow * 3).every((v) => v === 211)).toBe(true);
    }
    expect(() => pilResizeBicubicRGBRows(noise(4, 4, 1), 4, 4, 5, 5, new Uint8Array(75), 3, 6)).toThrow(/bad rows/);
  });

  const py = findPillowPython();
  it.skipIf(!py)('matches Pillow byte for byte on noise, across down/up/mixed/extreme scales', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pilrs-'));
    try {
      const w = 257, h = 131;
      const src = noise(w, h, 42);
      const srcFile = path.join(dir, 'src.rgb');
      await fsp.writeFile(srcFile, src);
      const sizes: Array<[number, number]> = [[128, 65], [500, 300], [260, 100], [3, 2], [257, 7], [1, 131], [1000, 1], [199, 131], [252, 133], [261, 128], [257, 136], [254, 131]];
      const script = `import sys\nfrom PIL import Image\nw,h=${w},${h}\nim=Image.frombytes('RGB',(w,h),open(sys.argv[1],'rb').read())\nfor i,(a,b) in enumerate(${JSON.stringify(sizes)}):\n    open(sys.argv[2]+str(i),'wb').write(im.resize((a,b), Image.BICUBIC).tobytes())\n`;
      execFileSync(py!, ['-c', script, srcFile, path.join(dir, 'out')]);
      for (const [i, [ow, oh]] of sizes.entries()) {
        const theirs = await fsp.readFile(path.join(dir, `out${i}`));
        const ours = pilResizeBicubicRGB(src, w, h, ow, oh);
        expect([ow, oh, Buffer.compare(Buffer.from(ours), theirs)]).toEqual([ow, oh, 0]);
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  // The agent loop's resizes: a near-1 resize of a photo to multiples of 28 (slightly up on one axis
  // and down on the other), then the zoom of a crop.
  it.skipIf(!py)('matches Pillow byte for byte on the agent loop\'s resizes', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pilrs-'));
    try {
      const cases: Array<[number, number, number, number]> = [[1304, 869, 1316, 868], [1209, 1813, 1204, 1820], [234, 306, 392, 532], [444, 348, 532, 420], [1800, 1200, 406, 270]];
      for (const [i, [w, h]] of cases.entries()) await fsp.writeFile(path.join(dir, `in${i}`), noise(w, h, 100 + i));
      const script = `import sys\nfrom PIL import Image\nfor i,(w,h,a,b) in enumerate(${JSON.stringify(cases)}):\n    im=Image.frombytes('RGB',(w,h),open(sys.argv[1]+'/in'+str(i),'rb').read())\n    open(sys.argv[1]+'/out'+str(i),'wb').write(im.resize((a,b), Image.BICUBIC).tobytes())\n`;
      execFileSync(py!, ['-c', script, dir]);
      for (const [i, [w, h, ow, oh]] of cases.entries()) {
        const theirs = await fsp.readFile(path.join(dir, `out${i}`));
        const ours = pilResizeBicubicRGB(noise(w, h, 100 + i), w, h, ow, oh);
        expect([w, h, ow, oh, Buffer.compare(Buffer.from(ours), theirs)]).toEqual([w, h, ow, oh, 0]);
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

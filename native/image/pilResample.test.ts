import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findPillowPython } from './pillow';
import { pilResizeBicubicRGB, pilResizeBicubicRGBAsync } from './pilResample';

function noise(w: number, h: number, seed: number): Uint8Array {
  const out = new Uint8Array(w * h * 3);
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

describe('pilResizeBicubicRGB', () => {
  it('keeps a flat image flat and the identity exact', () => {
    const flat = new Uint8Array(37 * 23 * 3).fill(77);
    expect(pilResizeBicubicRGB(flat, 37, 23, 101, 9).every((v) => v === 77)).toBe(true);
    const n = noise(13, 11, 1);
    expect(Buffer.compare(Buffer.from(pilResizeBicubicRGB(n, 13, 11, 13, 11)), Buffer.from(n))).toBe(0);
    expect(() => pilResizeBicubicRGB(n, 13, 12, 5, 5)).toThrow(/expected 13×12×3/);
  });

  it('the sliced async version gives the same bytes', async () => {
    const n = noise(301, 207, 7);
    const a = pilResizeBicubicRGB(n, 301, 207, 140, 333);
    const b = await pilResizeBicubicRGBAsync(n, 301, 207, 140, 333, 5_000);
    expect(Buffer.compare(Buffer.from(a), Buffer.from(b))).toBe(0);
  });

  const py = findPillowPython();
  it.skipIf(!py)('matches Pillow byte for byte on noise, across down/up/mixed/extreme scales', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pilrs-'));
    try {
      const w = 257, h = 131;
      const src = noise(w, h, 42);
      const srcFile = path.join(dir, 'src.rgb');
      await fsp.writeFile(srcFile, src);
      const sizes: Array<[number, number]> = [[128, 65], [500, 300], [260, 100], [3, 2], [257, 7], [1, 131], [1000, 1], [199, 131]];
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
});

/** Same seed → byte-identical benchmark folder; another seed → different content. */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSynth, imageSampleRecord, imageScene, videoScene } from '../../../app/synth';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(p)));
    else out.push(p);
  }
  return out.sort();
}

const dirs: string[] = [];
async function fresh(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'loupe-synth-det-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('loupe-synth determinism', () => {
  it('the same seed writes identical bytes (images, jsonl, benchmark.json)', { timeout: 240_000 }, async () => {
    const a = await fresh();
    const b = await fresh();
    const opts = { seed: 42, n: 3 };
    await generateSynth(opts, a, sharpSynthRaster);
    await generateSynth(opts, b, sharpSynthRaster);
    const fa = (await listFiles(a)).map((f) => relative(a, f));
    const fb = (await listFiles(b)).map((f) => relative(b, f));
    expect(fa).toEqual(fb);
    expect(fa).toHaveLength(3 + 2);
    for (const f of fa) expect(Buffer.compare(await readFile(join(a, f)), await readFile(join(b, f))), f).toBe(0);
  });

  it('video scenes are identical for a seed, and their frames render to identical bytes', { timeout: 240_000 }, async () => {
    const v1 = videoScene({ seed: 42, n: 0 }, 0);
    const v2 = videoScene({ seed: 42, n: 0 }, 0);
    expect(v2).toEqual(v1);
    const f = (v1.target.frames[0] as number) - 1;
    for (const k of [f, (f + 5) % 16]) {
      const layout = { width: v1.width, height: v1.height, svg: v1.frames[k] as string, noiseSeed: v1.noiseSeed + k };
      expect(Buffer.compare(await sharpSynthRaster.renderScene(layout), await sharpSynthRaster.renderScene({ ...layout }))).toBe(0);
    }
  });

  it('sample i does not depend on n', () => {
    for (let i = 0; i < 4; i++) {
      const small = imageScene({ seed: 9, n: 4 }, i);
      const large = imageScene({ seed: 9, n: 40 }, i);
      expect(large).toEqual(small);
      expect(imageSampleRecord({ seed: 9, n: 40 }, i, large)).toEqual(imageSampleRecord({ seed: 9, n: 4 }, i, small));
    }
  });

  it('a different seed gives different scenes and different image bytes', { timeout: 120_000 }, async () => {
    const s1 = imageScene({ seed: 1, n: 1 }, 0);
    const s2 = imageScene({ seed: 2, n: 1 }, 0);
    expect(s1.layout.svg).not.toBe(s2.layout.svg);
    expect(Buffer.compare(await sharpSynthRaster.renderScene(s1.layout), await sharpSynthRaster.renderScene(s2.layout))).not.toBe(0);
  });

  it('rejects bad options with a clear message', async () => {
    const d = await fresh();
    await expect(generateSynth({ seed: -1, n: 1 }, d, sharpSynthRaster)).rejects.toThrow(/--seed must be a non-negative integer/);
    await expect(generateSynth({ seed: 1, n: 1.5 }, d, sharpSynthRaster)).rejects.toThrow(/--n must be/);
    await expect(generateSynth({ seed: 1, n: 1, kinds: ['nope' as never] }, d, sharpSynthRaster)).rejects.toThrow(/unknown kind "nope"/);
  });
});

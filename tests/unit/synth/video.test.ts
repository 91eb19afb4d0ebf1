/** Video samples: 16 frames on disk; the answer is visible in only the one or two recorded frames. */
import sharp from 'sharp';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TARGET_COLORS, VIDEO_FRAMES, generateSynth, videoScene, type GenerateResult } from '../../../app/synth';
import { countInOut, isBlue, isGreen, isRed, readTarget, type Pred, type RawImage } from './decode';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

let dir = '';
let res: GenerateResult;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loupe-synth-video-'));
  // One video sample on disk (ring-digits, the first video kind).
  res = await generateSynth({ seed: 21, n: 0, video: 1 }, dir, sharpSynthRaster);
}, 240_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function load(file: string): Promise<RawImage> {
  const { data, info } = await sharp(join(dir, file)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

describe('loupe-synth video', () => {
  it('writes 16 JPEG frames; the red ring is in the target box in the target frames only', { timeout: 240_000 }, async () => {
    const s = res.samples[0];
    if (!s) throw new Error('missing sample');
    expect(s.isVideo).toBe(true);
    expect(s.category).toBe('ring-digits');
    expect(s.frames).toHaveLength(VIDEO_FRAMES);
    const tf = s.target.frames ?? [];
    expect(tf.length === 1 || tf.length === 2).toBe(true);
    if (tf.length === 2) expect((tf[1] as number) - (tf[0] as number)).toBe(1);
    for (let f = 1; f <= VIDEO_FRAMES; f++) {
      const file = (s.frames ?? [])[f - 1] as string;
      expect((await stat(join(dir, file))).size).toBeGreaterThan(1000);
      const img = await load(file);
      expect([img.width, img.height]).toEqual([s.width, s.height]);
      const c = countInOut(img, s.target.px, isRed);
      if (tf.includes(f)) {
        expect(c.inside, `frame ${f}`).toBeGreaterThan(20);
        expect(readTarget(img, s)).toBe(s.answer);
      } else {
        expect(c.inside + c.outside, `frame ${f}`).toBe(0);
      }
    }
  });

  const kinds: Array<[number, string, Pred]> = [
    [1, TARGET_COLORS.tag, isBlue],
    [2, TARGET_COLORS.box, isGreen],
  ];
  for (const [index, hex, pred] of kinds) {
    it(`video kind ${index}: the target is drawn only in its frames; decoys never share them`, { timeout: 240_000 }, async () => {
      const v = videoScene({ seed: 21, n: 0 }, index);
      for (const d of v.decoys) for (const f of d.frames) expect(v.target.frames).not.toContain(f);
      v.frames.forEach((svg, k) => expect(svg.includes(hex), `frame ${k + 1}`).toBe(v.target.frames.includes(k + 1)));
      // Pixels: the target frame shows it, a frame without it does not.
      const tf = (v.target.frames[0] as number) - 1;
      const other = [...Array(VIDEO_FRAMES).keys()].find((k) => !v.target.frames.includes(k + 1)) as number;
      const on = await sharpSynthRaster.renderSceneRaw({ width: v.width, height: v.height, svg: v.frames[tf] as string, noiseSeed: v.noiseSeed + tf });
      const off = await sharpSynthRaster.renderSceneRaw({ width: v.width, height: v.height, svg: v.frames[other] as string, noiseSeed: v.noiseSeed + other });
      expect(countInOut(on, v.target.box, pred).inside).toBeGreaterThan(20);
      const offCount = countInOut(off, v.target.box, pred);
      expect(offCount.inside + offCount.outside).toBe(0);
      expect(readTarget(on, { category: v.kind, target: { px: v.target.box }, facts: v.facts })).toBe(v.answer);
    });
  }
});

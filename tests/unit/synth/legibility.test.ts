/**
 * The answer of every loupe-synth sample is readable from a crop of its target box — read back from real
 * rendered pixels by small decoders — and too small to read at the global view.
 */
import { describe, expect, it } from 'vitest';
import {
  ANSWER_LETTERS,
  BLOCK_FONT,
  SYNTH_GLOBAL_LONG_SIDE,
  imageSampleRecord,
  imageScene,
  type SynthOptions,
} from '../../../app/synth';
import { components, countInOut, isBlue, isGreen, isRed, isYellow, readTarget, type RawImage } from './decode';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

const opts: SynthOptions = { seed: 11, n: 12, easyFraction: 0 };

async function rendered(i: number) {
  const scene = imageScene(opts, i);
  const rec = imageSampleRecord(opts, i, scene);
  const img: RawImage = await sharpSynthRaster.renderSceneRaw(scene.layout);
  return { scene, rec, img };
}

describe('loupe-synth legibility after a crop', () => {
  it('answer letters fill the whole 5×7 grid (the letter reader relies on it)', () => {
    for (const ch of ANSWER_LETTERS) {
      const g = BLOCK_FONT[ch] as readonly string[];
      expect(g[0]?.includes('1') && g[6]?.includes('1'), ch).toBe(true);
      expect(g.some((r) => r[0] === '1') && g.some((r) => r[4] === '1'), ch).toBe(true);
    }
  });

  // 12 samples cycle the four kinds three times.
  for (let i = 0; i < 12; i++) {
    it(`sample ${i}: the target box holds a readable answer`, { timeout: 120_000 }, async () => {
      const { scene, rec, img } = await rendered(i);
      const L = Math.max(rec.width, rec.height);
      // Too small at the global view the difficulty is tuned for.
      expect(rec.needsZoom).toBe(true);
      expect(rec.detailPx * (SYNTH_GLOBAL_LONG_SIDE / L)).toBeLessThan(7.5);

      // The target colour appears only inside the target box (no clutter or decoy uses it).
      const colour = { 'ring-digits': isRed, 'tag-letter': isBlue, 'box-dots': isGreen, 'left-of': isYellow }[rec.category];
      const c = countInOut(img, rec.target.px, colour);
      expect(c.inside).toBeGreaterThan(20);
      if (rec.category !== 'left-of') expect(c.outside).toBe(0);
      // Read the answer back from the pixels inside the target box.
      expect(readTarget(img, rec)).toBe(rec.answer);
      if (rec.category === 'left-of') {
        const blobs = components(img, rec.target.px as [number, number, number, number], isYellow, 8).filter((b) => b.size > 100);
        expect(blobs).toHaveLength(2);
        expect(rec.options?.[rec.answer.charCodeAt(0) - 65]).toBe(scene.facts.left);
      }
    });
  }
});

/** loupe-synth covers its space: kinds, sizes, aspect ratios, positions, answers, option orders. */
import { describe, expect, it } from 'vitest';
import { SYNTH_KINDS, imageSampleRecord, imageScene, type SynthSample } from '../../../app/synth';

function samples(seed: number, n: number, kinds?: SynthSample['category'][]): SynthSample[] {
  const opts = { seed, n, kinds };
  return Array.from({ length: n }, (_, i) => imageSampleRecord(opts, i, imageScene(opts, i)));
}

describe('loupe-synth variety', () => {
  const all = samples(5, 40);

  it('cycles through every kind', () => {
    expect(new Set(all.map((s) => s.category))).toEqual(new Set(SYNTH_KINDS));
  });

  it('uses large images of several aspect ratios', () => {
    for (const s of all) {
      expect(Math.max(s.width, s.height)).toBeGreaterThanOrEqual(1000);
      expect(Math.max(s.width, s.height)).toBeLessThanOrEqual(2000);
    }
    const ratios = new Set(all.map((s) => (s.width / s.height).toFixed(2)));
    expect(ratios.size).toBeGreaterThanOrEqual(5);
    expect(all.some((s) => s.width > s.height) && all.some((s) => s.height > s.width)).toBe(true);
  });

  it('puts targets all over the image, small and inside bounds', () => {
    const cx = all.map((s) => (s.target.norm[0] + s.target.norm[2]) / 2);
    const cy = all.map((s) => (s.target.norm[1] + s.target.norm[3]) / 2);
    expect(Math.min(...cx)).toBeLessThan(0.3);
    expect(Math.max(...cx)).toBeGreaterThan(0.7);
    expect(Math.min(...cy)).toBeLessThan(0.3);
    expect(Math.max(...cy)).toBeGreaterThan(0.7);
    for (const s of all) {
      const [x1, y1, x2, y2] = s.target.px;
      expect(x1).toBeGreaterThanOrEqual(0);
      expect(y1).toBeGreaterThanOrEqual(0);
      expect(x2).toBeLessThanOrEqual(s.width);
      expect(y2).toBeLessThanOrEqual(s.height);
      // The normalized box is the pixel box over the size.
      expect(s.target.norm[0]).toBeCloseTo(x1 / s.width, 3);
      expect(s.target.norm[3]).toBeCloseTo(y2 / s.height, 3);
      if (s.needsZoom) expect(((x2 - x1) * (y2 - y1)) / (s.width * s.height)).toBeLessThan(0.02);
    }
  });

  it('has varied answers, decoys and a few easy samples', () => {
    expect(new Set(all.map((s) => s.answer)).size).toBeGreaterThanOrEqual(15);
    expect(all.every((s) => s.decoys.length >= 1)).toBe(true);
    const easy = samples(5, 200).filter((s) => !s.needsZoom).length;
    expect(easy).toBeGreaterThan(5);
    expect(easy).toBeLessThan(45);
  });

  it('shuffles multiple-choice options (both orders and both answer letters occur)', () => {
    const mc = samples(8, 24, ['left-of']);
    expect(mc.every((s) => s.options?.length === 2 && s.options.includes(String(s.answerText)))).toBe(true);
    expect(new Set(mc.map((s) => s.answer))).toEqual(new Set(['A', 'B']));
    expect(mc.every((s) => s.options?.[s.answer.charCodeAt(0) - 65] === s.answerText)).toBe(true);
  });

  it('digits, letters and counts span their ranges', () => {
    const ring = samples(3, 60, ['ring-digits']).map((s) => s.answer);
    expect(new Set(ring.map((a) => a.length))).toEqual(new Set([2, 3, 4]));
    expect(new Set(ring.join('').split('')).size).toBe(10);
    const dots = samples(3, 60, ['box-dots']).map((s) => Number(s.answer));
    expect(Math.min(...dots)).toBe(1);
    expect(Math.max(...dots)).toBe(9);
    expect(new Set(samples(3, 60, ['tag-letter']).map((s) => s.answer)).size).toBeGreaterThanOrEqual(12);
  });
});

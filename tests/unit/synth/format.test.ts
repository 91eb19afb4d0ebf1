/** A generated loupe-synth folder loads through the Loupe benchmark-format adapter unchanged. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SYNTH_VERSION, generateSynth, videoSampleRecord, videoScene } from '../../../app/synth';
import { LoupeSampleSchema } from '../../../app/bench/adapters/loupeFormat';
import { loupeSynthAdapter } from '../../../app/bench/adapters/loupeSynth';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('loupe-synth output format', () => {
  it('is read by the loupe-synth adapter with media, options, answers and extras', { timeout: 240_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'loupe-synth-fmt-'));
    const gen = await generateSynth({ seed: 4, n: 4 }, dir, sharpSynthRaster);
    const { samples, info } = await loupeSynthAdapter.load(dir);
    expect(info.format).toBe(`loupe-bench@${SYNTH_VERSION}`);
    expect(samples.map((s) => s.qid)).toEqual(gen.samples.map((s) => s.qid));
    for (const [i, s] of samples.entries()) {
      const g = gen.samples[i]!;
      expect(s.bench).toBe('loupe-synth');
      expect(s.category).toBe(g.category);
      expect(s.answer).toBe(g.answer);
      expect(s.isVideo).toBe(g.isVideo);
      expect(s.scorer).toBe('pr.boxed');
      if (g.isVideo) expect(s.media.frames).toHaveLength(16);
      else expect(s.media.images).toHaveLength(1);
      expect((s.extra as Record<string, unknown>).target).toEqual(g.target);
      if (g.options) expect(s.options).toEqual(g.options);
    }
  });
});

describe('loupe-synth video records', () => {
  it('match the Loupe sample schema with 16 frames', () => {
    const rec = videoSampleRecord({ seed: 4, n: 4 }, 0, videoScene({ seed: 4, n: 4 }, 0));
    const parsed = LoupeSampleSchema.parse(JSON.parse(JSON.stringify(rec)));
    expect(parsed.frames).toHaveLength(16);
    expect(parsed.isVideo).toBe(true);
    expect(rec.qid).toBe('synth-4-00004');
  });
});

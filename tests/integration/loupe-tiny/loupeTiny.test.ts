/**
 * loupe-tiny, the bundled model trained on loupe-synth (models/loupe-tiny/), run through Loupe's own local engine
 * (worker thread, onnxruntime-node, CPU) and agent loop (pixel-reasoner dialect, eval presets, greedy).
 *
 * On fixed held-out scenes (seed 9, never used in training) it must zoom before answering: a first turn that
 * is a parseable `crop_image_normalized` call on image 1 whose crop box contains the target box, the crop executed
 * without a tool error, and a final turn with a `\boxed{}` answer. On 12 more seed-9 scenes generated here, the first
 * crop must contain the target on at least 10 (the model card measures 40/40 on that seed). Whether the answer is right
 * is measured in the model card, not asserted here (the tiny model does not read the zoomed glyphs yet).
 */
import { promises as fsp, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEpisode } from '../../../app/agent';
import { generateSynth } from '../../../app/bench/loupe-synth/generate';
import type { SynthSample } from '../../../app/bench/loupe-synth/generate';
import { LocalEngine } from '../../../app/engines/local/localEngine';
import { getDialect } from '../../../app/protocol';
import { Workspace } from '../../../app/workspace';
import { workerThreadTransportFactory } from '../../../native/engine/workerThreadTransport';
import { SharpImageOps } from '../../../native/image/sharpImageOps';
import { scoreCrop, targetInModelFrame } from '../../../models/loupe-tiny/evaluate';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODEL = path.resolve(HERE, '../../../models/loupe-tiny/model');
const SCENES = path.resolve(HERE, '../../../models/loupe-tiny/examples');
const samples = readFileSync(path.join(SCENES, 'samples.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as SynthSample);

let tmp: string;
let ops: SharpImageOps;
let engine: LocalEngine;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-tiny-test-'));
  ops = new SharpImageOps((await new Workspace(tmp).init()).media);
  engine = await LocalEngine.start({ modelDir: MODEL, transport: workerThreadTransportFactory, dtype: 'q8' });
}, 60_000);
afterAll(async () => {
  await engine?.dispose();
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** One greedy trajectory of loupe-tiny on an image, as the Demo runs it (pixel-reasoner dialect, vcot, eval presets). */
function runScene(image: string, question: string): ReturnType<typeof runEpisode> {
  return runEpisode({
    engine,
    dialect: getDialect('pixel-reasoner'),
    media: { images: [image] },
    question,
    imageOps: ops,
    settings: { prompt: 'vcot', mode: 'eval', decoding: { temperature: 0, topP: 1, topK: -1 }, limits: { maxTokensPerTurn: 160 } },
  });
}

describe('loupe-tiny zooms before it answers (greedy, q8, CPU)', () => {
  it('has fixed scenes to run', () => {
    expect(samples.length).toBeGreaterThanOrEqual(3);
  });

  for (const s of samples) {
    it(`${s.qid} (${s.category}): crop call containing the target, then a boxed answer`, async () => {
      const t = await runScene(path.join(SCENES, s.image!), s.question);
      const first = t.turns[0];
      expect(first?.call?.name).toBe('crop_image_normalized');
      expect(first?.call?.error).toBeUndefined();
      expect(first?.call?.targetIndex).toBe(0);
      expect(first?.call?.bboxMode).toBe('normalized');
      expect(first?.call?.produced.length).toBe(1);
      const crop = scoreCrop(first!.call!.cropBox!, targetInModelFrame(s, t));
      expect(crop.contains).toBe(true);
      expect(t.stopReason).toBe('answer');
      const last = t.turns.at(-1)!;
      expect(last.call).toBeUndefined();
      expect(last.text).toMatch(/\\boxed\{[^}]+\}/);
    }, 60_000);
  }
});

describe('loupe-tiny crops the target on held-out scenes generated here (greedy, q8, CPU)', () => {
  it('first crop contains the target on at least 10 of 12 seed-9 scenes', async () => {
    const dir = path.join(tmp, 'seed9');
    const { samples: fresh } = await generateSynth({ seed: 9, n: 14, kinds: ['ring-digits', 'tag-letter'] }, dir);
    // the three committed examples are among the first 40 of seed 9: take 12 others
    const picked = fresh.filter((s) => !samples.some((e) => e.qid === s.qid)).slice(0, 12);
    expect(picked.length).toBe(12);
    const hits: string[] = [];
    for (const s of picked) {
      const t = await runScene(path.join(dir, s.image!), s.question);
      const box = t.turns[0]?.call?.cropBox;
      if (box && scoreCrop(box, targetInModelFrame(s, t)).contains) hits.push(s.qid);
    }
    expect(hits.length, `first crops containing the target: ${hits.join(', ')}`).toBeGreaterThanOrEqual(10);
  }, 180_000);
});

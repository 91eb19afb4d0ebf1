import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleRecord, Trajectory } from '../../../app/contract/trajectory';
import { getDialect } from '../../../app/protocol';
import { Workspace } from '../../../app/workspace';
import { isHeldRef, type ImageOps } from '../../../app/tools/imageOps';
import { SharpImageOps } from '../../../native/image/sharpImageOps';
import { pilResizeBicubicRGB } from '../../../native/image/pilResample';
import { countCalls, runEpisode, ScriptedEngine, type EpisodeEvent, type RunEpisodeOptions } from '../../../app/agent';

const here = path.dirname(fileURLToPath(import.meta.url));
const GLASS = path.join(here, '..', '..', 'fixtures', 'images', 'animate_glass.jpg');
const dialect = getDialect('pixel-reasoner');

let tmp: string;
let ws: Workspace;
let ops: SharpImageOps;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-agent-'));
  ws = await new Workspace(tmp).init();
  ops = new SharpImageOps(ws.media);
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const call = (name: string, args: unknown) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
const crop = (bbox: number[], target = 1) => call('crop_image_normalized', { bbox_2d: bbox, target_image: target });

async function raw(file: string): Promise<Buffer> {
  return sharp(file).removeAlpha().raw().toBuffer();
}

async function run(turns: ConstructorParameters<typeof ScriptedEngine>[0], extra: Partial<RunEpisodeOptions> = {}) {
  const engine = new ScriptedEngine(turns);
  const events: EpisodeEvent[] = [];
  const t = await runEpisode({
    engine,
    dialect,
    media: { images: [GLASS] },
    question: 'What color is the liquid in the glass?',
    imageOps: ops,
    onStep: (e) => events.push(e),
    ...extra,
  });
  return { t, engine, events };
}

describe('runEpisode with Pixel Reasoner on a real photo', () => {
  it('zooms with a real crop, then answers', async () => {
    const { t, engine, events } = await run([
      `The glass is in the middle.\n${crop([0.4, 0.3, 0.6, 0.7])}`,
      'The liquid is red.\n\\boxed{red}',
    ]);
    expect(t.stopReason).toBe('answer');
    expect(t.finalText).toBe('The liquid is red.\n\\boxed{red}');
    // Initial resize (eval preset 256·784..8000·784): 1920×830 → 1932×840.
    expect(t.originals[0]).toMatchObject({ width: 1920, height: 830 });
    expect(t.media[0]).toMatchObject({ width: 1932, height: 840 });
    const c = t.turns[0]!.call!;
    // Pad 0.1 and clamp → [0.3, 0.2, 0.7, 0.8] on 1932×840; PIL rounds half-even → [580, 168, 1352, 672].
    expect(c).toMatchObject({ name: 'crop_image_normalized', targetIndex: 0, bboxMode: 'normalized', bboxRaw: [0.4, 0.3, 0.6, 0.7], cropBox: [580, 168, 1352, 672] });
    expect(c.bboxPadded![0]).toBeCloseTo(0.3, 12);
    expect(c.bboxPadded![3]).toBeCloseTo(0.8, 12);
    // Zoom resize (eval 256·784..5120·784): 772×504 → 784×504.
    expect(c.produced).toHaveLength(1);
    expect(c.produced[0]).toMatchObject({ width: 784, height: 504 });
    expect(t.turns[0]!.observation).toBe('\nHere is the cropped image (Image Size: 784x504):');
    // The produced pixels are the box of the resized original, resized with PIL's bicubic.
    const box = await sharp(ops.pathOf(t.media[0]!)).extract({ left: 580, top: 168, width: 772, height: 504 }).raw().toBuffer();
    const expected = Buffer.from(pilResizeBicubicRGB(box, 772, 504, 784, 504));
    expect(Buffer.compare(await raw(ops.pathOf(c.produced[0]!)), expected)).toBe(0);

    // What the engine saw: the exact PR prompt, then the observation with the crop's file.
    const [r1, r2] = engine.requests;
    expect(r1!.prompt).toBe(
      `<|im_start|>system\n${dialect.systemPrompt('vcot')}<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What color is the liquid in the glass?\n\n\n\nGuidelines: Understand the given visual information and the user query. Determine if it is beneficial to employ the given visual operations (tools). For a video, we can look closer by \`select_frames\`. For an image, we can look closer by \`crop_image\`. Reason with the visual information step by step, and put your final answer within \\boxed{}.<|im_end|>\n<|im_start|>assistant\n`,
    );
    expect(r1!.temperature).toBe(0);
    expect(r1!.stop).toEqual(['<|im_end|>', '<|eot_id|>', '<|endoftext|>']);
    expect(r2!.prompt!.endsWith(`</tool_call><|im_end|>\n<|im_start|>user\n\nHere is the cropped image (Image Size: 784x504):<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n`)).toBe(true);
    const lastUser = r2!.messages.at(-1)!;
    expect(lastUser.role).toBe('user');
    const img = lastUser.content.find((x) => x.type === 'image');
    // The engine got the crop held in memory (no file on its path), with exactly the pixels and bytes then stored.
    if (!img || img.type !== 'image') throw new Error('no image in the observation');
    expect(img.image.path).toBeUndefined();
    expect(isHeldRef(img.image)).toBe(true);
    expect(Buffer.compare(Buffer.from((await img.image.pixels!()).data), expected)).toBe(0);
    expect(Buffer.compare(Buffer.from(await img.image.bytes!()), await fsp.readFile(ops.pathOf(c.produced[0]!)))).toBe(0);
    const first = r1!.messages[1]!.content.find((x) => x.type === 'image');
    expect(first && first.type === 'image' && isHeldRef(first.image)).toBe(true);
    // The trajectory and every event name only stored media: the files exist, named by their sha256.
    const named = [...t.media, ...t.originals, ...c.produced];
    for (const e of events) {
      if (e.type === 'episode-start') named.push(...e.media, ...e.originals);
      if (e.type === 'call-executed') named.push(...e.call.produced);
      if (e.type === 'turn-end') named.push(...(e.turn.call?.produced ?? []));
    }
    expect(named.length).toBe(3 + 2 + 1 + 1);
    for (const m of named) {
      expect(isHeldRef(m)).toBe(false);
      expect(m.id.split('.')[0]).toBe(createHash('sha256').update(await fsp.readFile(ops.pathOf(m))).digest('hex'));
    }

    // Events arrive in order, with token deltas that add up to each turn's text.
    const types = events.map((e) => e.type).filter((x) => x !== 'token');
    expect(types).toEqual(['episode-start', 'turn-start', 'call-planned', 'call-executed', 'turn-end', 'turn-start', 'turn-end', 'done']);
    const deltas = events.filter((e): e is Extract<EpisodeEvent, { type: 'token' }> => e.type === 'token' && e.turnIndex === 0).map((e) => e.delta).join('');
    expect(deltas).toBe(t.turns[0]!.text);
    expect(countCalls(t)).toEqual({ calls: 1, toolErrors: 0 });
  });

  it('absolute boxes, crops of crops, error observations and a malformed call all continue the episode', async () => {
    const { t, engine } = await run([
      crop([100, 50, 900, 700]),
      crop([0.1, 0.1, 0.5, 0.5], 2),
      crop([0.2, 0.2, 0.4, 0.4], 7),
      `<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.1, 0.1, 0.2}\n</tool_call>`,
      '\\boxed{red}',
    ], { settings: { limits: { maxCalls: 10 } } });
    expect(t.stopReason).toBe('answer');
    const [a, b, c, d] = t.turns.map((x) => x.call);
    expect(a).toMatchObject({ bboxMode: 'absolute', targetIndex: 0 });
    expect(a!.bboxNormalized![0]).toBeCloseTo(100 / 1932, 12);
    expect(b).toMatchObject({ targetIndex: 1, bboxMode: 'normalized' });
    expect(b!.produced).toHaveLength(1);
    expect(c!.error).toMatch(/^Execution Error: Incorrect `target_image` argument in `crop_image_normalized` operation\. You can only pick an image within \[1,3\]/);
    expect(c!.produced).toEqual([]);
    expect(t.turns[2]!.observation).toBe(`\nExecution error:\n${c!.error}\n`);
    expect(d!.error).toBeTruthy();
    expect(d!.name).toBeNull();
    expect(engine.requests[4]!.prompt).toContain(`<|im_start|>user\n\nExecution error:\n${d!.error}\n<|im_end|>`);
    expect(countCalls(t)).toEqual({ calls: 4, toolErrors: 2 });
    // The episode's images: original + 2 crops; the error turns added none.
    expect(engine.requests[4]!.messages.flatMap((m) => m.content).filter((x) => x.type === 'image')).toHaveLength(3);
  });

  it('select_frames on a video made of real frames, then a crop of a selected frame', async () => {
    const frames: string[] = [];
    for (let i = 0; i < 8; i++) {
      const f = path.join(tmp, `frame${i}.png`);
      await sharp(GLASS).extract({ left: i * 180, top: 100, width: 480, height: 270 }).png().toFile(f);
      frames.push(f);
    }
    const { t, engine } = await run(
      [call('select_frames', { target_frames: [2, 5] }), crop([0.25, 0.25, 0.75, 0.75], 3), 'It is red. \\boxed{red}'],
      { media: { videoFrames: frames } },
    );
    expect(t.stopReason).toBe('answer');
    expect(t.isVideo).toBe(true);
    // video_frame preset (4·784..512·784): 480×270 → 476×280.
    expect(t.media).toHaveLength(8);
    expect(t.media[0]).toMatchObject({ width: 476, height: 280 });
    const sel = t.turns[0]!.call!;
    expect(sel.frameIndices).toEqual([1, 4]);
    expect(sel.produced.map((p) => p.id)).toEqual([t.media[1]!.id, t.media[4]!.id]);
    expect(t.turns[0]!.observation).toBe('\nHere are the selected frames (Frame Size: 476x280, Numbered 1 to 2):');
    expect(engine.requests[0]!.prompt).toContain('<|vision_start|><|video_pad|><|vision_end|>');
    const first = engine.requests[0]!.messages[1]!.content[0]!;
    expect(first.type === 'video' && first.frames.length).toBe(8);
    // target_image 3 = the second selected frame (the video is entry 1).
    const c = t.turns[1]!.call!;
    expect(c.targetIndex).toBe(9);
    expect(c.produced[0]!.width * c.produced[0]!.height).toBeGreaterThanOrEqual(256 * 784);
    const [cw, ch] = [c.cropBox![2] - c.cropBox![0], c.cropBox![3] - c.cropBox![1]];
    const cut = await sharp(ops.pathOf(t.media[4]!)).extract({ left: c.cropBox![0], top: c.cropBox![1], width: cw, height: ch }).raw().toBuffer();
    const expected = Buffer.from(pilResizeBicubicRGB(cut, cw, ch, c.produced[0]!.width, c.produced[0]!.height));
    expect(Buffer.compare(await raw(ops.pathOf(c.produced[0]!)), expected)).toBe(0);
    // select_frames on an image question is an error observation.
    const onImage = await run([call('select_frames', { target_frames: [1] }), '\\boxed{x}']);
    expect(onImage.t.turns[0]!.call!.error).toMatch(/select_frames` from \*\*image\*\* not \*\*video\*\*/);
  });
});

describe('limits and stop reasons', () => {
  it('max_calls: the fifth tool turn is recorded but not run', async () => {
    const turns = Array.from({ length: 5 }, (_, i) => crop([0.1 + i * 0.05, 0.1, 0.6, 0.6]));
    const { t, engine } = await run([...turns, 'never reached']);
    expect(t.stopReason).toBe('max_calls');
    expect(engine.used).toBe(5);
    expect(t.turns).toHaveLength(5);
    expect(t.turns.slice(0, 4).every((x) => x.call!.produced.length === 1)).toBe(true);
    expect(t.turns[4]!.call).toMatchObject({ name: 'crop_image_normalized', produced: [] });
    expect(t.turns[4]!.observation).toBe('');
    expect(countCalls(t)).toEqual({ calls: 5, toolErrors: 1 });
  });

  it('max_images: the observation that would pass the limit is dropped', async () => {
    const { t } = await run([crop([0.1, 0.1, 0.6, 0.6]), crop([0.2, 0.2, 0.7, 0.7]), 'x'], { settings: { limits: { maxImages: 2 } } });
    expect(t.stopReason).toBe('max_images');
    expect(t.turns).toHaveLength(2);
    expect(t.turns[0]!.call!.produced).toHaveLength(1);
    expect(t.turns[1]!.call).toMatchObject({ produced: [], cropBox: expect.any(Array) });
    expect(t.turns[1]!.observation).toBe('');
    expect(countCalls(t)).toEqual({ calls: 2, toolErrors: 0 });
  });

  it('token_budget, length, engine_error, timeout and cancel end the episode with the partial trajectory', async () => {
    const budget = await run([{ text: crop([0.1, 0.1, 0.6, 0.6]), promptTokens: 12_000, completionTokens: 89 }]);
    expect(budget.t.stopReason).toBe('token_budget');
    expect(budget.t.turns[0]!.call!.produced).toEqual([]);

    const length = await run([{ text: 'I keep thinking and thinking', finishReason: 'length' }]);
    expect(length.t.stopReason).toBe('length');

    const failing = await run([crop([0.1, 0.1, 0.6, 0.6]), { text: '', error: 'HTTP 502 from the server' }]);
    expect(failing.t.stopReason).toBe('engine_error');
    expect(failing.t.error).toBe('engine failed on turn 1: HTTP 502 from the server');
    expect(failing.t.turns).toHaveLength(1);
    expect(failing.t.turns[0]!.call!.produced).toHaveLength(1);

    const slow = await run([crop([0.1, 0.1, 0.6, 0.6]), { text: 'late', delayMs: 10_000 }], { settings: { turnTimeoutMs: 100 } });
    expect(slow.t.stopReason).toBe('engine_error');
    expect(slow.t.error).toBe('engine call timed out after 100 ms (turn 1)');
    expect(slow.t.turns).toHaveLength(1);

    const ctrl = new AbortController();
    const cancelled = await run([crop([0.1, 0.1, 0.6, 0.6]), { text: 'late', delayMs: 10_000 }], {
      signal: ctrl.signal,
      onStep: (e) => {
        if (e.type === 'turn-start' && e.turnIndex === 1) setTimeout(() => ctrl.abort(), 20);
      },
    });
    expect(cancelled.t.stopReason).toBe('cancelled');
    expect(cancelled.t.error).toBeUndefined();
    expect(cancelled.t.turns).toHaveLength(1);

    const missing = await run([crop([0.1, 0.1, 0.6, 0.6])]);
    expect(missing.t.stopReason).toBe('engine_error');
    expect(missing.t.error).toMatch(/no recorded reply for turn 2/);

    const badFile = await run(['x'], { media: { images: [path.join(tmp, 'missing.jpg')] } });
    expect(badFile.t.stopReason).toBe('error');
    expect(badFile.t.error).toMatch(/preparing the question media: .*missing\.jpg: cannot read the image/);
  });

  it('train mode: train presets and decoding (T=1.0 first, 0.9 after)', async () => {
    const { t, engine } = await run([crop([0.4, 0.3, 0.6, 0.7]), '\\boxed{red}'], { settings: { mode: 'train' } });
    // train_initial 4·784..2000·784 = 1 568 000 px: 1932×840 would be 1 622 880, so it shrinks.
    const m = t.media[0]!;
    expect(m.width * m.height).toBeLessThanOrEqual(2000 * 784);
    expect([m.width % 28, m.height % 28]).toEqual([0, 0]);
    const z = t.turns[0]!.call!.produced[0]!;
    expect(z.width * z.height).toBeLessThanOrEqual(1000 * 784);
    expect(engine.requests.map((r) => [r.temperature, r.topP, r.topK])).toEqual([[1, 0.95, 40], [0.9, 0.95, 40]]);
  });
});

describe('step mode', () => {
  it('pauses before the call; the caller replaces it and the record is marked edited', async () => {
    const seen: number[] = [];
    const { t, engine } = await run([crop([0.4, 0.3, 0.6, 0.7]), '\\boxed{red}'], {
      stepHook: (ctx) => {
        seen.push(ctx.turnIndex);
        expect(ctx.plan.kind).toBe('crop');
        const raw = JSON.stringify({ name: 'crop_image_normalized', arguments: { bbox_2d: [0.0, 0.0, 0.5, 0.5], target_image: 1 } });
        return { call: { name: 'crop_image_normalized', arguments: { bbox_2d: [0.0, 0.0, 0.5, 0.5], target_image: 1 }, raw } };
      },
    });
    expect(seen).toEqual([0]);
    const c = t.turns[0]!.call!;
    expect(c.edited).toBe(true);
    expect(c.bboxRaw).toEqual([0, 0, 0.5, 0.5]);
    // [0,0,0.6,0.6] after padding/clamping on 1932×840 → [0, 0, 1159, 504] (1159.2 rounds to 1159).
    expect(c.cropBox).toEqual([0, 0, 1159, 504]);
    expect(t.turns[0]!.text).toContain('"bbox_2d":[0,0,0.5,0.5]');
    expect(engine.requests[1]!.prompt).toContain('"bbox_2d":[0,0,0.5,0.5]');
    const stopped = await run([crop([0.4, 0.3, 0.6, 0.7]), 'x'], { stepHook: () => ({ cancel: true }) });
    expect(stopped.t.stopReason).toBe('cancelled');
    expect(stopped.t.turns[0]!.call!.produced).toEqual([]);
  });
});

describe('trajectories in the run store', () => {
  it('an image the store cannot write ends the episode as an error saying so, naming no unstored image', async () => {
    const failing: ImageOps = {
      importFile: (p) => ops.importFile(p),
      importBytes: (b) => ops.importBytes(b),
      resize: (r, w, h) => ops.resize(r, w, h),
      crop: (r, b, z) => ops.crop(r, b, z),
      engineImage: (r) => ops.engineImage(r),
      pathOf: (r) => ops.pathOf(r),
      keep: async (r) => {
        if (isHeldRef(r)) throw new Error('ENOSPC: no space left on device, write');
        return r;
      },
    };
    const { t, events, engine } = await run([`Look.\n${crop([0.4, 0.3, 0.6, 0.7])}`, 'It is red.\n\\boxed{red}'], { imageOps: failing });
    // The engine still saw both images (from memory); what ran is kept in the trajectory, minus the unstored images.
    expect(engine.requests).toHaveLength(2);
    expect(t.stopReason).toBe('error');
    expect(t.error).toMatch(/^storing the episode's images: ENOSPC: no space left on device/);
    expect(t.turns).toHaveLength(2);
    expect(t.originals).toHaveLength(1);
    expect(t.media).toEqual([]);
    expect(t.turns[0]!.call!.produced).toEqual([]);
    const start = events.find((e) => e.type === 'episode-start');
    expect(start && start.type === 'episode-start' && start.media).toEqual([]);
    expect(events.at(-1)!.type).toBe('done');
  });

  it('writes each episode as a sample and reads it back identically', async () => {
    const runs: Trajectory[] = [];
    runs.push((await run([crop([0.4, 0.3, 0.6, 0.7]), '\\boxed{red}'])).t);
    runs.push((await run([crop([0.2, 0.2, 0.4, 0.4], 7), '\\boxed{blue}'])).t);
    runs.push((await run(Array.from({ length: 5 }, () => crop([0.1, 0.1, 0.6, 0.6])))).t);
    const handle = await ws.runs.createRun({ model: { id: 'scripted' }, engine: 'scripted', dialect: 'pixel-reasoner', prompt: 'vcot', minPixels: 256 * 784, maxPixels: 5120 * 784 });
    const written: SampleRecord[] = [];
    for (const [i, t] of runs.entries()) {
      const { calls, toolErrors } = countCalls(t);
      const pred = t.finalText ?? '';
      written.push(
        await handle.appendSample({
          qid: `demo-${i}`, bench: 'demo', question: t.question, answer: 'red', prediction: pred,
          score: pred.includes('red') ? 1 : 0, correct: pred.includes('red'), stop_reason: t.stopReason,
          calls, tool_errors: toolErrors, trajectory: t,
        }),
      );
    }
    await handle.close();
    const back = await ws.runs.readSamples(handle.id);
    expect(back.issues).toEqual([]);
    expect(back.records).toEqual(written);
    expect(back.records.map((r) => r.trajectory)).toEqual(runs);
    // Every media id a record names is a file in the workspace.
    for (const r of back.records) {
      for (const turn of r.trajectory!.turns) for (const m of turn.call?.produced ?? []) expect(await ws.media.has(m.id)).toBe(true);
    }
  });
});

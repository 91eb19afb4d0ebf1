/**
 * The Demo and Models handlers through the real core (createCore + dispatch, as every door uses it):
 * replay runs with real crops, step mode with an edited box and both branches kept, exports, a
 * stalled and a dropping engine (clear error, partial trajectory kept, core still usable), the local
 * tiny model, and bad input. No browser here; demo.e2e.test.ts drives the UI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { createCore, type Core } from '../../main/core';
import { editedCall } from '../../main/core/handlers/demo';
import type { CallPlan } from '../../app/protocol/types';
import type { DemoEvent, DemoRunReq, MediaRef, Trajectory } from '../../app/contract';
import { RunStore } from '../../app/workspace';
import { tempWorkspace } from './harness';
import { GLASS, GLASS_QUESTION, RECORDED_QID, RECORDED_RUN, writeRecordedRun } from './demo.fixture';

async function call<T = unknown>(core: Core, method: string, payload: unknown): Promise<T> {
  const r = await core.dispatch(method, payload);
  if (!r.ok) throw new Error(r.error.message);
  return r.result as T;
}

/** Collect a run's events until its last `done` (or an error with no done), answering pauses with `onPause`. */
function collect(core: Core, runIdP: Promise<string>, doneCount = 1, onPause?: (ev: Extract<DemoEvent, { type: 'paused' }>) => void): Promise<DemoEvent[]> {
  const events: DemoEvent[] = [];
  return new Promise((resolve) => {
    let id: string | null = null;
    const early: DemoEvent[] = [];
    const handle = (ev: DemoEvent) => {
      events.push(ev);
      if (ev.type === 'paused') onPause?.(ev);
      if (events.filter((e) => e.type === 'done').length === doneCount) {
        off();
        resolve(events);
      }
    };
    const off = core.onEvent((name, payload) => {
      if (name !== 'demo:event') return;
      const ev = payload as DemoEvent;
      if (id === null) early.push(ev);
      else if (ev.runId === id) handle(ev);
    });
    void runIdP.then((rid) => {
      id = rid;
      for (const ev of early.splice(0)) if (ev.runId === rid) handle(ev);
    });
  });
}

describe('demo core handlers', () => {
  let core: Core;
  let workspace: string;
  let glass: MediaRef;
  const replay = { kind: 'replay' as const, runId: RECORDED_RUN, qid: RECORDED_QID };

  beforeAll(async () => {
    workspace = tempWorkspace('loupe-demo-core-');
    await writeRecordedRun(workspace);
    core = await createCore({ workspace, transport: 'browser' });
    glass = (await call<{ media: MediaRef[] }>(core, 'demo:import', { paths: [GLASS] })).media[0]!;
  });
  afterAll(async () => {
    await core?.dispose();
  });

  const start = (req: Partial<DemoRunReq>) =>
    call<{ runId: string }>(core, 'demo:run', { media: [glass], question: GLASS_QUESTION, engine: replay, ...req }).then((r) => r.runId);

  it('imports the image and lists the recorded run as a replay source', async () => {
    expect(glass.width).toBe(1920);
    expect(fs.existsSync(path.join(workspace, 'media', glass.id))).toBe(true);
    const sources = await call<Array<{ runId: string; qid: string; calls: number; media: MediaRef[] }>>(core, 'demo:replaySources', {});
    const s = sources.find((x) => x.runId === RECORDED_RUN);
    expect(s?.qid).toBe(RECORDED_QID);
    expect(s?.calls).toBe(2);
    expect(s?.media.map((m) => m.id)).toEqual([glass.id]);
  });

  it('replays recorded text with real crops, streams every step and saves the run as kind demo', async () => {
    const runId = start({});
    const events = await collect(core, runId);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('start');
    expect(types).toContain('tokens');
    const calls = events.filter((e): e is Extract<DemoEvent, { type: 'call' }> => e.type === 'call');
    expect(calls).toHaveLength(2);
    const c0 = calls[0]!.call;
    expect(c0.bboxRaw).toEqual([0.42, 0.25, 0.58, 0.47]);
    expect(c0.bboxMode).toBe('normalized');
    expect(c0.targetIndex).toBe(0);
    expect(c0.produced).toHaveLength(1);
    expect(calls[1]!.call.targetIndex).toBe(1);
    // The crop is a real file with the size the observation names.
    const crop = c0.produced[0]!;
    const meta = await sharp(path.join(workspace, 'media', crop.id)).metadata();
    expect([meta.width, meta.height]).toEqual([crop.width, crop.height]);
    expect(calls[0]!.observation).toContain(`${crop.width}x${crop.height}`);
    const done = events.at(-1) as Extract<DemoEvent, { type: 'done' }>;
    expect(done.trajectory.stopReason).toBe('answer');
    expect(done.trajectory.finalText).toContain('\\boxed{green}');
    // Unsaved: in the Demo's scratch space, not among the runs.
    const store = new RunStore(path.join(workspace, 'demo'));
    expect(await new RunStore(path.join(workspace, 'runs')).hasRun(await runId)).toBe(false);
    const manifest = await store.readManifest(await runId);
    expect(manifest.kind).toBe('demo');
    expect(manifest.engine).toBe('replay');
    const { records } = await store.readSamples(await runId);
    expect(records).toHaveLength(1);
    expect(records[0]!.trajectory?.turns).toHaveLength(3);
  });

  it('step mode: pauses before each call, runs the edited box, keeps the original branch beside it', async () => {
    const paused: Array<Extract<DemoEvent, { type: 'paused' }>> = [];
    const runIdP = start({ stepMode: true });
    const events = await collect(core, runIdP, 2, (ev) => {
      paused.push(ev);
      const edit = ev.proposal.turnIndex === 0;
      void runIdP.then((runId) =>
        call(core, 'demo:continue', edit ? { runId, turnIndex: 0, action: 'edit', bbox: [0.5, 0.3, 0.6, 0.45] } : { runId, turnIndex: ev.proposal.turnIndex, action: 'run' }),
      );
    });
    expect(paused.map((p) => p.proposal.turnIndex)).toEqual([0, 1]);
    expect(paused[0]!.proposal.kind).toBe('crop');
    const startEv = events.find((e) => e.type === 'start') as Extract<DemoEvent, { type: 'start' }>;
    // The box refers to the image as the model saw it (after the initial resize), not the file.
    expect(paused[0]!.proposal.target?.id).toBe(startEv.media[0]!.id);
    expect(startEv.originals[0]!.id).toBe(glass.id);
    expect(paused[0]!.proposal.bboxRaw).toEqual([0.42, 0.25, 0.58, 0.47]);
    const runId = await runIdP;
    const got = await call<{ branches: Array<{ id: string; label: string; forkTurn?: number; trajectory: Trajectory }> }>(core, 'demo:get', { runId });
    expect(got.branches.map((b) => [b.id, b.label, b.forkTurn])).toEqual([
      ['b0', 'Edited', 0],
      ['b1', 'Original', undefined],
    ]);
    const edited = got.branches[0]!.trajectory.turns[0]!.call!;
    const original = got.branches[1]!.trajectory.turns[0]!.call!;
    expect(edited.edited).toBe(true);
    expect(edited.bboxRaw).toEqual([0.5, 0.3, 0.6, 0.45]);
    expect(original.bboxRaw).toEqual([0.42, 0.25, 0.58, 0.47]);
    expect(edited.produced[0]!.id).not.toBe(original.produced[0]!.id);
    // The conversation carries the edited call, so the model continues from it.
    expect(got.branches[0]!.trajectory.turns[0]!.text).toContain('[0.5, 0.3, 0.6, 0.45]');
    expect(events.filter((e) => e.type === 'done')).toHaveLength(2);
  });

  it('refuses a bad edit with a message naming the box, and stop ends a paused run as cancelled', async () => {
    const runIdP = start({ stepMode: true });
    let bad = '';
    const events = await collect(core, runIdP, 1, (ev) => {
      void runIdP.then(async (runId) => {
        bad = await call(core, 'demo:continue', { runId, turnIndex: ev.proposal.turnIndex, action: 'edit', bbox: [0.5, 0.5, 0.5, 0.9] }).then(
          () => 'accepted',
          (e: Error) => e.message,
        );
        await call(core, 'demo:stop', { runId });
      });
    });
    expect(bad).toContain('[0.5,0.5,0.5,0.9] is empty');
    const done = events.at(-1) as Extract<DemoEvent, { type: 'done' }>;
    expect(done.trajectory.stopReason).toBe('cancelled');
    expect(done.trajectory.turns).toHaveLength(1);
  });

  it('exports a self-contained HTML page and animated WebP and GIF with more than one frame', async () => {
    const runId = await start({});
    await collect(core, Promise.resolve(runId));
    const html = await call<{ path: string; bytes: number }>(core, 'demo:export', { runId, format: 'html' });
    const text = fs.readFileSync(html.path, 'utf8');
    const inlined = text.match(/src="data:image\/(png|jpeg);base64,/g) ?? [];
    // The question image, then per step the target image and its crop: 1 + 2 + 2.
    expect(inlined.length).toBe(5);
    expect(text).not.toMatch(/src="(https?:|\/media)/);
    for (const format of ['webp', 'gif'] as const) {
      const anim = await call<{ path: string; frames: number }>(core, 'demo:export', { runId, format });
      const meta = await sharp(anim.path, { animated: true }).metadata();
      expect(meta.format).toBe(format);
      expect(meta.pages).toBe(anim.frames);
      expect(meta.pages).toBeGreaterThan(1);
    }
  });

  it('a stalled engine ends the run with a clear error, keeps the streamed text, and the core stays usable', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = http.createServer((req, res) => {
      if (!req.url?.includes('/chat/completions')) return void res.writeHead(404).end();
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'x', object: 'chat.completion.chunk', created: 0, model: 'stall', choices: [{ index: 0, delta: { content: 'Let me look at the ' }, finish_reason: null }] };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      // …and then nothing: a stalled server.
    });
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    try {
      const events = await collect(core, start({ engine: { kind: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, model: 'stall' }, settings: { temperature: 0, turnTimeoutMs: 1500 } }));
      const err = events.find((e) => e.type === 'error') as Extract<DemoEvent, { type: 'error' }>;
      expect(err.message).toMatch(/timed out|idle|stalled|no data/i);
      const done = events.at(-1) as Extract<DemoEvent, { type: 'done' }>;
      expect(done.trajectory.stopReason).toBe('engine_error');
      expect(done.trajectory.turns[0]?.text).toBe('Let me look at the ');
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
    const after = await collect(core, start({}));
    expect((after.at(-1) as Extract<DemoEvent, { type: 'done' }>).trajectory.stopReason).toBe('answer');
  });

  it('an engine whose connection dies mid-answer ends the run with the error and keeps the streamed text', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'x', object: 'chat.completion.chunk', created: 0, model: 'crash', choices: [{ index: 0, delta: { content: 'The glass is ' }, finish_reason: null }] };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      setTimeout(() => res.socket?.destroy(), 50); // the server process "crashes"
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const events = await collect(core, start({ engine: { kind: 'openai', baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, model: 'crash' } }));
      const err = events.find((e) => e.type === 'error') as Extract<DemoEvent, { type: 'error' }>;
      expect(err.message).toMatch(/engine failed on turn 0/);
      const done = events.at(-1) as Extract<DemoEvent, { type: 'done' }>;
      expect(done.trajectory.stopReason).toBe('engine_error');
      expect(done.trajectory.turns[0]?.text).toBe('The glass is ');
      const { records } = await new RunStore(path.join(workspace, 'demo')).readSamples(done.runId);
      expect(records[0]?.trajectory?.turns[0]?.text).toBe('The glass is ');
    } finally {
      server.close();
    }
  });

  it('lists the bundled tiny model, loads it on the CPU, runs it, and unloads it', async () => {
    const list = await call<{ models: Array<{ id: string; bundled: boolean; dtypes: string[]; sizeBytes: number }> }>(core, 'models:list', {});
    const tiny = list.models.find((m) => m.id === 'tiny-random-qwen25vl');
    expect(tiny?.bundled).toBe(true);
    expect(tiny?.dtypes).toContain('fp32');
    const states: string[] = [];
    const off = core.onEvent((name, p) => {
      if (name === 'engine:state') states.push((p as { status: string }).status);
    });
    const loaded = await call<{ device: string | null }>(core, 'models:load', { id: 'tiny-random-qwen25vl', device: 'cpu' });
    expect(loaded.device).toBe('cpu');
    const events = await collect(core, start({ engine: { kind: 'local', modelId: 'tiny-random-qwen25vl' }, settings: { temperature: 0, maxTokensPerTurn: 12, maxPixels: 200704 } }));
    const done = events.at(-1) as Extract<DemoEvent, { type: 'done' }>;
    expect(done.trajectory.turns.length).toBeGreaterThan(0);
    expect(done.trajectory.turns[0]!.completionTokens).toBeGreaterThan(0);
    expect(await call(core, 'models:unload', {})).toEqual({ unloaded: true });
    off();
    expect(states).toEqual(expect.arrayContaining(['loading', 'ready', 'busy', 'idle']));
  });

  it('lists loupe-tiny as bundled and runs it on a loupe-synth scene: a real crop call, a crop, a boxed answer', async () => {
    const list = await call<{ models: Array<{ id: string; bundled: boolean; dtypes: string[] }> }>(core, 'models:list', {});
    const lt = list.models.find((m) => m.id === 'loupe-tiny');
    expect(lt?.bundled).toBe(true);
    expect(lt?.dtypes).toEqual(['q8']);
    const scenes = path.resolve(import.meta.dirname, '../../models/loupe-tiny/examples');
    const sample = JSON.parse(fs.readFileSync(path.join(scenes, 'samples.jsonl'), 'utf8').split('\n')[1]!) as { image: string; question: string };
    const scene = (await call<{ media: MediaRef[] }>(core, 'demo:import', { paths: [path.join(scenes, sample.image)] })).media[0]!;
    const events = await collect(core, start({ media: [scene], question: sample.question, engine: { kind: 'local', modelId: 'loupe-tiny' }, settings: { temperature: 0 } }));
    const done = events.at(-1) as Extract<DemoEvent, { type: 'done' }>;
    const t = done.trajectory;
    expect(t.turns[0]?.call?.name, JSON.stringify({ stop: t.stopReason, error: t.error, turns: t.turns.map((u) => u.text.slice(0, 200)) })).toBe('crop_image_normalized');
    expect(t.turns[0]?.call?.error).toBeUndefined();
    expect(t.turns[0]?.call?.produced.length).toBe(1);
    expect(t.turns.at(-1)?.text).toMatch(/\\boxed\{[^}]+\}/);
    expect(await call(core, 'models:unload', {})).toEqual({ unloaded: true });
  });

  it('validates a model folder and names the missing files', async () => {
    const dir = fs.mkdtempSync(path.join(workspace, 'badmodel-'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'qwen2_5_vl' }));
    const report = await call<{ ok: boolean; errors: string[] }>(core, 'models:validate', { path: dir });
    expect(report.ok).toBe(false);
    expect(report.errors.join('\n')).toMatch(/tokenizer|onnx/);
    await expect(call(core, 'models:add', { path: dir })).rejects.toThrow(/not a usable model folder/);
  });

  it('bad input is an error naming what and where', async () => {
    await expect(call(core, 'demo:import', { paths: ['/nonexistent/x.jpg'] })).rejects.toThrow('/nonexistent/x.jpg: no such file or folder');
    await expect(call(core, 'demo:import', { paths: [path.join(workspace, 'clip.mp4')] })).rejects.toThrow(/no such file/);
    fs.writeFileSync(path.join(workspace, 'clip.mp4'), 'x');
    await expect(call(core, 'demo:import', { paths: [path.join(workspace, 'clip.mp4')] })).rejects.toThrow(/extract frames to a folder/);
    await expect(call(core, 'demo:run', { media: [glass], question: '', engine: replay })).rejects.toThrow(/question/);
    await expect(call(core, 'demo:run', { media: [glass], question: 'q', engine: { kind: 'replay', runId: 'nope', qid: 'x' } }).then((r) => collect(core, Promise.resolve((r as { runId: string }).runId)))).resolves.toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'error', message: expect.stringContaining('run nope') })]),
    );
  });

  it('imports a folder of frames as a video, in natural order', async () => {
    const dir = fs.mkdtempSync(path.join(workspace, 'frames-'));
    for (const i of [1, 2, 10]) await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: i * 20, g: 0, b: 0 } } }).png().toFile(path.join(dir, `f${i}.png`));
    const r = await call<{ media: MediaRef[]; isVideo: boolean }>(core, 'demo:import', { paths: [dir] });
    expect(r.isVideo).toBe(true);
    expect(r.media).toHaveLength(3);
    const reds = await Promise.all(r.media.map(async (m) => (await sharp(path.join(workspace, 'media', m.id)).raw().toBuffer())[0]));
    expect(reds).toEqual([20, 40, 200]);
  });

  it('an edited box is written back in the model\'s own convention, keeping its other arguments and whitespace', () => {
    const target = { source: 'images' as const, index: 0, size: [1000, 500] as [number, number] };
    const plan = (mode: 'normalized' | 'absolute'): CallPlan => ({ kind: 'crop', target, bboxMode: mode, bboxRaw: [0, 0, 1, 1], normalizedBox: [0, 0, 1, 1], cropBoxFloat: [0, 0, 1, 1], cropBox: [0, 0, 1, 1], cropSize: [1, 1], resizedSize: [1, 1], observation: '', imagesAfter: 2, exceedsMaxImages: false });
    const original = { name: 'image_zoom_in_tool', arguments: { bbox_2d: [10, 20, 30, 40], label: 'cap' }, raw: '\n{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [10, 20, 30, 40], "label": "cap"}}\n' };
    const abs = editedCall(original, plan('absolute'), [0.3, 0.4, 0.1, 0.2], 'x');
    expect(abs.arguments).toEqual({ bbox_2d: [100, 100, 300, 200], label: 'cap' });
    expect(abs.raw).toBe('\n{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [100, 100, 300, 200], "label": "cap"}}\n');
    const norm = editedCall({ ...original, name: 'crop_image_normalized', arguments: { bbox_2d: [0.1, 0.1, 0.2, 0.2], target_image: 1 } }, plan('normalized'), [0.12345, 0.5, 1, 1], 'x');
    // Every value stays below 1, or Pixel Reasoner would read the box as absolute pixels.
    expect(norm.arguments).toEqual({ bbox_2d: [0.123, 0.5, 0.999, 0.999], target_image: 1 });
  });
});

/**
 * The sweep runner in-process: cancel (AbortSignal) keeps finished samples and records no unfinished one,
 * `retryErrors` re-runs errored samples leaving one record per qid, a failing engine stops the run instead of
 * filling it with errors, progress events count up with an ETA, and a multi-run plan resumes by id. Real images
 * (made with sharp), real crops, real scorers; the engines replay recorded text.
 */
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, GenerateRequest } from '../../../app/engines/types';
import { EngineError } from '../../../app/engines/errors';
import { expandPlan, type ModelSpec } from '../../../app/sweeps/plan';
import { runSweep, WRITER_LOCK, type EngineFactory, type ReplayBook, replayEngine, type SweepEvent, loadRunGroup, summarize } from '../../../app/sweeps/runner';
import { Workspace } from '../../../app/workspace';
import { SharpImageOps } from '../../../native/image/sharpImageOps';

const N = 6;
let tmp: string;
let data: string;
const crop = (b: number[]) => `Let me zoom in.\n<tool_call>\n${JSON.stringify({ name: 'crop_image_normalized', arguments: { bbox_2d: b, target_image: 1 } })}\n</tool_call>`;

/** A replay book answering sample i with `\boxed{<answer>}` after one crop (sample 2 answers wrong). */
function book(skip: string[] = [], delayMs = 0): ReplayBook {
  const byQid = new Map<string, Array<{ text: string; delayMs?: number }>>();
  for (let i = 0; i < N; i++) {
    const qid = `q${i}`;
    if (skip.includes(qid)) continue;
    byQid.set(qid, [
      { text: crop([0.1, 0.1, 0.5, 0.5]), delayMs },
      { text: `The count is \\boxed{${i === 2 ? 99 : i + 1}}.`, delayMs },
    ]);
  }
  return { file: 'inline', byQid };
}

function replayFactory(b: () => ReplayBook, concurrency = 2): EngineFactory {
  return async () => {
    const bk = b();
    return { info: { id: 'replay:test', kind: 'scripted', model: 'replay' }, engineFor: (s) => replayEngine(bk, s.qid), concurrency, dispose: async () => undefined };
  };
}

const model: ModelSpec = { kind: 'replay', file: 'inline', name: 'replay' };

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-runner-'));
  data = path.join(tmp, 'bench');
  await fsp.mkdir(path.join(data, 'images'), { recursive: true });
  await fsp.writeFile(path.join(data, 'benchmark.json'), JSON.stringify({ id: 'mini', version: 1, scorer: 'pr.boxed' }));
  const lines: string[] = [];
  for (let i = 0; i < N; i++) {
    await sharp({ create: { width: 640 + 16 * i, height: 480, channels: 3, background: { r: 40 * i, g: 120, b: 200 } } })
      .png()
      .toFile(path.join(data, 'images', `q${i}.png`));
    lines.push(JSON.stringify({ qid: `q${i}`, category: i % 2 ? 'odd' : 'even', question: `How many things? (${i})`, answer: String(i + 1), image: `images/q${i}.png` }));
  }
  await fsp.writeFile(path.join(data, 'samples.jsonl'), lines.join('\n') + '\n');
});

afterAll(async () => {
  if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
});

async function setup(name: string) {
  const ws = await new Workspace(path.join(tmp, name)).init();
  return { ws, ops: new SharpImageOps(ws.media) };
}

describe('runSweep', () => {
  it('cancel keeps finished samples, records no unfinished one, and the next start finishes the rest', async () => {
    const { ws, ops } = await setup('cancel');
    const [run] = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], name: 'c' });
    const ctrl = new AbortController();
    const events: SweepEvent[] = [];
    const first = await runSweep([run!], {
      store: ws.runs,
      imageOps: ops,
      engines: replayFactory(() => book([], 150)),
      signal: ctrl.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'sample' && e.done === 2) ctrl.abort(new Error('test cancel'));
      },
    });
    expect(first[0]!.cancelled).toBe(true);
    const afterCancel = (await ws.runs.readSamples('c')).records;
    expect(afterCancel.length).toBeGreaterThanOrEqual(2);
    expect(afterCancel.length).toBeLessThan(N);
    expect(afterCancel.every((r) => r.stop_reason === 'answer')).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', cancelled: true });

    const again: SweepEvent[] = [];
    const second = await runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book()), onEvent: (e) => again.push(e) });
    expect(second[0]).toMatchObject({ cancelled: false, done: N, total: N });
    expect(again[0]).toMatchObject({ type: 'run-start', resumed: true, done: afterCancel.length, todo: N - afterCancel.length });
    const all = (await ws.runs.readSamples('c')).records;
    expect(all.map((r) => r.qid).sort()).toEqual(Array.from({ length: N }, (_, i) => `q${i}`));
    // progress counts up by one per sample and gives an ETA once a sample finished
    const samples = again.filter((e): e is Extract<SweepEvent, { type: 'sample' }> => e.type === 'sample');
    expect(samples.map((e) => e.done)).toEqual(Array.from({ length: N - afterCancel.length }, (_, i) => afterCancel.length + i + 1));
    expect(samples.every((e) => e.etaMs !== null && e.etaMs >= 0 && e.total === N)).toBe(true);
    expect(samples.at(-1)!.etaMs).toBe(0);
    const s = summarize(await loadRunGroup(ws.runs, 'c'));
    expect(s).toMatchObject({ n: N, correct: N - 1, tool_use_rate: 1, calls_per_sample: 1 });
  }, 60_000);

  it('retryErrors re-runs errored samples and leaves exactly one record per qid', async () => {
    const { ws, ops } = await setup('retry');
    const [run] = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], name: 'r' });
    await runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book(['q3'])) });
    const first = (await ws.runs.readSamples('r')).records;
    expect(first.length).toBe(N);
    const q3 = first.find((r) => r.qid === 'q3')!;
    expect(q3.stop_reason).toBe('engine_error');
    expect(q3.error).toMatch(/no recorded reply/);
    // without the flag a resume keeps the error
    await runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book()) });
    expect((await ws.runs.readSamples('r')).records.find((r) => r.qid === 'q3')!.stop_reason).toBe('engine_error');
    await runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book()), retryErrors: true });
    const after = (await ws.runs.readSamples('r')).records;
    expect(after.map((r) => r.qid).sort()).toEqual(first.map((r) => r.qid).sort());
    expect(after.find((r) => r.qid === 'q3')).toMatchObject({ stop_reason: 'answer', correct: true, extracted: expect.anything() });
    // the untouched records are byte-for-byte what they were
    for (const r of first.filter((x) => x.qid !== 'q3')) expect(after.find((x) => x.qid === r.qid)).toEqual(r);
  }, 60_000);

  it('stops a run whose engine keeps failing instead of recording every sample as an error', async () => {
    const { ws, ops } = await setup('dead');
    const [run] = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], name: 'd' });
    let calls = 0;
    const dead: Engine = {
      info: () => ({ id: 'dead', kind: 'openai', model: 'x' }),
      generate: async (_req: GenerateRequest) => {
        calls++;
        throw new EngineError('network', 'connection refused (http://127.0.0.1:9/v1)');
      },
      dispose: async () => undefined,
    };
    const out = await runSweep([run!], {
      store: ws.runs,
      imageOps: ops,
      engines: async () => ({ info: dead.info(), engineFor: () => dead, concurrency: 1, dispose: async () => undefined }),
      maxConsecutiveEngineErrors: 3,
    });
    expect(out[0]!.error).toMatch(/the engine failed on 3 samples in a row \(last: .*connection refused/);
    const recs = (await ws.runs.readSamples('d')).records;
    expect(recs.length).toBe(3);
    expect(calls).toBe(3);
    expect(recs.every((r) => r.stop_reason === 'engine_error' && r.score === 0)).toBe(true);
  }, 60_000);

  it('one writer per run: a live writer on this host blocks a second one; a dead writer’s lock is taken over', async () => {
    const { ws, ops } = await setup('lock');
    const [run] = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], name: 'l' });
    await runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book(['q4', 'q5'])) });
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const lock = path.join(ws.runs.runDir('l'), WRITER_LOCK);
      await fsp.writeFile(lock, `${other.pid}@${os.hostname()}`);
      const before = await fsp.readFile(path.join(ws.runs.runDir('l'), 'samples.jsonl'), 'utf8');
      await expect(runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book()), retryErrors: true })).rejects.toThrow(
        new RegExp(`run l is being written by another Loupe process \\(pid ${other.pid}\\)`),
      );
      expect(await fsp.readFile(path.join(ws.runs.runDir('l'), 'samples.jsonl'), 'utf8')).toBe(before);
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
      const out = await runSweep([run!], { store: ws.runs, imageOps: ops, engines: replayFactory(() => book()), retryErrors: true });
      expect(out[0]).toMatchObject({ done: N, total: N });
      await expect(fsp.stat(lock)).rejects.toThrow(/ENOENT/); // released
    } finally {
      other.kill('SIGKILL');
    }
  }, 60_000);

  it('shows a multiple-choice sample its options: one "(A) …" line each, then the letter instruction', async () => {
    const { ws, ops } = await setup('options');
    const mc = path.join(tmp, 'bench-mc');
    await fsp.mkdir(path.join(mc, 'images'), { recursive: true });
    await fsp.copyFile(path.join(data, 'images', 'q0.png'), path.join(mc, 'images', 'm0.png'));
    await fsp.writeFile(path.join(mc, 'benchmark.json'), JSON.stringify({ id: 'mini-mc', version: 1, scorer: 'pr.boxed' }));
    const samples = [
      { qid: 'm0', question: 'Which tag is on the left?', options: ['K', 'R'], answer: 'B', image: 'images/m0.png' },
      { qid: 'm1', question: 'How many dots?', answer: '3', image: 'images/m0.png' },
    ];
    await fsp.writeFile(path.join(mc, 'samples.jsonl'), samples.map((x) => JSON.stringify(x)).join('\n') + '\n');
    const seen = new Map<string, string>();
    const bk: ReplayBook = { file: 'inline', byQid: new Map([['m0', [{ text: '\\boxed{B}' }]], ['m1', [{ text: '\\boxed{3}' }]]]) };
    const engines: EngineFactory = async () => ({
      info: { id: 'replay:test', kind: 'scripted', model: 'replay' },
      engineFor: (s) => {
        const e = replayEngine(bk, s.qid);
        const generate = (req: GenerateRequest) => {
          seen.set(s.qid, JSON.stringify(req.messages));
          return e.generate(req);
        };
        return { info: () => e.info(), dispose: () => e.dispose(), generate } satisfies Engine;
      },
      concurrency: 1,
      dispose: async () => undefined,
    });
    const runs = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data: mc }], settings: { prompt: ['vcot'] } });
    const out = await runSweep(runs, { store: ws.runs, imageOps: ops, engines });
    expect(out.map((o) => o.done)).toEqual([2]);
    expect(seen.get('m0')).toContain(JSON.stringify('Which tag is on the left?\n(A) K\n(B) R\nAnswer with the option letter.').slice(1, -1));
    expect(seen.get('m1')).toContain('How many dots?');
    expect(seen.get('m1')).not.toContain('(A)');
    const recs = (await fsp.readFile(path.join(ws.runs.runDir(runs[0]!.id), 'samples.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { qid: string; question: string; correct: boolean });
    // the record keeps the question as the benchmark states it (the options have their own field)
    expect(recs.find((r) => r.qid === 'm0')).toMatchObject({ question: 'Which tag is on the left?', correct: true });
  }, 60_000);

  it('runs a plan of several runs with derived ids; running the plan again resumes them all', async () => {
    const { ws, ops } = await setup('plan');
    const runs = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], settings: { prompt: ['vcot', 'notool'], seed: [0, 1], limit: 3 } });
    const tag = runs[0]!.id.slice(-8); // hash of the non-default settings (limit 3)
    expect(tag).toMatch(/^[0-9a-f]{8}$/);
    expect(runs.map((r) => r.id)).toEqual([`replay-loupe-synth-vcot-${tag}`, `replay-loupe-synth-vcot-s1-${tag}`, `replay-loupe-synth-notool-${tag}`, `replay-loupe-synth-notool-s1-${tag}`]);
    const out = await runSweep(runs, { store: ws.runs, imageOps: ops, engines: replayFactory(() => book()) });
    expect(out.map((o) => o.done)).toEqual([3, 3, 3, 3]);
    const manifests = await Promise.all(runs.map((r) => ws.runs.readManifest(r.id)));
    expect(manifests.map((m) => [m.prompt, m.decoding?.seed])).toEqual([
      ['vcot', 0],
      ['vcot', 1],
      ['notool', 0],
      ['notool', 1],
    ]);
    const events: SweepEvent[] = [];
    await runSweep(expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], settings: { prompt: ['vcot', 'notool'], seed: [0, 1], limit: 3 } }), {
      store: ws.runs,
      imageOps: ops,
      engines: replayFactory(() => book()),
      onEvent: (e) => events.push(e),
    });
    expect(events.filter((e) => e.type === 'run-start').map((e) => (e as { todo: number }).todo)).toEqual([0, 0, 0, 0]);
    expect(events.filter((e) => e.type === 'sample')).toEqual([]);
  }, 60_000);
});

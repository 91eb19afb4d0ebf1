/**
 * The sweep runner's look-ahead: while a sample's engine calls run, the next samples' question media are imported
 * and resized. It must change nothing but timing: the same records and scores as without it (concurrency 1 and 3),
 * a failing preparation is that sample's own error record, and a cancel while the next sample is being prepared
 * records nothing unfinished, leaves no work running after the runner returns, and a resume completes the run.
 * Real images (sharp), the real Pillow-exact resize, real crops and scorers; the engines replay recorded text.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MediaRef, SampleRecord } from '../../../app/contract/trajectory';
import type { Engine } from '../../../app/engines/types';
import { isHeldRef, type ImageOps } from '../../../app/tools/imageOps';
import { expandPlan, type ModelSpec } from '../../../app/sweeps/plan';
import { replayEngine, runSweep, type EngineFactory, type ReplayBook, type RunnerOptions } from '../../../app/sweeps/runner';
import { Workspace } from '../../../app/workspace';
import { SharpImageOps } from '../../../native/image/sharpImageOps';

const N = 6;
/** q3's image file is not an image: its preparation fails. */
const BAD = 'q3';
let tmp: string;
let data: string;
const crop = (b: number[]) => `Let me zoom in.\n<tool_call>\n${JSON.stringify({ name: 'crop_image_normalized', arguments: { bbox_2d: b, target_image: 1 } })}\n</tool_call>`;

function book(delayMs = 0): ReplayBook {
  const byQid = new Map<string, Array<{ text: string; delayMs?: number }>>();
  for (let i = 0; i < N; i++) byQid.set(`q${i}`, [{ text: crop([0.1, 0.1, 0.5, 0.5]), delayMs }, { text: `The count is \\boxed{${i === 2 ? 99 : i + 1}}.`, delayMs }]);
  return { file: 'inline', byQid };
}

const model: ModelSpec = { kind: 'replay', file: 'inline', name: 'replay' };

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-lookahead-'));
  data = path.join(tmp, 'bench');
  await fsp.mkdir(path.join(data, 'images'), { recursive: true });
  await fsp.writeFile(path.join(data, 'benchmark.json'), JSON.stringify({ id: 'mini', version: 1, scorer: 'pr.boxed' }));
  const lines: string[] = [];
  for (let i = 0; i < N; i++) {
    const file = path.join(data, 'images', `q${i}.png`);
    // sizes off the initial resize's grid, so every sample really goes through the resize
    if (`q${i}` === BAD) await fsp.writeFile(file, 'not a png at all');
    else await sharp({ create: { width: 450 + 10 * i, height: 330, channels: 3, background: { r: 40 * i, g: 120, b: 200 } } }).png().toFile(file);
    lines.push(JSON.stringify({ qid: `q${i}`, question: `How many things? (${i})`, answer: String(i + 1), image: `images/q${i}.png` }));
  }
  await fsp.writeFile(path.join(data, 'samples.jsonl'), lines.join('\n') + '\n');
});

afterAll(async () => {
  if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
});

/** What happened, in order: imports started/ended (by question image) and engine calls started/ended (by qid). */
type Log = string[];

/** The real ImageOps, logging each import and counting the imports and keeps (writes) still running. */
function loggingOps(inner: SharpImageOps, log: Log, onImport?: (qid: string) => Promise<void> | void, onKeep?: (n: number) => Promise<void> | void): ImageOps & { running: () => number } {
  let keeps = 0;
  let running = 0;
  return {
    running: () => running,
    importFile: async (file: string): Promise<MediaRef> => {
      const qid = path.basename(file, '.png');
      running++;
      log.push(`import ${qid}`);
      try {
        await onImport?.(qid);
        return await inner.importFile(file);
      } finally {
        running--;
        log.push(`imported ${qid}`);
      }
    },
    importBytes: (b) => inner.importBytes(b),
    resize: (s, w, h) => inner.resize(s, w, h),
    crop: (s, b, z) => inner.crop(s, b, z),
    keep: async (r) => {
      running++;
      try {
        await new Promise((res) => setTimeout(res, 5)); // a write that takes a moment, so one left running is seen
        await onKeep?.(++keeps);
        return await inner.keep(r);
      } finally {
        running--;
      }
    },
    engineImage: (r) => inner.engineImage(r),
    pathOf: (r) => inner.pathOf(r),
  };
}

function factory(log: Log, concurrency: number, delayMs = 0): EngineFactory {
  const bk = book(delayMs);
  return async () => ({
    info: { id: 'replay:lookahead', kind: 'scripted', model: 'replay' },
    engineFor: (s) => {
      const e = replayEngine(bk, s.qid);
      const wrapped: Engine = {
        info: () => e.info(),
        generate: async (req) => {
          log.push(`generate ${s.qid}`);
          try {
            return await e.generate(req);
          } finally {
            log.push(`generated ${s.qid}`);
          }
        },
        dispose: () => e.dispose(),
      };
      return wrapped;
    },
    concurrency,
    dispose: async () => undefined,
  });
}

/** A record without its timings (which differ from run to run). */
function timeless(r: SampleRecord): unknown {
  return JSON.parse(JSON.stringify(r, (k, v: unknown) => (k === 'latency_ms' || k === 'latencyMs' ? undefined : v)));
}

async function run(name: string, opts: { concurrency: number; lookahead?: number; delayMs?: number; signal?: AbortSignal; onImport?: (qid: string) => Promise<void> | void; onKeep?: (n: number) => Promise<void> | void; ws?: Workspace }) {
  const ws = opts.ws ?? (await new Workspace(path.join(tmp, name)).init());
  const log: Log = [];
  const ops = loggingOps(new SharpImageOps(ws.media), log, opts.onImport, opts.onKeep);
  const [planned] = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], name: 'la' });
  const ro: RunnerOptions = { store: ws.runs, imageOps: ops, engines: factory(log, opts.concurrency, opts.delayMs), ...(opts.lookahead !== undefined ? { lookahead: opts.lookahead } : {}), ...(opts.signal ? { signal: opts.signal } : {}) };
  const [outcome] = await runSweep([planned!], ro);
  const runningAfter = ops.running();
  const records = (await ws.runs.readSamples('la')).records;
  return { ws, log, outcome: outcome!, records, runningAfter };
}

describe('runSweep look-ahead', () => {
  it('prepares the next sample while the current one is on the engine, and records exactly what a run without look-ahead records', async () => {
    const serial = await run('serial', { concurrency: 1, lookahead: 0 });
    const ahead = await run('ahead', { concurrency: 1 });
    const ahead2 = await run('ahead2', { concurrency: 1, lookahead: 2 });
    const wide = await run('wide', { concurrency: 3, lookahead: 3 });

    // without look-ahead, q1's import starts only after q0's last engine call; with it, while q0 is on the engine
    const at = (log: Log, e: string) => log.indexOf(e);
    expect(at(serial.log, 'import q1')).toBeGreaterThan(serial.log.lastIndexOf('generated q0'));
    expect(at(ahead.log, 'import q1')).toBeLessThan(ahead.log.lastIndexOf('generated q0'));
    expect(at(ahead.log, 'import q1')).toBeGreaterThan(at(ahead.log, 'imported q0'));
    // bounded: with look-ahead 1, q2 is not imported before q1's sample started
    expect(at(ahead.log, 'import q2')).toBeGreaterThan(ahead.log.lastIndexOf('generated q0'));
    expect(at(ahead2.log, 'import q2')).toBeLessThan(ahead2.log.lastIndexOf('generated q0'));
    // every question image imported once per run, whatever the look-ahead
    for (const r of [serial, ahead, ahead2, wide]) expect(r.log.filter((e) => e.startsWith('import ')).sort()).toEqual(Array.from({ length: N }, (_, i) => `import q${i}`));

    // same records in the same order at concurrency 1; the same set at concurrency 3 (completion order)
    expect(serial.records.map((r) => r.qid)).toEqual(Array.from({ length: N }, (_, i) => `q${i}`));
    expect(ahead.records.map(timeless)).toEqual(serial.records.map(timeless));
    expect(ahead2.records.map(timeless)).toEqual(serial.records.map(timeless));
    const byQid = (rs: SampleRecord[]) => [...rs].sort((a, b) => a.qid.localeCompare(b.qid)).map(timeless);
    expect(byQid(wide.records)).toEqual(byQid(serial.records));
    // real work happened: the answers score as the book says and the question media were resized
    expect(serial.records.filter((r) => r.correct).map((r) => r.qid)).toEqual(['q0', 'q1', 'q4', 'q5']);
    const q0 = serial.records[0]!;
    expect(q0.trajectory!.media[0]!.id).not.toBe(q0.trajectory!.originals[0]!.id);
    // every image a record names is a stored file (kept ahead or by the episode), none a held id
    for (const r of [serial, ahead, ahead2, wide]) {
      for (const rec of r.records) {
        for (const m of [...rec.trajectory!.media, ...rec.trajectory!.turns.flatMap((t) => t.call?.produced ?? [])]) {
          expect(isHeldRef(m)).toBe(false);
          expect(await r.ws.media.has(m.id)).toBe(true);
        }
      }
      expect(r.runningAfter).toBe(0);
    }
  }, 60_000);

  it("a failing preparation of the next sample is that sample's error record, not the current one's", async () => {
    for (const lookahead of [0, 1]) {
      const r = await run(`bad-${lookahead}`, { concurrency: 1, lookahead });
      expect(r.outcome).toMatchObject({ done: N, cancelled: false });
      const bad = r.records.find((x) => x.qid === BAD)!;
      expect(bad).toMatchObject({ stop_reason: 'error', score: 0, correct: false, calls: 0 });
      expect(bad.error).toMatch(/^preparing the question media: .*q3\.png: not a readable image/);
      expect(bad.trajectory!.turns).toEqual([]);
      // the sample before it (in flight while q3 was prepared) and the one after are untouched
      expect(r.records.find((x) => x.qid === 'q2')).toMatchObject({ stop_reason: 'answer', calls: 1 });
      expect(r.records.find((x) => x.qid === 'q4')).toMatchObject({ stop_reason: 'answer', correct: true });
      expect(r.records.filter((x) => x.stop_reason !== 'answer').map((x) => x.qid)).toEqual([BAD]);
    }
  }, 60_000);

  it('a cancel while the next sample is being prepared records nothing unfinished, returns with no import running, and a resume completes the run', async () => {
    const ctrl = new AbortController();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = await run('cancel', {
      concurrency: 1,
      delayMs: 60,
      signal: ctrl.signal,
      // q2's preparation starts while q1 is on the engine: cancel there, and hold the import a little past the cancel
      onImport: async (qid) => {
        if (qid !== 'q2') return;
        ctrl.abort(new Error('test cancel'));
        setTimeout(release, 50);
        await gate;
      },
    });
    expect(first.outcome.cancelled).toBe(true);
    expect(first.runningAfter).toBe(0); // the runner waited for the prepared-ahead import before returning
    expect(first.log).toContain('imported q2');
    expect(first.records.map((r) => r.qid)).toEqual(['q0']); // q1 was on the engine: unfinished, not recorded
    expect(first.log).not.toContain('generate q2');

    // A cancel while a prepared-ahead image is being kept (written): the runner returns only once that write is done.
    const ctrl2 = new AbortController();
    let release2!: () => void;
    const gate2 = new Promise<void>((r) => (release2 = r));
    let keepsAtCancel = 0;
    const during = await run('cancel-keep', {
      concurrency: 1,
      delayMs: 60,
      signal: ctrl2.signal,
      // keep 1 is q0's (by its episode), keep 2 q1's, prepared ahead while q0 is on the engine: cancel there
      onKeep: async (n) => {
        if (n !== 2) return;
        keepsAtCancel = n;
        ctrl2.abort(new Error('test cancel'));
        setTimeout(release2, 50);
        await gate2;
      },
    });
    expect(keepsAtCancel).toBe(2);
    expect(during.outcome.cancelled).toBe(true);
    expect(during.runningAfter).toBe(0);

    // the media q2's cancelled preparation stored are unused; the resume imports the same bytes again (same ids)
    const again = await run('cancel', { concurrency: 1, ws: first.ws });
    expect(again.outcome).toMatchObject({ cancelled: false, done: N });
    expect(again.log.filter((e) => e.startsWith('import ')).sort()).toEqual(['import q1', 'import q2', 'import q3', 'import q4', 'import q5']);
    const clean = await run('cancel-clean', { concurrency: 1, lookahead: 0 });
    expect(again.records.map((r) => r.qid)).toEqual(clean.records.map((r) => r.qid));
    expect(again.records.map(timeless)).toEqual(clean.records.map(timeless));
  }, 60_000);
});

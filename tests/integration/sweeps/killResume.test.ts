/**
 * Crash safety of `loupe eval`: SIGKILL the CLI at random points of a loupe-synth sweep 20 times, resuming each time
 * with the same `--run`, then let it finish. The engine is the replay engine (the synth SFT trajectories replayed
 * through the real agent loop, real crops with sharp, real scoring): the tiny ONNX model's start-up would not fit
 * 20 kills in a minute. Kill points are seeded-random: 0–300 ms after the run starts or after its first recorded
 * sample (the other sample in flight dies mid-episode), or, once the sweep is done, a random time during
 * start-up/resume. Once, a torn last line (what a kill mid-append leaves) is written before a resume.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRng } from '../../../app/prng';
import { SampleRecordSchema } from '../../../app/contract/trajectory';
import { CLI_CHILD, REPO, lastJson, makeSynth, readRecords, runCli } from './helpers';
import { setTimeout as sleep } from 'node:timers/promises';

const N = 6;
const KILLS = 20;
let tmp: string;
let data: string;
let replay: string;

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-kill-'));
  ({ data, replay } = await makeSynth(tmp, N, 23));
}, 180_000);

afterAll(async () => {
  if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
});


/** Every media id a record names (originals, the initial images, each call's produced images). */
function mediaIds(x: unknown, out = new Set<string>()): Set<string> {
  if (typeof x === 'string') {
    if (/^[0-9a-f]{64}\.[a-z0-9]{1,8}$/.test(x)) out.add(x);
  } else if (Array.isArray(x)) for (const v of x) mediaIds(v, out);
  else if (x && typeof x === 'object') for (const v of Object.values(x)) mediaIds(v, out);
  return out;
}

/** The media files that `records` name are all in the store, whole: each file's SHA-256 is its name. */
async function expectMediaWhole(ws: string, records: Array<Record<string, unknown>>): Promise<number> {
  const ids = mediaIds(records);
  for (const id of ids) {
    const bytes = await fsp.readFile(path.join(ws, 'media', id)).catch(() => null);
    expect(bytes, `media ${id} named by a record is missing`).not.toBeNull();
    expect(`${createHash('sha256').update(bytes!).digest('hex')}.${id.split('.')[1]}`).toBe(id);
  }
  return ids.size;
}

/** Complete records so far; a torn last line (not yet repaired by a resume) is not a record. */
async function recorded(file: string): Promise<Array<Record<string, unknown>>> {
  const text = await fsp.readFile(file, 'utf8').catch(() => '');
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    try {
      if (line.trim()) out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // torn tail
    }
  }
  return out;
}

/** Start the CLI and SIGKILL it at a point chosen by `plan`; resolves with what happened. */
function killAt(args: string[], plan: { afterLines: number; delayMs: number } | { fromStartMs: number }): Promise<{ killedLive: boolean; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', CLI_CHILD, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let exited = false;
    let killedLive = false;
    let armed = false;
    const kill = () => {
      if (exited) return;
      killedLive = true;
      p.kill('SIGKILL');
    };
    const arm = (ms: number) => {
      if (armed) return;
      armed = true;
      setTimeout(kill, ms);
    };
    if ('fromStartMs' in plan) arm(plan.fromStartMs);
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if ('afterLines' in plan && /^run \S+: /m.test(stderr)) {
        const lines = (stderr.match(/^\d+\/\d+ /gm) ?? []).length;
        if (lines >= plan.afterLines) arm(plan.delayMs);
      }
    });
    p.stdout.resume();
    p.on('error', reject);
    p.on('close', (code, signal) => {
      exited = true;
      resolve({ killedLive: killedLive && signal === 'SIGKILL', stderr, code });
    });
  });
}

it('kill -9 the eval CLI at 20 random points of a loupe-synth sweep (replay engine), resume each time: N unique qids, same scores as an uninterrupted run', async () => {
  const ws = path.join(tmp, 'ws');
  const args = (run: string) => ['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--run', run, '--concurrency', '2', '--json'];
  const ref = await runCli(args('reference'));
  expect(ref.code, ref.stderr).toBe(0);

  const rng = createRng(20261126);
  const file = path.join(ws, 'runs', 'killed', 'samples.jsonl');
  let kills = 0;
  let midSweep = 0; // kills that landed after a sample was recorded and before the run was complete
  let attempts = 0;
  let repaired = 0; // resumes that found (and repaired) a torn last line
  let tornInjected = false;
  const log: string[] = [];
  while (kills < KILLS) {
    attempts++;
    expect(attempts).toBeLessThan(KILLS * 4); // a CLI that never lives long enough to be killed is a failure too
    const before = await recorded(file);
    const complete = new Set(before.map((r) => r['qid'])).size >= N;
    const plan = complete ? { fromStartMs: Math.floor(rng.next() * 1500) } : { afterLines: rng.next() < 0.4 ? 1 : 0, delayMs: Math.floor(rng.next() * 300) };
    if (!tornInjected && before.length >= 2 && !complete) {
      // what a kill in the middle of an append leaves behind: a line cut short, no newline
      const line = JSON.stringify(before[0]);
      await fsp.appendFile(file, line.slice(0, Math.floor(line.length / 2)));
      tornInjected = true;
    }
    const r = await killAt(args('killed'), plan);
    if (r.stderr.includes('repaired a torn last line')) repaired++;
    if (!r.killedLive) {
      expect(r.code, r.stderr).toBe(0); // it finished on its own before the kill point: fine, try again
      continue;
    }
    kills++;
    const after = await recorded(file);
    // after every kill: no qid twice, and nothing that was recorded is gone
    const qids = after.map((x) => x['qid']);
    expect(new Set(qids).size).toBe(qids.length);
    for (const b of before) expect(qids).toContain(b['qid']);
    // and every image a recorded sample names was written whole before its record (a kill loses no media)
    await expectMediaWhole(ws, after);
    if (after.length > before.length && after.length < N) midSweep++;
    log.push(`${before.length}→${after.length}`);
    await sleep(0);
  }
  expect(midSweep).toBeGreaterThan(0);
  expect(tornInjected).toBe(true);
  expect(repaired).toBeGreaterThan(0);
  console.log(`kill-resume: ${kills} kills in ${attempts} starts, ${midSweep} mid-sweep with progress, ${repaired} torn tails repaired; records before→after each kill: ${log.join(' ')}`);

  const fin = await runCli(args('killed'));
  expect(fin.code, fin.stderr).toBe(0);
  const text = await fsp.readFile(file, 'utf8');
  const lines = text.split('\n').filter((l) => l.trim());
  const records = lines.map((l) => SampleRecordSchema.parse(JSON.parse(l)));
  expect(records.length).toBe(N);
  // the originals, initial images and zoomed crops: more than one image per sample
  expect(await expectMediaWhole(ws, lines.map((l) => JSON.parse(l) as Record<string, unknown>))).toBeGreaterThan(N);
  expect(new Set(records.map((r) => r.qid)).size).toBe(N);
  const refRecords = (await readRecords(path.join(ws, 'runs', 'reference', 'samples.jsonl'))).map((r) => SampleRecordSchema.parse(r));
  const pick = (r: (typeof records)[number]) => ({ qid: r.qid, score: r.score, correct: r.correct, extracted: r.extracted, prediction: r.prediction, stop_reason: r.stop_reason, calls: r.calls });
  const byQid = (rs: typeof records) => rs.map(pick).sort((a, b) => a.qid.localeCompare(b.qid));
  expect(byQid(records)).toEqual(byQid(refRecords));
  const s = lastJson(fin.stdout);
  expect(s).toMatchObject({ run: 'killed', n: N, complete: true });
  expect(s['accuracy']).toBe(lastJson(ref.stdout)['accuracy']);
}, 300_000);

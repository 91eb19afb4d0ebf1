/**
 * `loupe eval` / `loupe report` / `loupe run` end to end, as a user runs them: a loupe-synth benchmark generated in
 * the test, the committed tiny random Qwen2.5-VL (real ONNX on CPU) and a replay engine (recorded SFT text through
 * the real loop, real crops), real run files in a temp workspace.
 */
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunManifestSchema, SampleRecordSchema } from '../../../app/contract/trajectory';
import { getAdapter, getScorer } from '../../../app/bench';
import type { BenchSample } from '../../../app/bench/types';
import { inShard } from '../../../app/sweeps/plan';
import { spawn } from 'node:child_process';
import { CLI, CLI_CHILD, REPO, lastJson, makeSynth, readRecords, runCli, TINY_MODEL } from './helpers';

let tmp: string;
let ws: string;
let data: string;
let replay: string;
let bench: BenchSample[];
const N = 4;

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-eval-e2e-'));
  ws = path.join(tmp, 'ws');
  ({ data, replay } = await makeSynth(tmp, N));
  bench = (await getAdapter('loupe-synth').load(data)).samples;
}, 180_000);

afterAll(async () => {
  if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
});

const runDir = (id: string) => path.join(ws, 'runs', id);

async function runIds(): Promise<string[]> {
  try {
    return (await fsp.readdir(path.join(ws, 'runs'))).sort();
  } catch {
    return [];
  }
}

/** Every record re-scored with the scorer it names gives the stored score and extraction. */
function expectScoredAsReference(records: Array<Record<string, unknown>>) {
  for (const r of records) {
    const sample = bench.find((s) => s.qid === r['qid'])!;
    expect(sample).toBeDefined();
    const scorer = getScorer((r['extra'] as { scorer: string }).scorer);
    expect(scorer.name).toBe(sample.scorer);
    const again = scorer.score(r['prediction'] as string, sample);
    expect(r['score']).toBe(again.score);
    expect(r['correct']).toBe(again.correct);
    expect(r['extracted']).toEqual(again.extracted ?? null);
  }
}

describe('loupe eval (tiny random model, real ONNX on CPU)', () => {
  it('writes the run files and ends --json output with one result object', async () => {
    const r = await runCli(['eval', '--model', TINY_MODEL, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--run', 'tiny', '--limit', '3', '--max-tokens', '8', '--json']);
    expect(r.stderr).not.toMatch(/^loupe:/m);
    expect(r.code).toBe(0);
    const out = lastJson(r.stdout);
    const manifest = RunManifestSchema.parse(JSON.parse(await fsp.readFile(path.join(runDir('tiny'), 'manifest.json'), 'utf8')));
    expect(manifest.model.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(manifest.engine).toBe('local');
    expect(manifest.bench).toMatchObject({ id: 'loupe-synth', n: 3 });
    expect(manifest.bench?.revision).toMatch(/^sha256:/);
    expect(manifest.scorers).toEqual({ 'pr.boxed': getScorer('pr.boxed').version });
    expect(manifest.decoding?.maxTokens).toBe(8);
    const records = await readRecords(path.join(runDir('tiny'), 'samples.jsonl'));
    for (const rec of records) SampleRecordSchema.parse(rec);
    expect(records.map((x) => x['qid']).sort()).toEqual(bench.slice(0, 3).map((s) => s.qid).sort());
    expectScoredAsReference(records);
    expect(out).toMatchObject({ run: 'tiny', bench: 'loupe-synth', n: 3 });
    expect(out['accuracy']).toBe(records.filter((x) => x['correct']).length / 3);
    expect(out['tool_use_rate']).toBe(records.filter((x) => (x['calls'] as number) > 0).length / 3);
  }, 180_000);

  it('the same --run resumes without re-running or duplicating a sample', async () => {
    const file = path.join(runDir('tiny'), 'samples.jsonl');
    const before = await fsp.readFile(file, 'utf8');
    const r = await runCli(['eval', '--model', TINY_MODEL, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--run', 'tiny', '--limit', '3', '--max-tokens', '8', '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/3 samples, 3 already recorded \(resuming\)/);
    expect(await fsp.readFile(file, 'utf8')).toBe(before);
    expect(lastJson(r.stdout)).toMatchObject({ run: 'tiny', n: 3 });
  }, 180_000);

  it('refuses to resume a run with different settings, naming what differs, and leaves it untouched', async () => {
    const file = path.join(runDir('tiny'), 'samples.jsonl');
    const before = await fsp.readFile(file, 'utf8');
    const r = await runCli(['eval', '--model', TINY_MODEL, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--run', 'tiny', '--limit', '3', '--max-tokens', '9', '--json']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/run tiny already exists with different settings \([^)]*\bdecoding\b[^)]*\); resume it with the same settings, or pick a new name with --run/);
    expect(await fsp.readFile(file, 'utf8')).toBe(before);
  }, 180_000);

  it('report prints the table and the same numbers as JSON', async () => {
    // the text report through the full `loupe` entry (every command registered), as `npx loupe report` runs it
    const [text, json] = await Promise.all([runCli(['report', 'tiny', '--workspace', ws], { entry: CLI }), runCli(['report', 'tiny', '--workspace', ws, '--json'])]);
    expect(text.code).toBe(0);
    expect(json.code).toBe(0);
    const s = lastJson(json.stdout);
    const records = await readRecords(path.join(runDir('tiny'), 'samples.jsonl'));
    expect(s).toMatchObject({ run: 'tiny', n: 3, expected: 3, complete: true });
    expect(s['stop_reasons']).toEqual(records.reduce<Record<string, number>>((a, x) => ((a[x['stop_reason'] as string] = (a[x['stop_reason'] as string] ?? 0) + 1), a), {}));
    const cats = [...new Set(records.map((x) => x['category'] as string))];
    expect((s['by_category'] as Array<{ category: string }>).map((c) => c.category).sort()).toEqual(cats.sort());
    for (const c of cats) expect(text.stdout).toContain(`  ${c}`);
    expect(text.stdout).toMatch(/^all\s+3\s/m);
    expect(text.stdout).toMatch(/stop reasons: /);
  }, 120_000);
});

describe('loupe eval (replay engine) — shards and errors', () => {
  it('--shard 0/2 and 1/2 partition the qids and merge in report to the unsharded result', async () => {
    const common = ['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--json'];
    const [full, s0, s1] = [
      await runCli([...common, '--run', 'full']),
      await runCli([...common, '--run', 'sh', '--shard', '0/2']),
      await runCli([...common, '--run', 'sh', '--shard', '1/2']),
    ];
    for (const r of [full, s0, s1]) expect(r.code, r.stderr).toBe(0);
    const q0 = (await readRecords(path.join(runDir('sh.shard-0of2'), 'samples.jsonl'))).map((x) => x['qid'] as string);
    const q1 = (await readRecords(path.join(runDir('sh.shard-1of2'), 'samples.jsonl'))).map((x) => x['qid'] as string);
    expect(q0.filter((q) => q1.includes(q))).toEqual([]);
    expect([...q0, ...q1].sort()).toEqual(bench.map((s) => s.qid).sort());
    expect(q0.sort()).toEqual(bench.filter((s) => inShard(s.qid, { index: 0, count: 2 })).map((s) => s.qid).sort());
    const merged = await runCli(['report', 'sh', '--workspace', ws, '--json']);
    expect(merged.code).toBe(0);
    const m = lastJson(merged.stdout);
    const f = lastJson(full.stdout);
    expect(m).toMatchObject({ n: N, expected: N, complete: true, shards: ['sh.shard-0of2', 'sh.shard-1of2'], missing_shards: [] });
    for (const k of ['accuracy', 'correct', 'tool_use_rate', 'calls_per_sample', 'tool_error_rate', 'stop_reasons', 'by_category'] as const) expect(m[k]).toEqual(f[k]);
    // the replay has one deliberately wrong answer and crops on every sample
    expect(f['correct']).toBe(N - 1);
    expect(f['tool_use_rate']).toBe(1);
    expectScoredAsReference(await readRecords(path.join(runDir('full'), 'samples.jsonl')));
  }, 180_000);

  it('Ctrl-C (SIGINT) stops after the samples in flight, keeps them, exits 130; the same --run then finishes', async () => {
    const args = ['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--run', 'intr', '--concurrency', '1', '--replay-delay-ms', '200', '--json'];
    const r = await new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', CLI_CHILD, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      let sent = false;
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => {
        stderr += d;
        if (!sent && /^1\/\d+ /m.test(stderr)) {
          sent = true;
          p.kill('SIGINT');
        }
      });
      p.on('error', reject);
      p.on('close', (code) => resolve({ code, stderr, stdout }));
    });
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/SIGINT: stopping after the samples in flight/);
    expect(r.stderr).toMatch(/cancelled at \d+\/4; resume with --run intr/);
    const kept = await readRecords(path.join(runDir('intr'), 'samples.jsonl'));
    expect(kept.length).toBeGreaterThanOrEqual(1);
    expect(kept.length).toBeLessThan(N);
    expect(lastJson(r.stdout)).toMatchObject({ run: 'intr', cancelled: true, n: kept.length, complete: false });
    const fin = await runCli(args.filter((a) => a !== '--replay-delay-ms' && a !== '200'));
    expect(fin.code, fin.stderr).toBe(0);
    const all = await readRecords(path.join(runDir('intr'), 'samples.jsonl'));
    expect(all.map((x) => x['qid']).sort()).toEqual(bench.map((x) => x.qid).sort());
  }, 120_000);

  it('an unknown benchmark, a missing data folder and a dead server fail clearly and write nothing', async () => {
    const before = await runIds();
    const unknown = await runCli(['eval', '--model', `replay:${replay}`, '--bench', 'nope', '--data', data, '--workspace', ws]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown benchmark 'nope'; known: .*loupe-synth/);
    const missing = await runCli(['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', path.join(tmp, 'no-such-dir'), '--workspace', ws]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`benchmark data ${path.join(tmp, 'no-such-dir')} does not exist`);
    // a port that was just free: nothing listens there
    const srv = http.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    await new Promise<void>((r) => srv.close(() => r()));
    const dead = await runCli(['eval', '--model', `http://127.0.0.1:${port}/v1`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws]);
    expect(dead.code).toBe(1);
    expect(dead.stderr).toMatch(new RegExp(`cannot reach the OpenAI-compatible server at http://127\\.0\\.0\\.1:${port}/v1 \\(ECONNREFUSED\\)`));
    const badShard = await runCli(['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--shard', '2/2']);
    expect(badShard.code).toBe(1);
    expect(badShard.stderr).toMatch(/--shard 2\/2: i counts from 0/);
    const noModel = await runCli(['eval', '--model', path.join(tmp, 'no-model'), '--bench', 'loupe-synth', '--data', data, '--workspace', ws]);
    expect(noModel.code).toBe(1);
    expect(noModel.stderr).toContain(`model folder ${path.join(tmp, 'no-model')} does not exist`);
    const noRun = await runCli(['report', 'no-such-run', '--workspace', ws]);
    expect(noRun.code).toBe(1);
    expect(noRun.stderr).toMatch(/no run named "no-such-run" in .* \(runs there: .*tiny/);
    for (const r of [unknown, missing, dead, badShard, noModel, noRun]) expect(r.stdout).toBe('');
    expect(await runIds()).toEqual(before);
  }, 180_000);
});

describe('loupe run', () => {
  it('prints the trajectory live and writes the crop into the workspace', async () => {
    const s = bench[0]!;
    const rec = (await readRecords(replay)).find((x) => x['qid'] === s.qid)!;
    const one = path.join(tmp, 'one.jsonl');
    await fsp.writeFile(one, JSON.stringify({ qid: 'run', turns: rec['turns'] }) + '\n');
    const runWs = path.join(tmp, 'ws-run');
    const r = await runCli(['run', '--model', `replay:${one}`, '--image', s.media.images![0]!, '--workspace', runWs, s.question]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('── turn 1 ──');
    expect(r.stdout).toContain((rec['turns'] as string[])[0]!.split('\n')[0]!);
    const wrote = /→ tool crop_image_normalized bbox \[[^\]]+\] \(normalized\) → crop box \[[^\]]+\]\n\s+wrote (\S+) \((\d+)×(\d+)\)/.exec(r.stdout);
    expect(wrote).not.toBeNull();
    const crop = wrote![1]!;
    expect(path.dirname(crop)).toBe(path.join(runWs, 'media'));
    expect((await fsp.stat(crop)).size).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/stop: answer\nanswer: .*\\boxed\{/);
  }, 120_000);

  it('runs a local model on the threads asked for, 1 by default for a small one, and refuses 0', async () => {
    const s = bench[0]!;
    const runWs = path.join(tmp, 'ws-threads');
    const args = ['run', '--model', TINY_MODEL, '--image', s.media.images![0]!, '--workspace', runWs, '--max-tokens', '4', '--max-calls', '0'];
    const auto = await runCli([...args, s.question]);
    expect(auto.code, auto.stderr).toBe(0);
    expect(auto.stdout).toMatch(/^model .* \(local, cpu, 1 thread\), dialect/m);
    const two = await runCli([...args, '--threads', '2', s.question]);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout).toMatch(/^model .* \(local, cpu, 2 threads\), dialect/m);
    const zero = await runCli([...args, '--threads', '0', s.question]);
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toContain('--threads must be an integer ≥ 1, got "0"');
  }, 120_000);
});

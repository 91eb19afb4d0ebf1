/**
 * Ray Jobs cluster sweeps (app/sweeps/cluster/ray.ts). No live Ray head can run here, so:
 * - contract: the sweep against the replay of the transcript recorded from a real Ray 2.58 head
 *   (tests/fixtures/ray-jobs-2.58/). Only the recorded submission ids are answered, so the shards are given those
 *   ids: one job that SUCCEEDED (its log is a verl log, with no shard files: the sweep says so) and one that FAILED
 *   (Ray's own message reaches the reason). What is checked is what the sweep SENDS and how it reads the answers.
 * - the entrypoint for real: the exact shell line a shard's Ray job runs, run by bash here over a real `loupe eval`
 *   of 4 loupe-synth samples; its output parses back into the shard's exact files.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { RayConnector } from '../../../app/connectors/ray';
import { RaySweep, SHARD_FILES_BEGIN, SHARD_FILES_END, parseShardFiles, type RaySweepEvent } from '../../../app/sweeps/cluster/ray';
import { RunStore } from '../../../app/workspace/runStore';
import { makeSynth, REPO } from '../sweeps/helpers';
import { spawn } from 'node:child_process';
import { startRayReplay } from './rayReplay';

type Replay = Awaited<ReturnType<typeof startRayReplay>>;
let replay: Replay | null = null;
afterEach(async () => {
  await replay?.close();
  replay = null;
});
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-raysweep-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('Ray sweep vs the recorded Ray 2.58 head', () => {
  it('one job per shard with its own entrypoint; follows to the end; a succeeded job without files and a failed job are reported, not resubmitted past the limit', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url, followMode: 'poll' });
    const events: RaySweepEvent[] = [];
    const ids = ['verl-grpo-demo-001', 'verl-grpo-demo-fail'];
    const sweep = new RaySweep({
      connector: ray,
      store: new RunStore(path.join(tmp, 'replay', 'runs')),
      recordFile: path.join(tmp, 'replay', 'record.json'),
      runName: 'synth2',
      shards: 2,
      evalArgs: ['--model', 'replay:/data/replay.jsonl', '--bench', 'loupe-synth', '--data', '/data/synth'],
      loupe: ['/opt/loupe/bin/loupe'],
      remoteWorkspace: '/shared/loupe-ws',
      resources: { cpus: 1 },
      maxResubmits: 0,
      pollMs: 20,
      submissionId: (shard) => ids[shard]!,
      onEvent: (e) => events.push(e),
    });
    const r = await sweep.run();

    // What was sent: two POSTs to /api/jobs/ (trailing slash), each its shard's entrypoint, id, metadata and CPUs.
    const posts = replay.received.filter((x) => x.method === 'POST').map((x) => JSON.parse(x.body.toString('utf8')) as { entrypoint: string; submission_id: string; metadata: Record<string, string>; entrypoint_num_cpus: number });
    expect(replay.received.filter((x) => x.method === 'POST').map((x) => x.path)).toEqual(['/api/jobs/', '/api/jobs/']);
    expect(posts.map((p) => p.submission_id)).toEqual(ids);
    posts.forEach((p, i) => {
      expect(p.entrypoint).toBe(sweep.entrypoint(i));
      expect(p.entrypoint).toContain(`--run synth2 --workspace /shared/loupe-ws --no-progress --json --shard ${i}/2 && echo ${SHARD_FILES_BEGIN}`);
      expect(p.metadata).toEqual({ loupe_run: 'synth2', loupe_shard: `${i}/2` });
      expect(p.entrypoint_num_cpus).toBe(1);
    });
    // Followed through the recorded states; the log was read only once the job had SUCCEEDED.
    expect(events.filter((e) => e.type === 'job' && e.shard === 0).map((e) => (e as { rawState: string }).rawState)).toEqual(['PENDING', 'RUNNING', 'SUCCEEDED']);
    const logsAt = replay.received.findIndex((x) => x.path === '/api/jobs/verl-grpo-demo-001/logs');
    expect(logsAt).toBeGreaterThan(replay.received.findIndex((x) => x.served === 'get_succeeded'));
    // Both outcomes said plainly; nothing submitted a third time; no shard folder written.
    expect(r.failed).toEqual([0, 1]);
    const reason = (shard: number): string => (events.find((e) => e.type === 'shard-failed' && e.shard === shard) as { reason: string } | undefined)?.reason ?? '';
    expect(reason(0)).toMatch(/Ray job verl-grpo-demo-001 succeeded, but its log holds no LOUPE_SHARD_FILES_BEGIN block/);
    expect(reason(1)).toMatch(/Ray job verl-grpo-demo-fail ended FAILED: JOB_ENTRYPOINT_COMMAND_ERROR: Job entrypoint command failed with exit code 1/);
    expect(r.summary).toBeNull();
    const rec = JSON.parse(readFileSync(path.join(tmp, 'replay', 'record.json'), 'utf8')) as { shardsState: Array<{ jobs: string[]; state: string }> };
    expect(rec.shardsState.map((s) => [s.jobs, s.state])).toEqual([[['verl-grpo-demo-001'], 'failed'], [['verl-grpo-demo-fail'], 'failed']]);
  });

  it('refuses a reused submission id the way the recorded head does (the duplicate answer is an error, not a second job)', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url, followMode: 'poll' });
    const mk = () => new RaySweep({ connector: ray, store: new RunStore(path.join(tmp, 'dup', 'runs')), recordFile: path.join(tmp, 'dup', `record-${Math.random()}.json`), runName: 'dup', shards: 1, evalArgs: [], remoteWorkspace: '/shared/ws', maxResubmits: 0, pollMs: 20, submissionId: () => 'verl-grpo-demo-001' });
    await mk().run();
    await expect(mk().run()).rejects.toThrow(/already exists|400/);
  });
});

describe('the shard files block in a job log', () => {
  it('parses the last complete block byte for byte; a truncated or non-base64 block is not taken', () => {
    const manifest = Buffer.from('{"id":"x.shard-0of2","shard":{"index":0,"count":2}}\n');
    const samples = Buffer.from('{"qid":"a"}\n{"qid":"b"}\n');
    const block = `${SHARD_FILES_BEGIN}\n${manifest.toString('base64')}\n${samples.toString('base64')}\n${SHARD_FILES_END}\n`;
    const files = parseShardFiles(`2026-11-26 INFO job_manager.py -- Runtime env is setting up.\n{"run":"x"}\n${block}`);
    expect(files?.manifest.equals(manifest)).toBe(true);
    expect(files?.samples.equals(samples)).toBe(true);
    expect(parseShardFiles(`${block}${SHARD_FILES_BEGIN}\nAAAA\n`)?.samples.equals(samples)).toBe(true);
    expect(parseShardFiles(`${SHARD_FILES_BEGIN}\nAAAA\nBBBB\n`)).toBeNull();
    expect(parseShardFiles(`${SHARD_FILES_BEGIN}\n$(rm -rf ~)\nBBBB\n${SHARD_FILES_END}\n`)).toBeNull();
  });
});

describe('the shard entrypoint, run for real (bash + loupe eval, as a Ray job runs it)', () => {
  it('prints the shard files as one block that parses back byte for byte', async () => {
    const { data, replay: book } = await makeSynth(path.join(tmp, 'real'), 4);
    const ws = path.join(tmp, 'real', 'ws');
    // Only `entrypoint()` is used: the connector is never called.
    const sweep = new RaySweep({ connector: {} as RayConnector, store: new RunStore(path.join(tmp, 'real', 'copy')), recordFile: path.join(tmp, 'real', 'record.json'), runName: 'real4', shards: 1, evalArgs: ['--model', `replay:${book}`, '--bench', 'loupe-synth', '--data', data], loupe: [process.execPath, path.join(REPO, 'bin', 'loupe.mjs')], remoteWorkspace: ws });
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn('bash', ['-c', sweep.entrypoint(0)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      let err = '';
      p.stdout.on('data', (d: Buffer) => (text += d.toString('utf8')));
      p.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
      p.on('error', reject);
      p.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`entrypoint exited ${code}: ${err}`))));
    });
    const files = parseShardFiles(`job log prefix\n${out}`);
    expect(files).not.toBeNull();
    const dir = path.join(ws, 'runs', 'real4'); // one shard: no shard suffix
    expect(files!.samples.equals(readFileSync(path.join(dir, 'samples.jsonl')))).toBe(true);
    expect(files!.manifest.equals(readFileSync(path.join(dir, 'manifest.json')))).toBe(true);
    expect(files!.samples.toString('utf8').trim().split('\n')).toHaveLength(4);
  }, 180_000);
});

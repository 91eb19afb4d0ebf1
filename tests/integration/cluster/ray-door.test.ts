/**
 * "Run on cluster" through a RAY connector, by the same doors as Slurm: the core's `sweeps:clusterStart` /
 * `sweeps:clusterCancel` (the Runs page's form) and `loupe eval --cluster RAYCONN`. No live Ray head can run here, so
 * the head is the recorded Ray 2.58 one (tests/fixtures/ray-jobs-2.58/), its answers taken from the transcript,
 * running each submitted entrypoint for real with bash (tests/integration/connectors/rayShardHead.ts): the shards
 * really run `loupe eval --shard i/n` over loupe-synth, and their files travel back through the job log as they
 * would from Ray.
 *   - 8 samples, 2 shards: ONE merged run of 8 unique samples; hostile requests refused, nothing written or submitted;
 *   - restart: the core is disposed while the jobs are PENDING; a new core on the same workspace follows the same
 *     jobs from the record (no POST to /api/jobs/ again) and ends with the merged run;
 *   - cancel: `sweeps:clusterCancel` while the jobs RUN sends POST /api/jobs/<id>/stop for each (the recorded
 *     stop_running_job answer), the jobs end STOPPED and nothing is submitted again;
 *   - the CLI door: `loupe eval --cluster RAYCONN` ends as the merged run.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SweepProgress } from '../../../app/contract';
import { createCore, type Core } from '../../../main/core';
import { RayConnector } from '../../../app/connectors/ray';
import { ClusterSweepService } from '../../../app/sweeps/cluster/service';
import { RunStore } from '../../../app/workspace/runStore';
import { startRayShardHead, type RayShardHead } from '../connectors/rayShardHead';
import { lastJson, makeSynth, readRecords, REPO, runCli } from '../sweeps/helpers';
import { waitFor } from './helpers';

const N = 8;
const LOUPE = [process.execPath, path.join(REPO, 'bin', 'loupe.mjs')];

describe('Run on cluster through a Ray connector (recorded Ray 2.58 head, entrypoints run for real)', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-raydoor-'));
  let data: string;
  let replay: string;
  let head: RayShardHead | null = null;
  const cores: Core[] = [];
  beforeAll(async () => {
    ({ data, replay } = await makeSynth(path.join(tmp, 'synth'), N));
  }, 120_000);
  afterEach(async () => {
    for (const c of cores.splice(0)) await c.dispose().catch(() => undefined);
    await head?.close();
    head = null;
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  const open = async (name: string, h: RayShardHead): Promise<{ core: Core; ws: string; progress: SweepProgress[] }> => {
    const ws = path.join(tmp, name, 'ws');
    mkdirSync(ws, { recursive: true });
    const core = await createCore({ workspace: ws, transport: 'browser', configDir: path.join(tmp, name, 'config') });
    cores.push(core);
    const progress: SweepProgress[] = [];
    core.onEvent((ev, p) => {
      if (ev === 'sweeps:progress') progress.push(p as SweepProgress);
    });
    const saved = await core.dispatch('training:connectorSave', { config: { kind: 'ray', name: 'ray', baseUrl: h.url, followMode: 'poll' } });
    expect(saved.ok, JSON.stringify(saved)).toBe(true);
    return { core, ws, progress };
  };
  const posts = (h: RayShardHead): Array<{ submission_id: string; entrypoint: string; metadata: Record<string, string> }> =>
    h.received.filter((r) => r.method === 'POST' && r.path === '/api/jobs/').map((r) => r.body as { submission_id: string; entrypoint: string; metadata: Record<string, string> });
  const ended = (progress: SweepProgress[], runId: string) => () => progress.some((p) => p.runId === runId && ['done', 'error', 'cancelled'].includes(p.state));

  it('sweeps:clusterStart on a Ray connector: one Ray job per shard, ONE merged run of 8 unique samples; hostile requests refused', async () => {
    head = await startRayShardHead({ cwd: REPO, hold: false });
    const { core, ws, progress } = await open('merge', head);
    const req = { connector: 'ray', name: 'ray8', shards: 2, model: `replay:${replay}`, bench: 'loupe-synth', data, loupe: LOUPE, remoteWorkspace: path.join(tmp, 'merge', 'cluster-ws'), cwd: REPO, cpus: 1 };

    const bad = async (patch: Record<string, unknown>, re: RegExp): Promise<void> => {
      const r = await core.dispatch('sweeps:clusterStart', { ...req, name: 'bad', ...patch });
      expect(r.ok, JSON.stringify(patch)).toBe(false);
      expect(r.ok ? '' : r.error.message).toMatch(re);
    };
    await bad({ remoteWorkspace: undefined }, /Ray connector, which has no folder of its own: set the workspace on the cluster/);
    await bad({ remoteWorkspace: 'relative/ws' }, /remoteWorkspace .* must be an absolute path/);
    await bad({ remoteWorkspace: '/shared/../etc' }, /without '\.\.'/);
    await bad({ cwd: 'somewhere' }, /cwd "somewhere" must be an absolute path/);
    await bad({ cwd: '/tmp\n/x' }, /control characters/);
    await bad({ model: '--shard=0/1' }, /must not start with '-'/);
    await bad({ data: `${data}\n$(id)` }, /line breaks/);
    await bad({ name: '../etc' }, /run name/);
    await bad({ shards: 1001 }, /shards/);
    await bad({ connector: 'nowhere' }, /no connector named "nowhere"/);
    expect(existsSync(path.join(ws, 'cluster-sweeps', 'bad'))).toBe(false);
    expect(posts(head)).toHaveLength(0);

    const r = await core.dispatch('sweeps:clusterStart', req);
    expect(r.ok, JSON.stringify(r)).toBe(true);
    await waitFor('the Ray sweep to end', ended(progress, 'ray8'), 240_000);
    const last = progress.filter((p) => p.runId === 'ray8').at(-1)!;
    expect(last, JSON.stringify(last)).toMatchObject({ state: 'done', done: N, total: N, where: 'cluster' });

    // One job per shard, each its own `--shard i/2` entrypoint, starting in the job folder.
    const sent = posts(head);
    expect(sent.map((p) => p.metadata)).toEqual([{ loupe_run: 'ray8', loupe_shard: '0/2' }, { loupe_run: 'ray8', loupe_shard: '1/2' }]);
    sent.forEach((p, i) => expect(p.entrypoint).toMatch(new RegExp(`^cd .+ && .+ eval .*--shard ${i}/2 && echo LOUPE_SHARD_FILES_BEGIN`)));
    expect([...head.jobs.values()].map((j) => j.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);

    const runs = await core.dispatch('runs:list', {});
    expect((runs as { result: Array<{ id: string }> }).result.map((x) => x.id)).toEqual(['ray8']);
    const recs = await readRecords(path.join(ws, 'runs', 'ray8', 'samples.jsonl'));
    expect(recs).toHaveLength(N);
    expect(new Set(recs.map((x) => x.qid)).size).toBe(N);
    const manifest = JSON.parse(readFileSync(path.join(ws, 'runs', 'ray8', 'manifest.json'), 'utf8')) as { shard?: unknown; bench?: { n?: number } };
    expect(manifest.shard).toBeUndefined();
    expect(manifest.bench?.n).toBe(N);
    const job = JSON.parse(readFileSync(path.join(ws, 'cluster-sweeps', 'ray8', 'job.json'), 'utf8')) as { kind: string; state: string };
    expect(job).toMatchObject({ kind: 'ray', state: 'done' });
    const dup = await core.dispatch('sweeps:clusterStart', req);
    expect(dup.ok ? '' : dup.error.message).toMatch(/already exists/);
  }, 300_000);

  it('a core that starts again follows the same Ray jobs from the record: nothing submitted twice', async () => {
    head = await startRayShardHead({ cwd: REPO, hold: true });
    const first = await open('restart', head);
    const req = { connector: 'ray', name: 'again8', shards: 2, model: `replay:${replay}`, bench: 'loupe-synth', data, loupe: LOUPE, remoteWorkspace: path.join(tmp, 'restart', 'cluster-ws') };
    const r = await first.core.dispatch('sweeps:clusterStart', req);
    expect(r.ok, JSON.stringify(r)).toBe(true);
    await waitFor('both shards submitted', () => posts(head!).length === 2, 30_000);
    const record = (): Array<{ jobs: string[]; state: string }> => (JSON.parse(readFileSync(path.join(first.ws, 'cluster-sweeps', 'again8', 'record.json'), 'utf8')) as { shardsState: Array<{ jobs: string[]; state: string }> }).shardsState;
    await waitFor('the record to hold both jobs', () => record().every((s) => s.jobs.length === 1 && s.state === 'queued'), 30_000);
    const jobs1 = record().map((s) => s.jobs.join(','));
    // The app quits while the jobs wait on the cluster.
    await first.core.dispose();
    cores.splice(cores.indexOf(first.core), 1);

    const core2 = await createCore({ workspace: first.ws, transport: 'browser', configDir: path.join(tmp, 'restart', 'config') });
    cores.push(core2);
    const progress: SweepProgress[] = [];
    core2.onEvent((ev, p) => {
      if (ev === 'sweeps:progress') progress.push(p as SweepProgress);
    });
    head.release();
    await waitFor('the followed sweep to end', ended(progress, 'again8'), 240_000);
    expect(progress.filter((p) => p.runId === 'again8').at(-1)).toMatchObject({ state: 'done', done: N, total: N });
    expect(posts(head)).toHaveLength(2);
    expect(record().map((s) => s.jobs.join(','))).toEqual(jobs1);
    const recs = await readRecords(path.join(first.ws, 'runs', 'again8', 'samples.jsonl'));
    expect(recs).toHaveLength(N);
    expect(new Set(recs.map((x) => x.qid)).size).toBe(N);
  }, 300_000);

  it('sweeps:clusterCancel stops every running Ray job (the recorded stop answer) and submits nothing again', async () => {
    head = await startRayShardHead({ cwd: REPO, hold: false });
    const { core, ws, progress } = await open('cancel', head);
    // The eval waits a minute before it starts, so the jobs are RUNNING when they are cancelled.
    const slow = ['bash', '-c', 'sleep 60; exec "$0" "$@"', ...LOUPE];
    const r = await core.dispatch('sweeps:clusterStart', { connector: 'ray', name: 'stop8', shards: 2, model: `replay:${replay}`, bench: 'loupe-synth', data, loupe: slow, remoteWorkspace: path.join(tmp, 'cancel', 'cluster-ws') });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    await waitFor('both jobs running', () => head!.jobs.size === 2 && [...head!.jobs.values()].every((j) => j.state === 'RUNNING'), 30_000);
    const c = await core.dispatch('sweeps:clusterCancel', { runId: 'stop8' });
    expect(c.ok && c.result).toEqual({ cancelled: true });
    const stops = head.received.filter((x) => x.method === 'POST' && x.path.endsWith('/stop')).map((x) => x.path);
    expect(stops.sort()).toEqual([...head.jobs.keys()].map((id) => `/api/jobs/${id}/stop`).sort());
    expect([...head.jobs.values()].map((j) => j.state)).toEqual(['STOPPED', 'STOPPED']);
    expect(progress.filter((p) => p.runId === 'stop8').at(-1)?.state).toBe('cancelled');
    expect((JSON.parse(readFileSync(path.join(ws, 'cluster-sweeps', 'stop8', 'job.json'), 'utf8')) as { state: string }).state).toBe('cancelled');
    // Cancelled again: nothing to do. And nothing was submitted again.
    const again = await core.dispatch('sweeps:clusterCancel', { runId: 'stop8' });
    expect(again.ok && again.result).toEqual({ cancelled: false });
    expect(posts(head)).toHaveLength(2);
  }, 120_000);

  it('a sweep started through one kind of connector is not followed through another of the same name', async () => {
    const ws = path.join(tmp, 'kind', 'ws');
    mkdirSync(path.join(ws, 'cluster-sweeps', 'old8'), { recursive: true });
    writeFileSync(path.join(ws, 'cluster-sweeps', 'old8', 'job.json'), JSON.stringify({ version: 1, runName: 'old8', connector: 'c', shards: 2, evalArgs: [], loupe: ['loupe'], remoteWorkspace: '/shared/ws', state: 'running', createdAt: new Date().toISOString() }));
    const progress: SweepProgress[] = [];
    // The job names no kind (written before Ray sweeps): slurm-ssh. The connector of that name is now a Ray one.
    const service = new ClusterSweepService({ workspace: ws, runs: new RunStore(path.join(ws, 'runs')), connector: async () => new RayConnector({ baseUrl: 'http://127.0.0.1:9', followMode: 'poll' }), onProgress: (p) => progress.push(p) });
    expect(await service.resumeAll()).toEqual([]);
    expect(service.list()).toEqual([]);
    expect(progress.at(-1)).toMatchObject({ runId: 'old8', state: 'error' });
    expect(progress.at(-1)?.error).toMatch(/cannot follow the cluster sweep: it was started through a slurm-ssh connector, and connector "c" is now a ray one/);
    await service.dispose();
  });

  it('loupe eval --cluster RAYCONN: the same sweep from the CLI ends as the merged run', async () => {
    head = await startRayShardHead({ cwd: REPO, hold: false });
    const { core, ws } = await open('cli', head);
    await core.dispose();
    cores.splice(0);
    const env = { ...process.env, LOUPE_CONFIG_DIR: path.join(tmp, 'cli', 'config') };
    const args = ['eval', '--cluster', 'ray', '--shards', '2', '--run', 'cli8', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws, '--cluster-loupe', LOUPE.join(' '), '--json'];
    const noWs = await runCli(args, { env });
    expect(noWs.code).not.toBe(0);
    expect(noWs.stderr).toMatch(/Ray connector, which has no folder of its own/);
    const r = await runCli([...args, '--remote-workspace', path.join(tmp, 'cli', 'cluster-ws')], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(lastJson(r.stdout)).toMatchObject({ run: 'cli8', state: 'done', n: N, expected: N });
    expect(r.stderr).toMatch(/shard 0: submitted Ray job loupe-sweep-cli8-0of2-0-/);
    expect(r.stderr).toMatch(/shard 1: Ray job \S+ SUCCEEDED/);
    expect(new Set((await readRecords(path.join(ws, 'runs', 'cli8', 'samples.jsonl'))).map((x) => x.qid)).size).toBe(N);
  }, 300_000);
});

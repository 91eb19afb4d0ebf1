/**
 * "Run on cluster" through the core's contract (`sweeps:clusterStart`), the door the Runs page uses, on the REAL
 * local Slurm through the REAL sshd: a saved slurm-ssh connector, 8 loupe-synth samples as a 2-task array ending as ONE
 * run of the workspace with 8 unique samples; hostile requests get clear errors and submit nothing. Then the restart:
 * the service that the core builds is stopped mid-way (the app quits) and a new one on the same workspace follows the
 * same array from its record (`resumeAll`, what createCore calls), submitting nothing again.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SweepProgress } from '../../../app/contract';
import { createCore, type Core } from '../../../main/core';
import { describeIf } from '../../support/requirements';
import { SERVICES, loadServicesEnv, type ServicesEnv } from '../connectors/servicesEnv';
import { lastJson, makeSynth, readRecords, REPO, runCli } from '../sweeps/helpers';
import { ciSlurm, saveCiConnector, waitFor } from './helpers';
import { ClusterSweepService, clusterEvalArgs } from '../../../app/sweeps/cluster/service';
import { RunStore } from '../../../app/workspace/runStore';

const env = loadServicesEnv();
const N = 8;

describeIf(!!env, SERVICES, 'Run on cluster through the core (real slurm + sshd)', () => {
  const e = env as ServicesEnv;
  let base: string;
  let ws: string;
  let data: string;
  let replay: string;
  let core: Core | null = null;
  beforeAll(async () => {
    base = path.join(e.jobsDir, `door-${process.pid}-${Date.now()}`);
    ws = path.join(base, 'ws');
    mkdirSync(ws, { recursive: true });
    ({ data, replay } = await makeSynth(base, N));
  }, 300_000);
  afterAll(async () => {
    await core?.dispose();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('2 tasks through sweeps:clusterStart: one merged run of 8 samples', async () => {
    core = await createCore({ workspace: ws, transport: 'browser', configDir: path.join(base, 'config') });
    await saveCiConnector(core, e, 'ci', `${base}/logs`);
    const progress: SweepProgress[] = [];
    core.onEvent((ev, p) => {
      if (ev === 'sweeps:progress') progress.push(p as SweepProgress);
    });
    const req = { connector: 'ci', name: 'door8', shards: 2, model: `replay:${replay}`, bench: 'loupe-synth', data, loupe: [process.execPath, path.join(REPO, 'bin', 'loupe.mjs')], remoteWorkspace: `${base}/cluster-ws`, cwd: REPO, cpus: 1 };

    // Hostile requests: clear errors, nothing submitted, nothing written.
    const bad = async (patch: Record<string, unknown>, re: RegExp): Promise<void> => {
      const r = await core!.dispatch('sweeps:clusterStart', { ...req, name: 'bad', ...patch });
      expect(r.ok, JSON.stringify(patch)).toBe(false);
      expect(r.ok ? '' : r.error.message).toMatch(re);
    };
    await bad({ name: '../etc' }, /run name/);
    await bad({ shards: 0 }, /shards/);
    await bad({ model: '--shard=0/1' }, /must not start with '-'/);
    await bad({ data: `${data}\nrm -rf ~` }, /line breaks/);
    await bad({ connector: 'nowhere' }, /no connector named "nowhere"/);
    await bad({ remoteWorkspace: 'relative/ws' }, /remoteWorkspace .* must be an absolute path/);
    await bad({ loupe: [] }, /loupe/);
    expect(existsSync(path.join(ws, 'cluster-sweeps', 'bad'))).toBe(false);

    const r = await core.dispatch('sweeps:clusterStart', req);
    expect(r.ok, JSON.stringify(r)).toBe(true);
    await waitFor('the sweep to end', () => progress.some((p) => p.runId === 'door8' && (p.state === 'done' || p.state === 'error')), 300_000);
    const last = progress.filter((p) => p.runId === 'door8').at(-1)!;
    expect(last, JSON.stringify(last)).toMatchObject({ state: 'done', done: N, total: N });
    const list = await core.dispatch('sweeps:list', {});
    expect(list.ok && (list.result as SweepProgress[]).some((p) => p.runId === 'door8' && p.state === 'done')).toBe(true);

    // ONE run in the workspace, 8 unique samples; the shard copies live outside runs/.
    const runs = await core.dispatch('runs:list', {});
    expect(runs.ok).toBe(true);
    expect((runs as { result: Array<{ id: string }> }).result.map((x) => x.id)).toEqual(['door8']);
    const recs = await readRecords(path.join(ws, 'runs', 'door8', 'samples.jsonl'));
    expect(recs).toHaveLength(N);
    expect(new Set(recs.map((x) => x.qid)).size).toBe(N);
    const manifest = JSON.parse(readFileSync(path.join(ws, 'runs', 'door8', 'manifest.json'), 'utf8')) as { shard?: unknown; bench?: { n?: number } };
    expect(manifest.shard).toBeUndefined();
    expect(manifest.bench?.n).toBe(N);
    // The same name again is refused: a run of that name exists.
    const dup = await core.dispatch('sweeps:clusterStart', req);
    expect(dup.ok ? '' : dup.error.message).toMatch(/already exists/);
    await core.dispose();
    core = null;
  }, 400_000);

  it('stopped mid-way (the app quits), a new service follows the same array from its record: nothing resubmitted', async () => {
    const ws2 = path.join(base, 'ws2');
    const slurm = ciSlurm(e, `${base}/logs2`);
    const progress: SweepProgress[] = [];
    const make = (): ClusterSweepService =>
      new ClusterSweepService({ workspace: ws2, runs: new RunStore(path.join(ws2, 'runs')), connector: async () => slurm, onProgress: (p) => progress.push(p), pollMs: 500 });
    try {
      const first = make();
      // A slow replay (1.5 s a turn) so the tasks still run when the first service stops.
      await first.start({ connector: 'ci', runName: 'restart8', shards: 2, evalArgs: [...clusterEvalArgs({ model: `replay:${replay}`, bench: 'loupe-synth', data }), '--replay-delay-ms', '1500'], loupe: [process.execPath, path.join(REPO, 'bin', 'loupe.mjs')], remoteWorkspace: `${base}/cluster-ws2`, cwd: REPO, cpus: 1 });
      await waitFor('the first samples to be merged', () => progress.some((p) => p.done > 0), 180_000);
      await first.dispose();
      const rec = (): Array<{ tasks: string[]; state: string }> => (JSON.parse(readFileSync(path.join(ws2, 'cluster-sweeps', 'restart8', 'record.json'), 'utf8')) as { shardsState: Array<{ tasks: string[]; state: string }> }).shardsState;
      const tasks1 = rec().map((s) => s.tasks.join(','));
      expect(rec().some((s) => s.state !== 'done'), 'the sweep should still run when the first service stops').toBe(true);
      progress.length = 0;

      const second = make();
      expect(await second.resumeAll()).toEqual(['restart8']);
      const end = await second.wait('restart8');
      expect(end, JSON.stringify(end)).toMatchObject({ state: 'done', done: N, total: N });
      expect(rec().map((s) => s.tasks.join(','))).toEqual(tasks1);
      const recs = await readRecords(path.join(ws2, 'runs', 'restart8', 'samples.jsonl'));
      expect(new Set(recs.map((x) => x.qid)).size).toBe(N);
      expect(recs).toHaveLength(N);
      await second.dispose();
    } finally {
      await slurm.close();
    }
  }, 400_000);

  it('loupe eval --cluster: the same sweep from the CLI, one merged run; running it again follows nothing new', async () => {
    const ws3 = path.join(base, 'ws3');
    const config = path.join(base, 'config3');
    const setup = await createCore({ workspace: ws3, transport: 'browser', configDir: config });
    await saveCiConnector(setup, e, 'ci', `${base}/logs3`);
    await setup.dispose();
    const args = ['eval', '--cluster', 'ci', '--shards', '2', '--run', 'cli8', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', ws3, '--cluster-loupe', `${process.execPath} ${path.join(REPO, 'bin', 'loupe.mjs')}`, '--remote-workspace', `${base}/cluster-ws3`, '--cluster-cwd', REPO, '--json'];
    const r = await runCli(args, { env: { ...process.env, LOUPE_CONFIG_DIR: config } });
    expect(r.code, r.stderr).toBe(0);
    expect(lastJson(r.stdout)).toMatchObject({ run: 'cli8', state: 'done', n: N, expected: N });
    expect(r.stderr).toMatch(/submitted array \d+ \(shards 0, 1\)/);
    expect(new Set((await readRecords(path.join(ws3, 'runs', 'cli8', 'samples.jsonl'))).map((x) => x.qid)).size).toBe(N);
    // The same command again: the sweep has ended, nothing is submitted, and it says where to look.
    const again = await runCli(args, { env: { ...process.env, LOUPE_CONFIG_DIR: config } });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/a run named cli8 already exists/);
    // Hostile: --shard with --cluster, --shards without it.
    const both = await runCli([...args.slice(0, -1), '--shard', '0/2'], { env: { ...process.env, LOUPE_CONFIG_DIR: config } });
    expect(both.stderr).toMatch(/--shard is set per task by --cluster/);
  }, 400_000);
});

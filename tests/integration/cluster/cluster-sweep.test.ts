/**
 * "Run on cluster" end to end on the REAL local Slurm through the REAL sshd: 60 loupe-synth samples as a 4-task
 * array (`loupe eval --shard i/4` per task, a replay engine so the text is fixed), the shards' run files fetched as
 * they grow, one task `scancel`-ed mid-way and resubmitted; the merged run has 60 unique samples, none run twice,
 * and the same scores as a local `loupe eval` of the same samples.
 */
import { execFileSync } from 'node:child_process';
import { promises as fsp, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SlurmSshConnector } from '../../../app/connectors/slurm';
import { shardOf } from '../../../app/sweeps/plan';
import { ClusterSweep, type ClusterSweepEvent } from '../../../app/sweeps/cluster';
import { loadRunGroup } from '../../../app/sweeps/runner/summary';
import { RunStore } from '../../../app/workspace/runStore';
import { describeIf } from '../../support/requirements';
import { SERVICES, loadServicesEnv, type ServicesEnv } from '../connectors/servicesEnv';
import { makeSynth, readRecords, REPO, runCli } from '../sweeps/helpers';
import { ciSlurm } from './helpers';

const env = loadServicesEnv();
const N = 60;
const SHARDS = 4;

describeIf(!!env, SERVICES, 'a sweep as a Slurm array (real slurm + sshd)', () => {
  const e = env as ServicesEnv;
  let slurm: SlurmSshConnector;
  let base: string;
  let data: string;
  let replay: string;
  let qids: string[];
  beforeAll(async () => {
    // On this test cluster the node is this machine, so the cluster's folders are local folders too.
    base = path.join(e.jobsDir, `sweep-${process.pid}-${Date.now()}`);
    mkdirSync(base, { recursive: true });
    ({ data, replay } = await makeSynth(base, N));
    qids = (await readRecords(replay)).map((r) => r.qid as string);
    slurm = ciSlurm(e, `${base}/logs`);
  }, 600_000); // drawing 60 scenes takes a while on a busy machine
  afterAll(async () => {
    await slurm?.close();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('4 tasks, one cancelled mid-way and resubmitted: one merged run of 60 unique samples, scored as a local run', async () => {
    const evalArgs = ['--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--concurrency', '1'];
    const localWs = path.join(base, 'local-ws');
    const store = new RunStore(path.join(localWs, 'runs'));
    // The shard with the most samples is the one cancelled: it is still running when the cancel lands.
    const sizes = Array.from({ length: SHARDS }, (_, i) => qids.filter((q) => shardOf(q, SHARDS) === i).length);
    const victim = sizes.indexOf(Math.max(...sizes));
    const events: ClusterSweepEvent[] = [];
    let cancelledTask: string | null = null;
    const sweep = new ClusterSweep({
      connector: slurm,
      store,
      recordFile: path.join(localWs, 'cluster-sweeps', 'synth60.json'),
      runName: 'synth60',
      shards: SHARDS,
      evalArgs: [...evalArgs, '--replay-delay-ms', '700'],
      loupe: [process.execPath, path.join(REPO, 'bin', 'loupe.mjs')],
      remoteWorkspace: path.join(base, 'cluster-ws'),
      cwd: REPO,
      resources: { cpus: 1 },
      pollMs: 500,
      onEvent: (ev) => {
        events.push(ev);
        if (ev.type === 'fetched' && ev.shard === victim && !cancelledTask) {
          const rec = JSON.parse(readFileSync(path.join(localWs, 'cluster-sweeps', 'synth60.json'), 'utf8')) as { shardsState: Array<{ tasks: string[] }> };
          cancelledTask = rec.shardsState[victim]!.tasks.at(-1)!;
          execFileSync('scancel', [cancelledTask], { env: { ...process.env, SLURM_CONF: e.slurmConf } });
        }
      },
    });
    const result = await sweep.run();

    // The cancelled task was seen as cancelled and its shard submitted again, once.
    expect(cancelledTask).not.toBeNull();
    expect(events.some((ev) => ev.type === 'task' && ev.taskId === cancelledTask && ev.state === 'cancelled')).toBe(true);
    const again = events.filter((ev) => ev.type === 'resubmitted');
    expect(again.map((ev) => (ev as { shard: number }).shard)).toEqual([victim]);
    expect(result.record.shardsState[victim]!.tasks).toHaveLength(2);
    expect(result.failed).toEqual([]);

    // One merged run: 60 unique samples, complete, and no sample ran twice (no superseded records anywhere).
    expect(result.summary.n).toBe(N);
    expect(result.summary.complete).toBe(true);
    const group = await loadRunGroup(store, 'synth60');
    expect(group.runs).toHaveLength(SHARDS);
    expect(group.superseded).toBe(0);
    expect(new Set(group.records.map((r) => r.qid)).size).toBe(N);
    let lines = 0;
    for (let i = 0; i < SHARDS; i++) {
      const recs = await readRecords(path.join(localWs, 'runs', `synth60.shard-${i}of${SHARDS}`, 'samples.jsonl'));
      expect(recs.every((r) => shardOf(r.qid as string, SHARDS) === i)).toBe(true);
      lines += recs.length;
      // The local copy is byte-identical to the cluster's file.
      const remote = await fsp.readFile(path.join(base, 'cluster-ws', 'runs', `synth60.shard-${i}of${SHARDS}`, 'samples.jsonl'));
      const local = await fsp.readFile(path.join(localWs, 'runs', `synth60.shard-${i}of${SHARDS}`, 'samples.jsonl'));
      expect(local.equals(remote)).toBe(true);
    }
    expect(lines).toBe(N);

    // The same samples run locally in one piece score the same, sample by sample.
    const res = await runCli(['eval', ...evalArgs, '--workspace', localWs, '--run', 'local60', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const localRecs = await readRecords(path.join(localWs, 'runs', 'local60', 'samples.jsonl'));
    expect(localRecs).toHaveLength(N);
    const byQid = new Map(group.records.map((r) => [r.qid, r]));
    for (const l of localRecs) {
      const c = byQid.get(l.qid as string)!;
      expect(c, String(l.qid)).toBeDefined();
      expect([c.score, c.correct, c.prediction, c.stop_reason]).toEqual([l.score, l.correct, l.prediction, l.stop_reason]);
    }

    // Following again finds everything done: nothing is submitted.
    const before = events.length;
    const again2 = await sweep.run();
    expect(again2.summary.n).toBe(N);
    expect(events.slice(before).some((ev) => ev.type === 'submitted' || ev.type === 'resubmitted')).toBe(false);
  }, 900_000);
});

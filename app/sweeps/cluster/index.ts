/**
 * "Run on cluster": one `loupe eval` run split into n shards, run as ONE Slurm array job (task i runs
 * `loupe eval --shard i/n --run NAME` in a workspace on the cluster). Loupe follows every task, copies each shard's
 * run files into the local workspace as they grow (byte offsets, whole lines only), and the local run group
 * `NAME` (`NAME.shard-<i>of<n>` folders, merged by `loadRunGroup`) is the one run the app shows.
 *
 * A task that fails, is cancelled or preempted is submitted again for its index alone; the eval there resumes its
 * shard from the samples already recorded, so no sample is run twice, and the merge keeps one record per qid.
 * The sweep's own record (`recordFile`: array ids, attempts, bytes fetched) is written before and after every
 * submission, so following again after a restart picks up the same jobs instead of submitting new ones.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { shellLine } from '../../engines/served/commands';
import type { SlurmSshConnector } from '../../connectors/slurm';
import { shq } from '../../connectors/ssh';
import { isTerminal, type JobResources, type JobStatus } from '../../connectors/types';
import { writeFileAtomic } from '../../workspace/fsutil';
import type { RunStore } from '../../workspace/runStore';
import { shardSuffix } from '../plan';
import { loadRunGroup, summarize, type RunSummary } from '../runner/summary';

/** What a cluster sweep takes whatever runs it (a Slurm array here, one Ray job per shard in `ray.ts`). */
export interface ClusterSweepBase {
  /** The local workspace's run store: shard folders land in it. */
  store: RunStore;
  /** Where the sweep's record is kept locally (JSON). */
  recordFile: string;
  /** Run name (`--run`); the shards are `NAME.shard-<i>of<n>`. */
  runName: string;
  shards: number;
  /** `loupe eval` arguments other than --shard/--run/--workspace (model, bench, data, limit …), as argv words. */
  evalArgs: string[];
  /** The `loupe` command on the cluster (argv prefix), e.g. ['node', '/opt/loupe/bin/loupe.mjs'] (default ['loupe']). */
  loupe?: string[];
  /** Absolute workspace folder on the cluster, shared by the tasks (so a resubmitted shard resumes). */
  remoteWorkspace: string;
  /** Absolute folder the tasks change to first. */
  cwd?: string;
  resources?: JobResources;
  /** Environment of the tasks (e.g. LOUPE_API_KEY for a served engine goes in `secretEnv`). */
  env?: Record<string, string>;
  secretEnv?: Record<string, string>;
  /** Submissions per shard after the first; beyond that the shard is reported failed. */
  maxResubmits?: number;
  /** Poll period (default 2 s). */
  pollMs?: number;
}

export interface ClusterSweepOptions extends ClusterSweepBase {
  connector: SlurmSshConnector;
  /** Submissions per shard after the first (default 3). */
  maxResubmits?: number;
  lostAfter?: number;
  onEvent?: (e: ClusterSweepEvent) => void;
  signal?: AbortSignal;
}

export type ClusterSweepEvent =
  | { type: 'submitted'; arrayId: string; shards: number[] }
  | { type: 'task'; shard: number; taskId: string; state: JobStatus['state']; rawState: string }
  | { type: 'fetched'; shard: number; records: number; bytes: number }
  | { type: 'resubmitted'; shard: number; previous: string; taskId: string; reason: string }
  | { type: 'shard-done'; shard: number }
  | { type: 'shard-failed'; shard: number; reason: string }
  | { type: 'warning'; message: string };

/** One shard's history in the record. */
export interface ShardRecord {
  shard: number;
  /** Task ids submitted for this shard, oldest first (`<array>_<shard>`); the last is current. */
  tasks: string[];
  state: 'queued' | 'running' | 'done' | 'failed' | 'submitting';
  /** Bytes of the remote samples.jsonl copied so far. */
  fetched: number;
  lastRaw?: string;
  /** Polls in a row the current task was missing from scontrol. */
  missing?: number;
}

export interface ClusterSweepRecord {
  version: 1;
  runName: string;
  shards: number;
  remoteWorkspace: string;
  shardsState: ShardRecord[];
  updatedAt: string;
}

export interface ClusterSweepResult {
  record: ClusterSweepRecord;
  summary: RunSummary;
  /** Shards that ran out of resubmissions. */
  failed: number[];
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

const RUN_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/;

export class ClusterSweep {
  private record!: ClusterSweepRecord;
  constructor(private readonly o: ClusterSweepOptions) {
    if (!RUN_NAME_RE.test(o.runName) || /\.shard-\d+of\d+$/.test(o.runName)) throw new Error(`cluster sweep: run name ${JSON.stringify(o.runName)} must be 1-101 characters of A-Z a-z 0-9 . _ - (not a shard id)`);
    if (!Number.isInteger(o.shards) || o.shards < 1 || o.shards > 1000) throw new Error(`cluster sweep: shards must be a whole number from 1 to 1000, got ${JSON.stringify(o.shards)}`);
    if (!path.posix.isAbsolute(o.remoteWorkspace) || o.remoteWorkspace.split('/').includes('..')) throw new Error(`cluster sweep: remoteWorkspace ${JSON.stringify(o.remoteWorkspace)} must be an absolute path without '..'`);
    for (const a of o.evalArgs) {
      if (/^--(shard|run|workspace)(=|$)/.test(a)) throw new Error(`cluster sweep: ${a} is set by the sweep itself; leave it out of evalArgs`);
    }
  }

  private shardId(i: number): string {
    return this.o.runName + shardSuffix({ index: i, count: this.o.shards });
  }

  private remoteRunDir(i: number): string {
    return `${this.o.remoteWorkspace.replace(/\/+$/, '')}/runs/${this.shardId(i)}`;
  }

  private async save(): Promise<void> {
    this.record.updatedAt = new Date().toISOString();
    await fsp.mkdir(path.dirname(this.o.recordFile), { recursive: true });
    await writeFileAtomic(this.o.recordFile, JSON.stringify(this.record, null, 2) + '\n');
  }

  private async load(): Promise<ClusterSweepRecord | null> {
    let text: string;
    try {
      text = await fsp.readFile(this.o.recordFile, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    let r: ClusterSweepRecord;
    try {
      r = JSON.parse(text) as ClusterSweepRecord;
    } catch {
      throw new Error(`cluster sweep: ${this.o.recordFile} is not valid JSON; move it away to start the sweep afresh (the remote shards resume either way)`);
    }
    if (r.version !== 1 || r.runName !== this.o.runName || r.shards !== this.o.shards || !Array.isArray(r.shardsState) || r.shardsState.length !== r.shards) {
      throw new Error(`cluster sweep: ${this.o.recordFile} belongs to another sweep (run ${JSON.stringify(r.runName)}, ${r.shards} shards); pick another run name`);
    }
    return r;
  }

  /** The batch script of a task: its index is the shard. */
  private script(): string {
    const loupe = this.o.loupe ?? ['loupe'];
    const argv = [...loupe, 'eval', ...this.o.evalArgs, '--run', this.o.runName, '--workspace', this.o.remoteWorkspace, '--no-progress', '--json'];
    return [
      '#!/bin/bash',
      `echo "LOUPE_SHARD $SLURM_ARRAY_TASK_ID/${this.o.shards} on $(hostname) (job $SLURM_JOB_ID)"`,
      `exec ${shellLine(argv)} --shard "$SLURM_ARRAY_TASK_ID/${this.o.shards}"`,
    ].join('\n');
  }

  private async submit(indices: number[]): Promise<string> {
    for (const i of indices) this.record.shardsState[i]!.state = 'submitting';
    await this.save(); // a crash now leaves 'submitting': the next follow looks in squeue before submitting again
    const array = indices.join(',');
    const r = await this.o.connector.submit({
      name: `loupe-sweep-${this.o.runName}`.slice(0, 64),
      script: this.script(),
      resources: { ...(this.o.resources ?? {}), array },
      ...(this.o.cwd ? { cwd: this.o.cwd } : {}),
      ...(this.o.env ? { env: this.o.env } : {}),
      ...(this.o.secretEnv ? { secretEnv: this.o.secretEnv } : {}),
    });
    for (const i of indices) {
      const s = this.record.shardsState[i]!;
      s.tasks.push(`${r.id}_${i}`);
      s.state = 'queued';
      s.missing = 0;
    }
    await this.save();
    this.o.onEvent?.({ type: 'submitted', arrayId: r.id, shards: indices });
    return r.id;
  }

  /**
   * Copy new whole lines of the shard's samples.jsonl (and its manifest) into the local run folder. A remote file
   * shorter than what was copied (rewritten on the cluster) is copied again from the start.
   */
  private async fetchShard(i: number): Promise<void> {
    const s = this.record.shardsState[i]!;
    const dir = this.remoteRunDir(i);
    const man = shq(`${dir}/manifest.json`);
    const smp = shq(`${dir}/samples.jsonl`);
    const max = 8 * 1024 * 1024;
    const cmd = `if [ -e ${man} ]; then base64 -w0 ${man}; echo; stat -c %s ${smp} 2>/dev/null || echo 0; tail -c +${s.fetched + 1} ${smp} 2>/dev/null | head -c ${max}; else echo NONE; fi`;
    const r = await this.o.connector.ssh.exec(cmd, { timeoutMs: 60_000 });
    const out = r.stdout;
    const nl1 = out.indexOf(0x0a);
    const first = out.subarray(0, nl1 < 0 ? out.length : nl1).toString('utf8');
    if (first === 'NONE' || nl1 < 0) return;
    const nl2 = out.indexOf(0x0a, nl1 + 1);
    const size = Number(out.subarray(nl1 + 1, nl2).toString('utf8').trim());
    let data = out.subarray(nl2 + 1);
    const local = this.o.store.runDir(this.shardId(i));
    await fsp.mkdir(local, { recursive: true });
    await writeFileAtomic(path.join(local, 'manifest.json'), Buffer.from(first, 'base64'));
    const file = path.join(local, 'samples.jsonl');
    if (Number.isFinite(size) && size < s.fetched) {
      this.o.onEvent?.({ type: 'warning', message: `shard ${i}: the cluster's samples.jsonl shrank (${size} < ${s.fetched} bytes copied); copying it again` });
      s.fetched = 0;
      await fsp.writeFile(file, '');
      return this.fetchShard(i);
    }
    const end = data.lastIndexOf(0x0a);
    if (end < 0) {
      if (s.fetched === 0) await fsp.writeFile(file, '', { flag: 'a' });
      return;
    }
    data = data.subarray(0, end + 1);
    await fsp.appendFile(file, data);
    s.fetched += data.length;
    await this.save();
    let records = 0;
    for (const b of data) if (b === 0x0a) records++;
    this.o.onEvent?.({ type: 'fetched', shard: i, records, bytes: data.length });
  }

  /** Submit (or pick up) the array and follow it to the end; resolves with the merged run's summary. */
  async run(): Promise<ClusterSweepResult> {
    const o = this.o;
    const existing = await this.load();
    this.record = existing ?? {
      version: 1,
      runName: o.runName,
      shards: o.shards,
      remoteWorkspace: o.remoteWorkspace,
      shardsState: Array.from({ length: o.shards }, (_, shard) => ({ shard, tasks: [], state: 'queued' as const, fetched: 0 })),
      updatedAt: new Date().toISOString(),
    };
    // A crash between 'submitting' and the job id: look for a live job of this sweep before submitting again.
    const stuck = this.record.shardsState.filter((s) => s.state === 'submitting' || s.tasks.length === 0).map((s) => s.shard);
    if (stuck.length) {
      const live = existing ? await o.connector.list().catch(() => []) : [];
      const mine = live.filter((j) => j.name === `loupe-sweep-${o.runName}`.slice(0, 64));
      if (mine.length) throw new Error(`cluster sweep ${o.runName}: shards ${stuck.join(', ')} were being submitted when Loupe stopped, and jobs of this sweep are queued (${mine.map((j) => j.id).join(', ')}); cancel them or wait for them, then follow again`);
      await this.submit(stuck);
    }
    const maxResubmits = o.maxResubmits ?? 3;
    const lostAfter = o.lostAfter ?? 3;
    const failed: number[] = [];
    while (!o.signal?.aborted) {
      const active = this.record.shardsState.filter((s) => s.state === 'queued' || s.state === 'running');
      if (!active.length) break;
      const arrays = new Set(active.map((s) => s.tasks[s.tasks.length - 1]!.split('_')[0]!));
      const states = new Map<string, JobStatus>();
      for (const a of arrays) {
        try {
          for (const [i, st] of await o.connector.arrayTasks(a)) states.set(`${a}_${i}`, st);
        } catch (e) {
          o.onEvent?.({ type: 'warning', message: `array ${a}: ${e instanceof Error ? e.message : String(e)} (retrying)` });
        }
      }
      const resubmit: Array<{ shard: number; reason: string }> = [];
      for (const s of active) {
        const task = s.tasks[s.tasks.length - 1]!;
        const st = states.get(task);
        try {
          await this.fetchShard(s.shard);
        } catch (e) {
          o.onEvent?.({ type: 'warning', message: `shard ${s.shard}: fetching run files failed: ${e instanceof Error ? e.message : String(e)} (retrying)` });
          continue;
        }
        if (!st) {
          s.missing = (s.missing ?? 0) + 1;
          if (s.missing >= lostAfter) resubmit.push({ shard: s.shard, reason: `task ${task} is no longer known to Slurm` });
          continue;
        }
        s.missing = 0;
        if (st.rawState !== s.lastRaw) {
          s.lastRaw = st.rawState;
          o.onEvent?.({ type: 'task', shard: s.shard, taskId: task, state: st.state, rawState: st.rawState });
        }
        if (st.state === 'running') s.state = 'running';
        if (!isTerminal(st.state)) continue;
        if (st.state === 'succeeded') {
          s.state = 'done';
          await this.save();
          o.onEvent?.({ type: 'shard-done', shard: s.shard });
        } else {
          resubmit.push({ shard: s.shard, reason: `task ${task} ended ${st.rawState}${st.exitCode !== null && st.exitCode !== undefined ? ` (exit ${st.exitCode})` : ''}` });
        }
      }
      const again: number[] = [];
      for (const { shard, reason } of resubmit) {
        const s = this.record.shardsState[shard]!;
        if (s.tasks.length > maxResubmits) {
          s.state = 'failed';
          failed.push(shard);
          await this.save();
          o.onEvent?.({ type: 'shard-failed', shard, reason: `${reason}; gave up after ${s.tasks.length} submissions` });
        } else {
          again.push(shard);
        }
      }
      if (again.length) {
        const previous = again.map((i) => this.record.shardsState[i]!.tasks.at(-1)!);
        const arrayId = await this.submit(again);
        again.forEach((shard, k) => o.onEvent?.({ type: 'resubmitted', shard, previous: previous[k]!, taskId: `${arrayId}_${shard}`, reason: resubmit.find((r) => r.shard === shard)!.reason }));
      }
      await this.save();
      await sleep(o.pollMs ?? 2000, o.signal);
    }
    const summary = summarize(await loadRunGroup(o.store, o.runName));
    return { record: this.record, summary, failed: [...new Set([...failed, ...this.record.shardsState.filter((s) => s.state === 'failed').map((s) => s.shard)])] };
  }

  /** Cancel every live task of the sweep (the record stays: following again resubmits what is missing). */
  async cancel(): Promise<void> {
    const rec = (await this.load()) ?? this.record;
    if (!rec) return;
    for (const s of rec.shardsState) {
      const t = s.tasks.at(-1);
      if (t && s.state !== 'done' && s.state !== 'failed') await this.o.connector.cancel(t).catch(() => undefined);
    }
  }
}

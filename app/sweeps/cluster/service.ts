/**
 * The cluster-sweep service: the one owner of "Run on cluster" in a workspace, used by the core (the Runs page's
 * form, `sweeps:cluster*`) and by `loupe eval --cluster`. Through a slurm-ssh connector it runs a
 * ClusterSweep (one Slurm array job, one task per shard, files copied as they grow); through a Ray connector a
 * RaySweep (one Ray job per shard, files read from the job's log when it ends). Either way it keeps, per sweep, in
 * `<workspace>/cluster-sweeps/<name>/`:
 *   job.json     what was asked (connector and its kind, shards, eval arguments, remote workspace) and the state;
 *   record.json  the sweep's record (array or job ids, attempts, bytes fetched): following again never resubmits;
 *   runs/        the shards' run folders as copied from the cluster (`NAME.shard-<i>of<n>`).
 * The shards are merged, as they grow, into ONE run `runs/NAME` of the workspace (one record per qid, the last one
 * written wins, as `loupe report` merges), which is what the Runs page lists. A core that starts again follows every
 * sweep still marked running (`resumeAll`).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Connector } from '../../connectors';
import { RayConnector } from '../../connectors/ray';
import { SlurmSshConnector } from '../../connectors/slurm';
import type { RunManifest, SampleRecord, SweepProgress } from '../../contract';
import { writeFileAtomic } from '../../workspace/fsutil';
import { RunStore } from '../../workspace/runStore';
import { loadRunGroup } from '../runner/summary';
import { ClusterSweep, type ClusterSweepEvent } from './index';
import { RaySweep, type RaySweepEvent } from './ray';

/** A sweep's events: a Slurm array's or a Ray sweep's (both have submitted / fetched / shard-done / shard-failed). */
export type AnyClusterSweepEvent = ClusterSweepEvent | RaySweepEvent;
type ClusterConnector = SlurmSshConnector | RayConnector;
/** What the service needs of either sweep. */
interface Sweep {
  run(): Promise<{ failed: number[] }>;
  cancel(): Promise<void>;
}

/** What a sweep was asked to do; enough to follow it again after a restart. */
export interface ClusterSweepJob {
  version: 1;
  runName: string;
  connector: string;
  /** The connector's kind when the sweep started (absent in jobs written before Ray sweeps: slurm-ssh). */
  kind?: 'slurm-ssh' | 'ray';
  shards: number;
  evalArgs: string[];
  loupe: string[];
  remoteWorkspace: string;
  cwd?: string;
  cpus?: number;
  state: 'running' | 'done' | 'failed' | 'cancelled';
  error?: string;
  createdAt: string;
  endedAt?: string;
}

export interface ClusterSweepStart {
  connector: string;
  runName: string;
  shards: number;
  /** `loupe eval` arguments other than --shard/--run/--workspace. */
  evalArgs: string[];
  /** The `loupe` command on the cluster (argv words; default `loupe`). */
  loupe?: string[];
  /**
   * Absolute workspace folder on the cluster (default for slurm-ssh: `<connector's remote folder>/loupe-workspace`;
   * a Ray connector has no folder of its own, so a Ray sweep must name one its nodes share).
   */
  remoteWorkspace?: string;
  cwd?: string;
  cpus?: number;
}

export interface ClusterSweepServiceOptions {
  workspace: string;
  /** The workspace's run store: the merged run lands in it. */
  runs: RunStore;
  /** A saved connector by name (the training service's). */
  connector(name: string): Promise<Connector>;
  onProgress?(p: SweepProgress): void;
  onRunChanged?(runId: string): void;
  /** Every ClusterSweep event, for a CLI's log lines. */
  onEvent?(runName: string, e: AnyClusterSweepEvent): void;
  pollMs?: number;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/;

interface Live {
  job: ClusterSweepJob;
  progress: SweepProgress;
  ctrl: AbortController;
  sweep: Sweep | null;
  done: Promise<void>;
  merging: Promise<void>;
}

export class ClusterSweepService {
  private readonly live = new Map<string, Live>();
  private readonly root: string;
  constructor(private readonly o: ClusterSweepServiceOptions) {
    this.root = path.join(o.workspace, 'cluster-sweeps');
  }

  private dir(name: string): string {
    return path.join(this.root, name);
  }

  private async saveJob(job: ClusterSweepJob): Promise<void> {
    await fsp.mkdir(this.dir(job.runName), { recursive: true });
    await writeFileAtomic(path.join(this.dir(job.runName), 'job.json'), JSON.stringify(job, null, 2) + '\n');
  }

  private async readJob(name: string): Promise<ClusterSweepJob | null> {
    try {
      const j = JSON.parse(await fsp.readFile(path.join(this.dir(name), 'job.json'), 'utf8')) as ClusterSweepJob;
      return j.version === 1 && j.runName === name ? j : null;
    } catch {
      return null;
    }
  }

  private async clusterConnector(name: string): Promise<ClusterConnector> {
    const c = await this.o.connector(name);
    if (!(c instanceof SlurmSshConnector) && !(c instanceof RayConnector)) {
      throw new Error(`connector ${JSON.stringify(name)} is a ${c.kind} connector; "Run on cluster" runs through a Slurm connector over SSH (slurm-ssh: one array job, files copied over SSH) or a Ray connector (one Ray job per shard, files read from its log); ${c.kind} cannot bring the shards' files back`);
    }
    return c;
  }

  /** Validate, write the job, submit the array and follow it in the background. Resolves once submitted. */
  async start(req: ClusterSweepStart): Promise<{ runId: string }> {
    if (!NAME_RE.test(req.runName) || /\.shard-\d+of\d+$/.test(req.runName)) throw new Error(`run name ${JSON.stringify(req.runName)}: 1-101 characters of A-Z a-z 0-9 . _ - (not starting with . _ -, not a shard id)`);
    if (this.live.has(req.runName) || (await this.o.runs.hasRun(req.runName)) || (await this.readJob(req.runName))) throw new Error(`a run named ${req.runName} already exists in this workspace; pick another name`);
    const c = await this.clusterConnector(req.connector);
    if (c instanceof RayConnector && !req.remoteWorkspace) throw new Error(`connector ${JSON.stringify(req.connector)} is a Ray connector, which has no folder of its own: set the workspace on the cluster (an absolute folder every Ray node shares, so a shard submitted again resumes)`);
    const job: ClusterSweepJob = {
      version: 1,
      runName: req.runName,
      connector: req.connector,
      kind: c.kind,
      shards: req.shards,
      evalArgs: req.evalArgs,
      loupe: req.loupe?.length ? req.loupe : ['loupe'],
      remoteWorkspace: req.remoteWorkspace ?? `${(c as SlurmSshConnector).remoteDir.replace(/\/+$/, '')}/loupe-workspace`,
      ...(req.cwd ? { cwd: req.cwd } : {}),
      ...(req.cpus ? { cpus: req.cpus } : {}),
      state: 'running',
      createdAt: new Date().toISOString(),
    };
    // The sweep's own checks (shards, run name, remote folder, reserved eval flags) before anything is written.
    this.sweepFor(job, c, new AbortController().signal);
    await this.saveJob(job);
    try {
      await this.follow(job, c);
    } catch (e) {
      // Nothing reached the cluster: forget the sweep, so the same name can be used again.
      this.live.get(job.runName)?.ctrl.abort();
      this.live.delete(job.runName);
      await fsp.rm(this.dir(job.runName), { recursive: true, force: true });
      throw e;
    }
    return { runId: job.runName };
  }

  private sweepFor(job: ClusterSweepJob, c: ClusterConnector, signal: AbortSignal, onEvent?: (e: AnyClusterSweepEvent) => void): Sweep {
    const common = {
      store: new RunStore(path.join(this.dir(job.runName), 'runs')),
      recordFile: path.join(this.dir(job.runName), 'record.json'),
      runName: job.runName,
      shards: job.shards,
      evalArgs: job.evalArgs,
      loupe: job.loupe,
      remoteWorkspace: job.remoteWorkspace,
      ...(job.cwd ? { cwd: job.cwd } : {}),
      ...(job.cpus ? { resources: { cpus: job.cpus } } : {}),
      ...(this.o.pollMs ? { pollMs: this.o.pollMs } : {}),
      signal,
      ...(onEvent ? { onEvent } : {}),
    };
    return c instanceof RayConnector ? new RaySweep({ ...common, connector: c }) : new ClusterSweep({ ...common, connector: c });
  }

  /** Follow a job: resolves once its array is submitted (or picked up); the rest runs in the background. */
  private async follow(job: ClusterSweepJob, c: ClusterConnector): Promise<void> {
    const hadRecord = await fsp.access(path.join(this.dir(job.runName), 'record.json')).then(() => true, () => false);
    const ctrl = new AbortController();
    let submitted!: () => void;
    let failedEarly!: (e: Error) => void;
    const onSubmit = new Promise<void>((resolve, reject) => {
      submitted = resolve;
      failedEarly = reject;
    });
    const live: Live = {
      job,
      ctrl,
      sweep: null,
      progress: { runId: job.runName, name: job.runName, state: 'starting', done: 0, total: 0, correct: 0, samplesPerSec: null, etaMs: null, where: 'cluster' },
      done: Promise.resolve(),
      merging: Promise.resolve(),
    };
    this.live.set(job.runName, live);
    const emit = (patch: Partial<SweepProgress>): void => {
      live.progress = { ...live.progress, ...patch };
      this.o.onProgress?.(live.progress);
    };
    emit({});
    const merge = (): Promise<void> => (live.merging = live.merging.then(() => this.merge(job, emit)).catch((e: unknown) => this.o.onEvent?.(job.runName, { type: 'warning', message: `merging the shards: ${e instanceof Error ? e.message : String(e)}` })));
    const sweep = this.sweepFor(job, c, ctrl.signal, (e) => {
      this.o.onEvent?.(job.runName, e);
      if (e.type === 'submitted') {
        submitted();
        emit({ state: 'running' });
      } else if (e.type === 'fetched' || e.type === 'shard-done') void merge();
    });
    live.sweep = sweep;
    // A record from before (a restart) may submit nothing: the 'submitted' event need not come.
    if (hadRecord) {
      submitted();
      emit({ state: 'running' });
    }
    live.done = sweep
      .run()
      .then(async (r) => {
        submitted();
        await merge();
        if (ctrl.signal.aborted) return; // the core is stopping: the sweep goes on on the cluster, followed at the next start
        job.state = r.failed.length ? 'failed' : 'done';
        if (r.failed.length) job.error = `shard(s) ${r.failed.join(', ')} failed after every resubmission`;
        job.endedAt = new Date().toISOString();
        await this.saveJob(job);
        emit({ state: r.failed.length ? 'error' : 'done', ...(job.error ? { error: job.error } : {}) });
      })
      .catch(async (e: unknown) => {
        const message = e instanceof Error ? e.message : String(e);
        failedEarly(new Error(message));
        if (ctrl.signal.aborted) return;
        job.state = 'failed';
        job.error = message;
        job.endedAt = new Date().toISOString();
        await this.saveJob(job).catch(() => undefined);
        emit({ state: 'error', error: message });
      });
    return onSubmit;
  }

  /** Merge the copied shards into the workspace's run NAME: new qids appended; a rewritten record replaces the file. */
  private async merge(job: ClusterSweepJob, emit: (p: Partial<SweepProgress>) => void): Promise<void> {
    const shards = new RunStore(path.join(this.dir(job.runName), 'runs'));
    let group;
    try {
      group = await loadRunGroup(shards, job.runName);
    } catch {
      return; // no shard has a manifest yet
    }
    const first = group.runs[0]!.manifest;
    // Each shard's manifest counts its own samples: the sum is the whole run once every shard has started.
    const expected = group.expected;
    const runs = this.o.runs;
    if (!(await runs.hasRun(job.runName))) {
      const { shard: _shard, id: _id, ...rest } = first;
      const manifest: RunManifest = { ...rest, id: job.runName, name: job.runName, ...(first.bench ? { bench: { ...first.bench, n: expected } } : {}) } as RunManifest;
      await (await runs.createRun(manifest)).close();
    } else {
      // More shards have started since: the whole run's sample count grows with them.
      const m = await runs.readManifest(job.runName);
      if (m.bench && m.bench.n !== expected) await runs.writeManifest({ ...m, bench: { ...m.bench, n: expected } });
    }
    const have = await runs.readSamples(job.runName);
    const byQid = new Map<string, SampleRecord>(have.records.map((r) => [r.qid, r]));
    const handle = await runs.openRun(job.runName);
    const changed = group.records.some((r) => byQid.has(r.qid) && JSON.stringify(byQid.get(r.qid)) !== JSON.stringify(r));
    if (changed) {
      await handle.close();
      await runs.replaceSamples(job.runName, group.records);
    } else {
      for (const r of group.records) if (!byQid.has(r.qid)) await handle.appendSample(r);
      await handle.close();
    }
    const correct = group.records.filter((r) => r.correct).length;
    emit({ done: group.records.length, total: Math.max(expected, group.records.length), correct });
    this.o.onRunChanged?.(job.runName);
  }

  /** Follow again every sweep a previous core left running (its record keeps it from submitting twice). */
  async resumeAll(): Promise<string[]> {
    let names: string[];
    try {
      names = await fsp.readdir(this.root);
    } catch {
      return [];
    }
    const resumed: string[] = [];
    for (const name of names) {
      if (this.live.has(name)) continue;
      const job = await this.readJob(name);
      if (!job || job.state !== 'running') continue;
      try {
        const c = await this.clusterConnector(job.connector);
        if ((job.kind ?? 'slurm-ssh') !== c.kind) throw new Error(`it was started through a ${job.kind ?? 'slurm-ssh'} connector, and connector ${JSON.stringify(job.connector)} is now a ${c.kind} one`);
        // With a record, following resolves at once (nothing to submit); its errors arrive as progress.
        await this.follow(job, c).catch(() => undefined);
        resumed.push(name);
      } catch (e) {
        this.o.onProgress?.({ runId: name, name, state: 'error', done: 0, total: 0, correct: 0, samplesPerSec: null, etaMs: null, where: 'cluster', error: `cannot follow the cluster sweep: ${e instanceof Error ? e.message : String(e)}` });
      }
    }
    return resumed;
  }

  list(): SweepProgress[] {
    return [...this.live.values()].map((l) => l.progress);
  }

  /** Wait for a sweep to end (the CLI follows in the foreground). */
  async wait(name: string): Promise<SweepProgress | null> {
    const l = this.live.get(name);
    if (!l) return null;
    await l.done;
    await l.merging;
    return l.progress;
  }

  /** Cancel every task of a sweep on the cluster and stop following it. */
  async cancel(name: string): Promise<boolean> {
    const l = this.live.get(name);
    if (!l || l.job.state !== 'running') return false;
    await l.sweep?.cancel();
    l.ctrl.abort();
    await l.done;
    l.job.state = 'cancelled';
    l.job.endedAt = new Date().toISOString();
    await this.saveJob(l.job);
    l.progress = { ...l.progress, state: 'cancelled' };
    this.o.onProgress?.(l.progress);
    return true;
  }

  /** Stop following (the core is stopping); the jobs go on on the cluster and are followed at the next start. */
  async dispose(): Promise<void> {
    for (const l of this.live.values()) l.ctrl.abort();
    await Promise.allSettled([...this.live.values()].map((l) => l.done.then(() => l.merging)));
    this.live.clear();
  }
}

/** What a cluster sweep evaluates, as `loupe eval` flags on the cluster. */
export interface ClusterEvalSpec {
  model: string;
  bench: string;
  data: string;
  dialect?: string;
  prompt?: string;
  limit?: number;
  maxTokens?: number;
  concurrency?: number;
}

/**
 * The `loupe eval` words of a cluster sweep. Each value is one argv word in the task's script (quoted there); a value
 * that starts with '-' would read as a flag and one with a line break would not survive, so both are refused.
 */
export function clusterEvalArgs(s: ClusterEvalSpec): string[] {
  const word = (what: string, v: string): string => {
    if (v.startsWith('-')) throw new Error(`${what} ${JSON.stringify(v)} must not start with '-' (it would read as a flag)`);
    if (/[\u0000-\u001f\u007f]/.test(v)) throw new Error(`${what} must not contain line breaks or control characters`);
    return v;
  };
  return [
    '--model', word('model', s.model),
    '--bench', word('bench', s.bench),
    '--data', word('data', s.data),
    ...(s.dialect ? ['--dialect', word('dialect', s.dialect)] : []),
    ...(s.prompt ? ['--prompt', word('prompt', s.prompt)] : []),
    ...(s.limit !== undefined ? ['--limit', String(s.limit)] : []),
    ...(s.maxTokens !== undefined ? ['--max-tokens', String(s.maxTokens)] : []),
    ...(s.concurrency !== undefined ? ['--concurrency', String(s.concurrency)] : []),
  ];
}

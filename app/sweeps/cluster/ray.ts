/**
 * "Run on cluster" through Ray Jobs: one Ray job per shard (`loupe eval --shard i/n` as its entrypoint), since the
 * Jobs API has no arrays. What the recorded Ray 2.58 API allows for getting the shard's files back is the job's log
 * (`GET /api/jobs/{id}/logs`, complete once the job is terminal; no file API), so the entrypoint ends by printing the
 * shard's manifest and samples as one base64 block between markers; Loupe reads the log once the job SUCCEEDED and
 * writes the shard folder. (No live per-sample progress, unlike Slurm over SSH: the files come when a shard ends.)
 *
 * A FAILED or STOPPED job is submitted again under a NEW submission id (Ray refuses a reused one; recorded as
 * submit_duplicate_submission_id); the eval on the cluster resumes the shard from the samples its workspace has. The
 * record (`recordFile`: job ids per shard) is written before and after every submission, so following again after a
 * restart picks up the same jobs.
 */
import { promises as fsp } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { RayConnector } from '../../connectors/ray';
import { isTerminal } from '../../connectors/types';
import type { ClusterSweepBase } from './index';
import { shellLine } from '../../engines/served/commands';
import { writeFileAtomic } from '../../workspace/fsutil';
import { shardSuffix } from '../plan';
import { loadRunGroup, summarize, type RunSummary } from '../runner/summary';

export const SHARD_FILES_BEGIN = 'LOUPE_SHARD_FILES_BEGIN';
export const SHARD_FILES_END = 'LOUPE_SHARD_FILES_END';

export interface RaySweepOptions extends ClusterSweepBase {
  connector: Pick<RayConnector, 'submit' | 'status' | 'logs' | 'cancel'>;
  /** Submissions per shard after the first (default 2). */
  maxResubmits?: number;
  onEvent?: (e: RaySweepEvent) => void;
  signal?: AbortSignal;
  /** The submission id of a shard's k-th submission (default `loupe-sweep-NAME-<i>of<n>-<k>-<random>`). */
  submissionId?: (shard: number, attempt: number) => string;
}

export type RaySweepEvent =
  | { type: 'submitted'; shard: number; jobId: string; attempt: number }
  | { type: 'job'; shard: number; jobId: string; rawState: string }
  | { type: 'fetched'; shard: number; records: number; bytes: number }
  | { type: 'shard-done'; shard: number }
  | { type: 'shard-failed'; shard: number; reason: string }
  | { type: 'warning'; message: string };

export interface RaySweepRecord {
  version: 1;
  kind: 'ray';
  runName: string;
  shards: number;
  shardsState: Array<{ shard: number; jobs: string[]; state: 'queued' | 'done' | 'failed' | 'submitting'; lastRaw?: string; reason?: string }>;
  updatedAt: string;
}

/** The shard's files out of a job log: the LAST complete marker block (a resumed eval prints one per attempt). */
export function parseShardFiles(log: string): { manifest: Buffer; samples: Buffer } | null {
  const lines = log.split('\n').map((l) => l.replace(/\r$/, ''));
  // (lastIndexOf(x, -1) would search from the end again: stop at index 0 ourselves.)
  for (let i = lines.lastIndexOf(SHARD_FILES_BEGIN); i >= 0; i = i > 0 ? lines.lastIndexOf(SHARD_FILES_BEGIN, i - 1) : -1) {
    if (lines[i + 3] !== SHARD_FILES_END) continue;
    const [m, s] = [lines[i + 1] ?? '', lines[i + 2] ?? ''];
    if (!/^[A-Za-z0-9+/=]+$/.test(m) || !/^[A-Za-z0-9+/=]*$/.test(s)) continue;
    return { manifest: Buffer.from(m, 'base64'), samples: Buffer.from(s, 'base64') };
  }
  return null;
}

export class RaySweep {
  private record!: RaySweepRecord;
  constructor(private readonly o: RaySweepOptions) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/.test(o.runName) || /\.shard-\d+of\d+$/.test(o.runName)) throw new Error(`ray sweep: run name ${JSON.stringify(o.runName)} must be 1-101 characters of A-Z a-z 0-9 . _ - (not a shard id)`);
    if (!Number.isInteger(o.shards) || o.shards < 1 || o.shards > 1000) throw new Error(`ray sweep: shards must be a whole number from 1 to 1000, got ${JSON.stringify(o.shards)}`);
    if (!path.posix.isAbsolute(o.remoteWorkspace) || o.remoteWorkspace.split('/').includes('..')) throw new Error(`ray sweep: remoteWorkspace ${JSON.stringify(o.remoteWorkspace)} must be an absolute path without '..'`);
    if (o.cwd !== undefined && (!path.posix.isAbsolute(o.cwd) || /[\u0000-\u001f\u007f]/.test(o.cwd))) throw new Error(`ray sweep: cwd ${JSON.stringify(o.cwd)} must be an absolute path without control characters`);
    for (const a of o.evalArgs) if (/^--(shard|run|workspace)(=|$)/.test(a)) throw new Error(`ray sweep: ${a} is set by the sweep itself; leave it out of evalArgs`);
  }

  private shardId(i: number): string {
    return this.o.runName + shardSuffix({ index: i, count: this.o.shards });
  }

  /** The entrypoint of shard i: the eval, then its files as one marker block in the log. */
  entrypoint(i: number): string {
    const ws = this.o.remoteWorkspace.replace(/\/+$/, '');
    const argv = [...(this.o.loupe ?? ['loupe']), 'eval', ...this.o.evalArgs, '--run', this.o.runName, '--workspace', ws, '--no-progress', '--json', '--shard', `${i}/${this.o.shards}`];
    const dir = shellLine([`${ws}/runs/${this.shardId(i)}`]);
    return `${this.o.cwd ? `cd ${shellLine([this.o.cwd])} && ` : ''}${shellLine(argv)} && echo ${SHARD_FILES_BEGIN} && base64 -w0 ${dir}/manifest.json && echo && base64 -w0 ${dir}/samples.jsonl && echo && echo ${SHARD_FILES_END}`;
  }

  private async save(): Promise<void> {
    this.record.updatedAt = new Date().toISOString();
    await fsp.mkdir(path.dirname(this.o.recordFile), { recursive: true });
    await writeFileAtomic(this.o.recordFile, JSON.stringify(this.record, null, 2) + '\n');
  }

  private async load(): Promise<RaySweepRecord | null> {
    let text: string;
    try {
      text = await fsp.readFile(this.o.recordFile, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    const r = JSON.parse(text) as RaySweepRecord;
    if (r.version !== 1 || r.kind !== 'ray' || r.runName !== this.o.runName || r.shards !== this.o.shards) throw new Error(`ray sweep: ${this.o.recordFile} belongs to another sweep; pick another run name`);
    return r;
  }

  private async submit(i: number): Promise<void> {
    const s = this.record.shardsState[i]!;
    s.state = 'submitting';
    await this.save();
    const attempt = s.jobs.length;
    const submissionId = this.o.submissionId?.(i, attempt) ?? `loupe-sweep-${this.o.runName}-${i}of${this.o.shards}-${attempt}-${randomBytes(3).toString('hex')}`.slice(0, 120);
    const r = await this.o.connector.submit({
      name: `loupe-sweep-${this.o.runName}`.slice(0, 64),
      script: this.entrypoint(i),
      submissionId,
      metadata: { loupe_run: this.o.runName, loupe_shard: `${i}/${this.o.shards}` },
      ...(this.o.resources ? { resources: this.o.resources } : {}),
      ...(this.o.env ? { env: this.o.env } : {}),
      ...(this.o.secretEnv ? { secretEnv: this.o.secretEnv } : {}),
    });
    s.jobs.push(r.id);
    s.state = 'queued';
    await this.save();
    this.o.onEvent?.({ type: 'submitted', shard: i, jobId: r.id, attempt });
  }

  /** Write shard i's folder from its job's complete log; false when the log holds no files block. */
  private async fetch(i: number, jobId: string): Promise<boolean> {
    const log = (await this.o.connector.logs(jobId, 0)).data.toString('utf8');
    const files = parseShardFiles(log);
    if (!files) return false;
    const dir = this.o.store.runDir(this.shardId(i));
    await fsp.mkdir(dir, { recursive: true });
    await writeFileAtomic(path.join(dir, 'manifest.json'), files.manifest);
    await writeFileAtomic(path.join(dir, 'samples.jsonl'), files.samples);
    let records = 0;
    for (const b of files.samples) if (b === 0x0a) records++;
    this.o.onEvent?.({ type: 'fetched', shard: i, records, bytes: files.samples.length });
    return true;
  }

  /** Submit (or pick up) one job per shard and follow them to the end. */
  async run(): Promise<{ record: RaySweepRecord; summary: RunSummary | null; failed: number[] }> {
    const o = this.o;
    this.record = (await this.load()) ?? {
      version: 1,
      kind: 'ray',
      runName: o.runName,
      shards: o.shards,
      shardsState: Array.from({ length: o.shards }, (_, shard) => ({ shard, jobs: [], state: 'queued' as const })),
      updatedAt: new Date().toISOString(),
    };
    // A restart between 'submitting' and the id gets a fresh id: Ray would refuse the same one anyway.
    for (const s of this.record.shardsState) if (s.jobs.length === 0 || s.state === 'submitting') await this.submit(s.shard);
    const maxResubmits = o.maxResubmits ?? 2;
    while (!o.signal?.aborted) {
      const active = this.record.shardsState.filter((s) => s.state === 'queued');
      if (!active.length) break;
      for (const s of active) {
        const jobId = s.jobs.at(-1)!;
        let st;
        try {
          st = await o.connector.status(jobId);
        } catch (e) {
          o.onEvent?.({ type: 'warning', message: `shard ${s.shard}: ${e instanceof Error ? e.message : String(e)} (retrying)` });
          continue;
        }
        if (st.rawState !== s.lastRaw) {
          s.lastRaw = st.rawState;
          o.onEvent?.({ type: 'job', shard: s.shard, jobId, rawState: st.rawState });
        }
        if (!isTerminal(st.state) && st.state !== 'unknown') continue;
        let reason: string;
        if (st.state === 'succeeded') {
          if (await this.fetch(s.shard, jobId)) {
            s.state = 'done';
            await this.save();
            o.onEvent?.({ type: 'shard-done', shard: s.shard });
            continue;
          }
          reason = `Ray job ${jobId} succeeded, but its log holds no ${SHARD_FILES_BEGIN} block (was its entrypoint changed?)`;
        } else {
          reason = `Ray job ${jobId} ended ${st.rawState}${st.message ? `: ${st.message}` : ''}`;
        }
        if (s.jobs.length > maxResubmits) {
          s.state = 'failed';
          s.reason = `${reason}; gave up after ${s.jobs.length} submission(s)`;
          await this.save();
          o.onEvent?.({ type: 'shard-failed', shard: s.shard, reason: s.reason });
        } else {
          o.onEvent?.({ type: 'warning', message: `shard ${s.shard}: ${reason}; submitting it again` });
          await this.submit(s.shard);
        }
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, o.pollMs ?? 2000);
        o.signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
    }
    const failed = this.record.shardsState.filter((s) => s.state === 'failed').map((s) => s.shard);
    const summary = await loadRunGroup(o.store, o.runName).then(summarize, () => null);
    return { record: this.record, summary, failed };
  }

  /** Stop every live job of the sweep. */
  async cancel(): Promise<void> {
    const rec = (await this.load()) ?? this.record;
    for (const s of rec?.shardsState ?? []) {
      const j = s.jobs.at(-1);
      if (j && s.state === 'queued') await this.o.connector.cancel(j).catch(() => undefined);
    }
  }
}

/**
 * The job store: `<workspace>/training/jobs.jsonl`, one record per change of a job, the last record per key wins.
 * The app's Training page and `loupe train` read and write the same file (two processes may append: each record is
 * one line written with one O_APPEND write, and a reader re-reads the file, so a job one of them submits is seen by
 * the other). Reading is tolerant: a torn last line, bad JSON or a record of the wrong shape is reported and
 * skipped, never fatal; the job's previous record stays.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { TrainingJobSchema, type TrainingJob } from '../contract';
import { JsonlAppender, readJsonl, type JsonlIssue } from '../workspace/jsonl';

export const JOBS_FILE = path.join('training', 'jobs.jsonl');

export class JobStore {
  readonly file: string;
  private writes: Promise<void> = Promise.resolve();
  private lastIssues: JsonlIssue[] = [];

  constructor(workspace: string) {
    this.file = path.join(workspace, JOBS_FILE);
  }

  /** Every job, newest submission first (read afresh: another process may have appended). */
  async list(): Promise<TrainingJob[]> {
    return [...(await this.read()).values()].sort((a, b) => b.submittedAt.localeCompare(a.submittedAt));
  }

  async get(key: string): Promise<TrainingJob | undefined> {
    return (await this.read()).get(key);
  }

  /** Lines skipped by the last read, each with its line number and why (for the UI and `loupe train list`). */
  issues(): string[] {
    return this.lastIssues.map((i) => `${this.file}:${i.line}: ${i.message.replace(/^line \d+: /, '')} (skipped)`);
  }

  /** Append the job's new state; resolves once it is on disk. */
  save(job: TrainingJob): Promise<void> {
    const next = this.writes.then(async () => {
      await mkdir(path.dirname(this.file), { recursive: true });
      // Opened per record: the file is shared with other processes, and opening repairs a torn tail first.
      const out = await JsonlAppender.open(this.file, (v) => TrainingJobSchema.safeParse(v).success);
      try {
        await out.append(job);
      } finally {
        await out.close();
      }
    });
    this.writes = next.catch(() => undefined);
    return next;
  }

  private async read(): Promise<Map<string, TrainingJob>> {
    await this.writes;
    const { records, issues } = await readJsonl<TrainingJob>(this.file, (v) => {
      const r = TrainingJobSchema.safeParse(v);
      return r.success ? { ok: true, value: r.data } : { ok: false, message: `not a job record: ${r.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ')}` };
    });
    this.lastIssues = issues.filter((i) => i.kind !== 'unterminated-tail');
    const m = new Map<string, TrainingJob>();
    for (const j of records) m.set(j.key, j);
    return m;
  }
}

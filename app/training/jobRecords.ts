/**
 * `<workspace>/training/jobs.jsonl`: one TrainingJob record per change, the last record of a key wins. Read with
 * the workspace's one tolerant JSONL reader: a line that does not parse or does not match the schema (a torn
 * write, a state written by another Loupe version) is skipped and reported as a warning the UI and CLI show; the
 * job keeps its last good record. Appends go through the same module's appender (torn tail repaired first, fsync).
 */
import path from 'node:path';
import { TrainingJobSchema, type TrainingJob } from '../contract/domains/training';
import { JsonlAppender, readJsonl } from '../workspace/jsonl';

export interface JobRecords {
  /** key → latest valid record. */
  jobs: Map<string, TrainingJob>;
  /** One sentence per skipped line: `jobs.jsonl line 3: state: Invalid option …`. */
  warnings: string[];
}

function validate(v: unknown): { ok: true; value: TrainingJob } | { ok: false; message: string } {
  const r = TrainingJobSchema.safeParse(v);
  return r.success ? { ok: true, value: r.data } : { ok: false, message: r.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ') };
}

export async function readJobRecords(file: string): Promise<JobRecords> {
  const { records, issues } = await readJsonl(file, validate);
  const jobs = new Map<string, TrainingJob>();
  for (const j of records) jobs.set(j.key, j);
  const name = path.basename(file);
  const warnings = issues.filter((i) => i.kind !== 'unterminated-tail').map((i) => `${name} ${i.message}`);
  return { jobs, warnings };
}

/** Append one record durably (a torn last line from a crash is repaired first, so the new record stays whole). */
export async function appendJobRecord(file: string, job: TrainingJob): Promise<void> {
  const a = await JsonlAppender.open(file, (v) => TrainingJobSchema.safeParse(v).success);
  try {
    await a.append(job);
  } finally {
    await a.close();
  }
}

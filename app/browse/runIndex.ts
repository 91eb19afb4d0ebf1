/**
 * Sample tables over one or several runs, at the scale of real runs: a columnar SampleIndex of compact
 * rows plus the byte offset of every record, so opening one sample reads one line, never the file.
 * Indexes are cached per run and rebuilt when the run's samples file grows or changes.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { RunManifest, SampleRecord } from '../contract/trajectory';
import { SampleRecordSchema } from '../contract/trajectory';
import { parseJsonl } from '../workspace/jsonl';
import { SampleIndex } from './query/sampleIndex';
import type { StatRow } from '../sweeps/stats/accuracy';

export interface RunFiles {
  /** Absolute path of the run folder (holds manifest.json and samples.jsonl). */
  dir(runId: string): string;
  readManifest(runId: string): Promise<RunManifest>;
  listRunIds(): Promise<string[]>;
}

interface RunScan {
  size: number;
  mtimeMs: number;
  manifest: RunManifest;
  /** Records in file order (compact: trajectory dropped after indexing the text). */
  rows: SampleRecord[];
  offsets: Array<[number, number]>;
  /** Lines that could not be read (torn tail after a crash, bad JSON, not a sample record). */
  unreadable: number;
}

/** A minimal structural check, much cheaper than a full zod parse of every trajectory. */
function looksLikeSample(v: unknown): v is SampleRecord {
  if (!v || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  return typeof r.qid === 'string' && typeof r.bench === 'string' && typeof r.question === 'string' && typeof r.prediction === 'string' && typeof r.score === 'number' && typeof r.correct === 'boolean' && typeof r.stop_reason === 'string' && typeof r.calls === 'number';
}

/** Keep what tables, search and statistics read; the full record is re-read from disk on demand. */
function compact(r: SampleRecord): SampleRecord {
  if (!r.trajectory) return r;
  const t = r.trajectory;
  const light = { turns: t.turns.map((x) => ({ text: x.text })), finalText: t.finalText } as unknown as SampleRecord['trajectory'];
  return { ...r, trajectory: light };
}

export class RunIndexService {
  private scans = new Map<string, RunScan>();
  private combined = new Map<string, { stamp: string; index: SampleIndex; where: Array<{ run: string; line: number }> }>();

  constructor(private readonly files: RunFiles) {}

  /** Read (or reuse) one run's rows and offsets. */
  async scan(runId: string): Promise<RunScan> {
    const file = path.join(this.files.dir(runId), 'samples.jsonl');
    let st: { size: number; mtimeMs: number };
    try {
      st = await fsp.stat(file);
    } catch {
      st = { size: 0, mtimeMs: 0 };
    }
    const cached = this.scans.get(runId);
    if (cached && cached.size === st.size && cached.mtimeMs === st.mtimeMs) return cached;
    const manifest = await this.files.readManifest(runId);
    const buf = st.size ? await fsp.readFile(file) : Buffer.alloc(0);
    const offsets: Array<[number, number]> = [];
    // The workspace's one tolerant JSONL reader: a torn last line after a kill or a corrupt line is skipped and
    // counted, never fatal.
    const { records: rows, issues } = parseJsonl<SampleRecord>(buf, (v, _line, span) => {
      if (!looksLikeSample(v)) return { ok: false, message: 'not a sample record' };
      offsets.push([span.offset, span.length]);
      return { ok: true, value: compact(v) };
    });
    const unreadable = issues.filter((i) => i.kind !== 'unterminated-tail').length;
    const scan: RunScan = { size: st.size, mtimeMs: st.mtimeMs, manifest, rows, offsets, unreadable };
    this.scans.set(runId, scan);
    return scan;
  }

  /** The index over a set of runs (row ids stable while the runs do not change). */
  async index(runIds: readonly string[]): Promise<{ index: SampleIndex; where: Array<{ run: string; line: number }> }> {
    const scans = await Promise.all(runIds.map(async (id) => [id, await this.scan(id)] as const));
    const key = runIds.join('\u0000');
    const stamp = scans.map(([id, s]) => `${id}:${s.size}:${s.mtimeMs}`).join('|');
    const hit = this.combined.get(key);
    if (hit && hit.stamp === stamp) return hit;
    const total = scans.reduce((n, [, s]) => n + s.rows.length, 0);
    const index = new SampleIndex(total);
    const where: Array<{ run: string; line: number }> = [];
    for (const [id, s] of scans) {
      s.rows.forEach((r, line) => {
        const row = index.add(id, r);
        where[row] = { run: id, line };
      });
    }
    const entry = { stamp, index, where };
    this.combined.set(key, entry);
    return entry;
  }

  /** One full record (with its trajectory), read from its byte range. */
  async get(runId: string, qid: string): Promise<SampleRecord> {
    const scan = await this.scan(runId);
    let line = -1;
    for (let i = scan.rows.length - 1; i >= 0; i--) {
      // The last record of a qid wins: a resumed run may have re-recorded it.
      if (scan.rows[i]!.qid === qid) {
        line = i;
        break;
      }
    }
    if (line < 0) throw new Error(`run ${runId} has no sample ${JSON.stringify(qid)}`);
    const [offset, length] = scan.offsets[line]!;
    const fh = await fsp.open(path.join(this.files.dir(runId), 'samples.jsonl'), 'r');
    try {
      const buf = Buffer.alloc(length);
      await fh.read(buf, 0, length, offset);
      return SampleRecordSchema.parse(JSON.parse(buf.toString('utf8')));
    } finally {
      await fh.close();
    }
  }

  /** Rows for statistics (compact). */
  async statRows(runId: string): Promise<StatRow[]> {
    return (await this.scan(runId)).rows;
  }
}

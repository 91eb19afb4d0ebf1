/**
 * Sample tables over one or several runs, at the scale of real runs: a columnar SampleIndex per run plus the byte
 * range of every record, so opening one sample reads one line, never the file.
 *
 * Each run's index is persisted beside it (`samples.idx`, app/browse/runIndexFile.ts) and loaded lazily: the first
 * request for a run reads the small columns (not the samples file), the search texts follow on the first search.
 * A run that grew since (a live sweep) has only its new lines parsed; one that changed otherwise is re-indexed.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { RunManifest, SampleRecord } from '../contract/trajectory';
import { SampleRecordSchema } from '../contract/trajectory';
import { parseJsonl } from '../workspace/jsonl';
import { SampleIndex } from './query/sampleIndex';
import { encodeRunIndex, INDEX_FILE, readRunIndex, sameStamp, stampOf, writeRunIndex, type SourceStamp } from './runIndexFile';
import type { StatRow } from '../sweeps/stats/accuracy';

export interface RunFiles {
  /** Absolute path of the run folder (holds manifest.json and samples.jsonl). */
  dir(runId: string): string;
  readManifest(runId: string): Promise<RunManifest>;
  listRunIds(): Promise<string[]>;
}

/** One run's table: its index (rows of this run only) and where each row's record lies in samples.jsonl. */
export interface RunTable {
  /** samples.jsonl's size and mtime when last checked. */
  size: number;
  mtimeMs: number;
  /** The indexed prefix of samples.jsonl (ends after a newline), and its stamp. */
  source: SourceStamp;
  /** A record without a newline was read after `source.size` (a torn or unfinished last line). */
  ragged: boolean;
  manifest: RunManifest;
  index: SampleIndex;
  offsets: Float64Array;
  lengths: Int32Array;
  /** Sample records read (a qid recorded twice counts twice); `index.size` counts distinct samples. */
  records: number;
  /** Lines that could not be read (bad JSON, not a sample record, a torn last line). */
  unreadable: number;
  /** Where the table came from (for tests and benchmarks). */
  origin: 'built' | 'loaded' | 'extended';
}

/** A minimal structural check, much cheaper than a full zod parse of every trajectory. */
function looksLikeSample(v: unknown): v is SampleRecord {
  if (!v || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  return typeof r.qid === 'string' && typeof r.bench === 'string' && typeof r.question === 'string' && typeof r.prediction === 'string' && typeof r.score === 'number' && typeof r.correct === 'boolean' && typeof r.stop_reason === 'string' && typeof r.calls === 'number';
}

function growF64(a: Float64Array, n: number): Float64Array {
  if (n <= a.length) return a;
  const b = new Float64Array(Math.max(n, a.length * 2, 16));
  b.set(a);
  return b;
}
function growI32(a: Int32Array, n: number): Int32Array {
  if (n <= a.length) return a;
  const b = new Int32Array(Math.max(n, a.length * 2, 16));
  b.set(a);
  return b;
}

export class RunIndexService {
  private tables = new Map<string, RunTable>();
  private loading = new Map<string, Promise<RunTable>>();
  private combined = new Map<string, { stamp: string; index: SampleIndex }>();
  private persisting = new Set<Promise<void>>();

  /** `persist: false` keeps indexes in memory only (a read-only workspace works either way). */
  constructor(
    private readonly files: RunFiles,
    private readonly opts: { persist?: boolean } = {},
  ) {}

  private samplesFile(runId: string): string {
    return path.join(this.files.dir(runId), 'samples.jsonl');
  }

  private warming: Promise<void> | null = null;

  /**
   * Load, in the background, the persisted index of every run that has one, so the Runs page's first list and rows
   * (right after the app starts) find them loaded instead of waiting for them. Runs without samples.idx wait for their
   * first use (indexing them parses the samples file). A request meanwhile shares the load under way.
   */
  warm(): Promise<void> {
    this.warming ??= (async () => {
      let ids: string[];
      try {
        ids = await this.files.listRunIds();
      } catch {
        return;
      }
      for (const id of ids) {
        const persisted = await fsp.access(path.join(this.files.dir(id), INDEX_FILE)).then(
          () => true,
          () => false,
        );
        if (persisted) await this.table(id).catch(() => undefined);
      }
    })();
    return this.warming;
  }

  /** Resolves once every index write started so far has finished (tests, benchmarks, shutdown); a warm-up too. */
  async flush(): Promise<void> {
    await this.warming;
    while (this.persisting.size) await Promise.all([...this.persisting]);
  }

  /** One run's table, current with its samples file (read, loaded from samples.idx, or extended). */
  async table(runId: string): Promise<RunTable> {
    const pending = this.loading.get(runId);
    if (pending) return pending;
    const p = this.refresh(runId).finally(() => this.loading.delete(runId));
    this.loading.set(runId, p);
    return p;
  }

  private async refresh(runId: string): Promise<RunTable> {
    const file = this.samplesFile(runId);
    let st: { size: number; mtimeMs: number };
    try {
      st = await fsp.stat(file);
    } catch {
      st = { size: 0, mtimeMs: 0 };
    }
    const cached = this.tables.get(runId);
    if (cached && cached.size === st.size && cached.mtimeMs === st.mtimeMs) return cached;
    const manifest = await this.files.readManifest(runId);
    let table: RunTable | undefined;
    if (cached) table = await this.extend(runId, cached, st);
    if (!table) table = await this.load(runId, manifest, st);
    if (!table) table = await this.build(runId, manifest, st);
    table.manifest = manifest;
    this.tables.set(runId, table);
    return table;
  }

  /** The persisted index, extended by any lines appended since; undefined when it is missing or does not fit. */
  private async load(runId: string, manifest: RunManifest, st: { size: number; mtimeMs: number }): Promise<RunTable | undefined> {
    if (this.opts.persist === false || st.size === 0) return undefined;
    let loaded;
    try {
      loaded = await readRunIndex(path.join(this.files.dir(runId), INDEX_FILE));
    } catch {
      return undefined; // missing, truncated, corrupt or another format: rebuild
    }
    const c = loaded.columns;
    if (c.run.values.length > 1 || (c.run.values.length === 1 && c.run.values[0] !== runId)) return undefined; // a copied run folder: rebuild under its new id
    let index: SampleIndex;
    try {
      index = SampleIndex.fromColumns(c, loaded.loadTexts);
    } catch {
      return undefined;
    }
    const table: RunTable = { size: loaded.source.size, mtimeMs: -1, source: loaded.source, ragged: false, manifest, index, offsets: loaded.offsets, lengths: loaded.lengths, records: loaded.records, unreadable: loaded.unreadable, origin: 'loaded' };
    if (loaded.source.size === st.size) {
      // Same size: the same file if its stamp matches.
      const fh = await fsp.open(this.samplesFile(runId), 'r');
      try {
        if (loaded.source.mtimeMs !== st.mtimeMs || !sameStamp(await stampOf(fh, st.size), loaded.source)) return undefined;
      } finally {
        await fh.close();
      }
      table.mtimeMs = st.mtimeMs;
      return table;
    }
    const grown = await this.extend(runId, table, st);
    if (grown) grown.origin = 'loaded';
    return grown;
  }

  /** Parse only the bytes appended after the table's indexed prefix; undefined when the prefix changed. */
  private async extend(runId: string, t: RunTable, st: { size: number; mtimeMs: number }): Promise<RunTable | undefined> {
    if (t.ragged || st.size < t.source.size) return undefined;
    const fh = await fsp.open(this.samplesFile(runId), 'r');
    let tail: Buffer;
    try {
      if (!sameStamp(await stampOf(fh, t.source.size), t.source)) return undefined;
      tail = Buffer.alloc(st.size - t.source.size);
      let got = 0;
      while (got < tail.length) {
        const { bytesRead } = await fh.read(tail, got, tail.length - got, t.source.size + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      tail = tail.subarray(0, got);
    } finally {
      await fh.close();
    }
    const out = this.ingest(runId, t.index, { offsets: t.offsets, lengths: t.lengths }, tail, t.source.size);
    const covered = t.source.size + out.covered;
    const fh2 = await fsp.open(this.samplesFile(runId), 'r');
    let source: SourceStamp;
    try {
      source = { ...(await stampOf(fh2, covered)), mtimeMs: st.mtimeMs };
    } finally {
      await fh2.close();
    }
    const table: RunTable = { ...t, size: st.size, mtimeMs: st.mtimeMs, source, ragged: out.ragged, offsets: out.offsets, lengths: out.lengths, records: t.records + out.records, unreadable: t.unreadable + out.unreadable, origin: 'extended' };
    this.persist(runId, table);
    return table;
  }

  private async build(runId: string, manifest: RunManifest, st: { size: number; mtimeMs: number }): Promise<RunTable> {
    const buf = st.size ? await fsp.readFile(this.samplesFile(runId)) : Buffer.alloc(0);
    const index = new SampleIndex(1024);
    const out = this.ingest(runId, index, { offsets: new Float64Array(1024), lengths: new Int32Array(1024) }, buf, 0);
    const source: SourceStamp = { size: out.covered, head: '', tail: '', mtimeMs: st.mtimeMs };
    if (out.covered > 0) {
      const fh = await fsp.open(this.samplesFile(runId), 'r');
      try {
        Object.assign(source, await stampOf(fh, out.covered));
      } finally {
        await fh.close();
      }
    }
    const table: RunTable = { size: buf.length, mtimeMs: st.mtimeMs, source, ragged: out.ragged, manifest, index, offsets: out.offsets, lengths: out.lengths, records: out.records, unreadable: out.unreadable, origin: 'built' };
    this.persist(runId, table);
    return table;
  }

  /** Add the sample records in `buf` (which starts at byte `base` of the samples file) to `index`. */
  private ingest(runId: string, index: SampleIndex, ranges: { offsets: Float64Array; lengths: Int32Array }, buf: Buffer, base: number) {
    let { offsets, lengths } = ranges;
    let records = 0;
    // The workspace's one tolerant JSONL reader: a torn last line after a kill or a corrupt line is skipped and
    // counted, never fatal.
    const { issues } = parseJsonl<null>(buf, (v, _line, span) => {
      if (!looksLikeSample(v)) return { ok: false, message: 'not a sample record' };
      const row = index.add(runId, v);
      offsets = growF64(offsets, row + 1);
      lengths = growI32(lengths, row + 1);
      offsets[row] = base + span.offset;
      lengths[row] = span.length;
      records++;
      return { ok: true, value: null };
    });
    const lastNl = buf.lastIndexOf(0x0a);
    const covered = lastNl + 1;
    return {
      offsets,
      lengths,
      records,
      unreadable: issues.filter((i) => i.kind !== 'unterminated-tail').length,
      covered,
      // Bytes after the last newline: a record being written, or a torn one. Re-index from scratch next time.
      ragged: covered < buf.length,
    };
  }

  /** Write the table's index beside the run, in the background (a failure only costs the next start a re-read). */
  private persist(runId: string, t: RunTable): void {
    if (this.opts.persist === false || t.ragged || t.source.size === 0) return;
    const file = path.join(this.files.dir(runId), INDEX_FILE);
    const n = t.index.size;
    const bytes = (): Buffer =>
      encodeRunIndex({ source: t.source, records: t.records, unreadable: t.unreadable, columns: t.index.columns(), offsets: t.offsets.slice(0, n), lengths: t.lengths.slice(0, n) }, t.index.textColumn());
    const p = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => writeRunIndex(file, bytes()))
      .catch(() => undefined)
      .finally(() => this.persisting.delete(p));
    this.persisting.add(p);
  }

  /** The index over a set of runs (row ids stable while the runs do not change). One run: that run's own index. */
  async index(runIds: readonly string[]): Promise<{ index: SampleIndex }> {
    const ids = [...new Set(runIds)];
    const tables = await Promise.all(ids.map(async (id) => [id, await this.table(id)] as const));
    if (tables.length === 1) return { index: tables[0]![1].index };
    const key = ids.join('\u0000');
    const stamp = tables.map(([id, t]) => `${id}:${t.size}:${t.mtimeMs}:${t.index.size}`).join('|');
    const hit = this.combined.get(key);
    if (hit && hit.stamp === stamp) return hit;
    const index = SampleIndex.concat(tables.map(([, t]) => t.index));
    const entry = { stamp, index };
    this.combined.set(key, entry);
    return entry;
  }

  /** One full record (with its trajectory), read from its byte range. */
  async get(runId: string, qid: string): Promise<SampleRecord> {
    const t = await this.table(runId);
    // The last record of a qid wins (a resumed run may have re-recorded it): the index keeps its range.
    const row = t.index.rowOf(runId, qid);
    if (row === undefined) throw new Error(`run ${runId} has no sample ${JSON.stringify(qid)}`);
    const offset = t.offsets[row]!;
    const length = t.lengths[row]!;
    const fh = await fsp.open(this.samplesFile(runId), 'r');
    try {
      const buf = Buffer.alloc(length);
      await fh.read(buf, 0, length, offset);
      return SampleRecordSchema.parse(JSON.parse(buf.toString('utf8')));
    } finally {
      await fh.close();
    }
  }

  /** Rows for statistics: one per distinct sample, the last record of a qid. */
  async statRows(runId: string): Promise<StatRow[]> {
    const { index } = await this.table(runId);
    const out: StatRow[] = new Array<StatRow>(index.size);
    for (let i = 0; i < index.size; i++) out[i] = index.statRow(i);
    return out;
  }
}

/**
 * The persisted index of one run: `samples.idx` beside `samples.jsonl`, so opening a large run reads a few MB of
 * columns instead of parsing the whole samples file. Plain binary columns (typed arrays at 8-byte-aligned offsets,
 * readable with one read and zero parsing) plus JSON for the string lists; the search texts are the last section
 * and are read only when a search first needs them.
 *
 * Layout: `LOUPEIDX` · u32 LE header length · header JSON · padding to 8 · sections. The header names each
 * section's byte range and the samples file it describes (its size and mtime, and SHA-256 of its first and last
 * 64 KiB), so a changed, replaced or truncated samples file is never served from a stale index, and a grown one (a
 * live run: the samples file is append-only) is read from where the index stops. Any problem reading the index (truncated, corrupt, another format version)
 * makes the caller rebuild it from the samples file: it is a cache and never the only copy of anything.
 */
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, openSync, readSync, promises as fsp } from 'node:fs';
import { writeFileAtomic } from '../workspace/fsutil';
import type { IndexColumns } from './query/sampleIndex';

export const INDEX_FILE = 'samples.idx';
/** Bump when the columns or the search text change meaning (app/browse/query/sampleIndex.ts searchableText). */
export const INDEX_FORMAT = 1;
const MAGIC = Buffer.from('LOUPEIDX', 'latin1');
const FINGERPRINT_SPAN = 64 * 1024;
/** An index header is small (section table and short dictionaries); a larger one is not ours. */
const MAX_HEADER = 64 * 1024 * 1024;

/** Identifies the first `size` bytes of a samples file. */
export interface SourceStamp {
  size: number;
  head: string;
  tail: string;
  /** The file's mtime when `size` was its whole length: an index of the whole file is used only while it holds. */
  mtimeMs?: number;
}

/** What the index holds besides the columns. */
export interface RunIndexMeta {
  /** Sample records read (a repeated qid counts each time it was recorded). */
  records: number;
  /** Lines that could not be read. */
  unreadable: number;
}

export interface RunIndexData extends RunIndexMeta {
  source: SourceStamp;
  columns: IndexColumns;
  /** Byte range of each row's (last) record in the samples file. */
  offsets: Float64Array;
  lengths: Int32Array;
}

export interface LoadedRunIndex extends Omit<RunIndexData, 'columns'> {
  columns: IndexColumns;
  /** Reads the search texts (synchronously: a search is waiting for them). */
  loadTexts: () => string[];
}

type Section = [offset: number, length: number];
interface Header {
  format: number;
  id: string;
  source: SourceStamp;
  n: number;
  records: number;
  unreadable: number;
  dicts: Record<'run' | 'bench' | 'category' | 'stop', string[]>;
  scores: Array<[number, Record<string, number>]>;
  sections: Record<string, Section>;
}

const TYPED = {
  'run.codes': Int32Array,
  'qid.codes': Int32Array,
  'bench.codes': Int32Array,
  'category.codes': Int32Array,
  'stop.codes': Int32Array,
  score: Float64Array,
  calls: Float64Array,
  tool_errors: Float64Array,
  latency: Float64Array,
  correct: Int8Array,
  disagree: Int8Array,
  offsets: Float64Array,
  lengths: Int32Array,
} as const;
type TypedName = keyof typeof TYPED;

/** The stamp of the first `size` bytes of a file (open handle). */
export async function stampOf(fh: fsp.FileHandle, size: number): Promise<SourceStamp> {
  const read = async (pos: number, len: number): Promise<string> => {
    const buf = Buffer.alloc(len);
    let got = 0;
    while (got < len) {
      const { bytesRead } = await fh.read(buf, got, len - got, pos + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return createHash('sha256').update(buf.subarray(0, got)).digest('hex');
  };
  const span = Math.min(size, FINGERPRINT_SPAN);
  return { size, head: await read(0, span), tail: await read(size - span, span) };
}

export function sameStamp(a: SourceStamp, b: SourceStamp): boolean {
  return a.size === b.size && a.head === b.head && a.tail === b.tail;
}

const pad8 = (n: number): number => (n + 7) & ~7;

/** Encode an index (columns, offsets, search texts) to the file's bytes. */
export function encodeRunIndex(d: RunIndexData, texts: readonly string[]): Buffer {
  const c = d.columns;
  const parts: Array<[string, Buffer]> = [];
  const typed: Record<TypedName, ArrayBufferView> = {
    'run.codes': c.run.codes,
    'qid.codes': c.qid.codes,
    'bench.codes': c.bench.codes,
    'category.codes': c.category.codes,
    'stop.codes': c.stop.codes,
    score: c.score,
    calls: c.calls,
    tool_errors: c.tool_errors,
    latency: c.latency,
    correct: c.correct,
    disagree: c.disagree,
    offsets: d.offsets,
    lengths: d.lengths,
  };
  for (const [name, arr] of Object.entries(typed)) parts.push([name, Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength)]);
  parts.push(['qid.values', Buffer.from(JSON.stringify(c.qid.values))]);
  parts.push(['questions', Buffer.from(JSON.stringify(c.questions))]);
  // Last, so a reader that never searches never reads it.
  parts.push(['texts', Buffer.from(JSON.stringify(texts))]);

  const sections: Record<string, Section> = {};
  let pos = 0;
  for (const [name, buf] of parts) {
    sections[name] = [pos, buf.length];
    pos = pad8(pos + buf.length);
  }
  const header: Header = {
    format: INDEX_FORMAT,
    id: randomUUID(),
    source: d.source,
    n: c.n,
    records: d.records,
    unreadable: d.unreadable,
    dicts: { run: c.run.values, bench: c.bench.values, category: c.category.values, stop: c.stop.values },
    scores: c.scores,
    sections,
  };
  const headerBuf = Buffer.from(JSON.stringify(header));
  const base = pad8(MAGIC.length + 4 + headerBuf.length);
  const out = Buffer.alloc(base + pos);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(headerBuf.length, MAGIC.length);
  headerBuf.copy(out, MAGIC.length + 4);
  for (const [name, buf] of parts) buf.copy(out, base + sections[name]![0]);
  return out;
}

function parseHeader(prefix: Buffer, fileSize: number): { header: Header; base: number } {
  if (prefix.length < MAGIC.length + 4 || !prefix.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('not a Loupe run index');
  const len = prefix.readUInt32LE(MAGIC.length);
  if (len > MAX_HEADER || MAGIC.length + 4 + len > prefix.length) throw new Error('index header is truncated or too large');
  const header = JSON.parse(prefix.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + len)) as Header;
  if (header.format !== INDEX_FORMAT) throw new Error(`index format ${String(header.format)}, this version reads ${INDEX_FORMAT}`);
  if (!Number.isInteger(header.n) || header.n < 0 || typeof header.sections !== 'object' || !header.sections) throw new Error('index header is malformed');
  const base = pad8(MAGIC.length + 4 + len);
  for (const [name, s] of Object.entries(header.sections)) {
    if (!Array.isArray(s) || !Number.isInteger(s[0]) || !Number.isInteger(s[1]) || s[0] < 0 || s[1] < 0 || base + s[0] + s[1] > fileSize) throw new Error(`index section ${name} lies outside the file (truncated?)`);
  }
  return { header, base };
}

/**
 * Read an index file: everything but the search texts, which `loadTexts` reads later (checking the file is still
 * the same index). Throws on anything unexpected; the caller rebuilds.
 */
export async function readRunIndex(file: string): Promise<LoadedRunIndex> {
  const fh = await fsp.open(file, 'r');
  let header: Header;
  let base: number;
  let body: Buffer;
  try {
    const size = (await fh.stat()).size;
    const first = Buffer.alloc(Math.min(size, 1 << 20));
    await fh.read(first, 0, first.length, 0);
    let prefix = first;
    if (first.length >= MAGIC.length + 4 && first.subarray(0, MAGIC.length).equals(MAGIC)) {
      const need = MAGIC.length + 4 + first.readUInt32LE(MAGIC.length);
      if (need > first.length && need <= Math.min(size, MAX_HEADER + 12)) {
        prefix = Buffer.alloc(need);
        await fh.read(prefix, 0, need, 0);
      }
    }
    ({ header, base } = parseHeader(prefix, size));
    const texts = header.sections['texts'];
    if (!texts) throw new Error('index has no texts section');
    // Everything before the texts, in one read.
    body = Buffer.alloc(texts[0]);
    await fh.read(body, 0, body.length, base);
  } finally {
    await fh.close();
  }
  const n = header.n;
  const section = (name: string): Buffer => {
    const s = header.sections[name];
    if (!s) throw new Error(`index has no ${name} section`);
    if (s[0] + s[1] > body.length) throw new Error(`index section ${name} is out of order`);
    return body.subarray(s[0], s[0] + s[1]);
  };
  const typed = <K extends TypedName>(name: K): InstanceType<(typeof TYPED)[K]> => {
    const Ctor = TYPED[name];
    const buf = section(name);
    if (buf.length !== n * Ctor.BYTES_PER_ELEMENT) throw new Error(`index column ${name} has ${buf.length} bytes for ${n} rows`);
    // A copy into a fresh, aligned buffer.
    return new Ctor(new Uint8Array(buf).buffer) as InstanceType<(typeof TYPED)[K]>;
  };
  const strings = (name: string): string[] => {
    const v = JSON.parse(section(name).toString('utf8')) as unknown;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`index section ${name} is not a list of strings`);
    return v as string[];
  };
  const dict = (name: 'run' | 'bench' | 'category' | 'stop'): string[] => {
    const v = header.dicts?.[name];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`index dictionary ${name} is malformed`);
    return v;
  };
  const columns: IndexColumns = {
    n,
    run: { codes: typed('run.codes'), values: dict('run') },
    qid: { codes: typed('qid.codes'), values: strings('qid.values') },
    bench: { codes: typed('bench.codes'), values: dict('bench') },
    category: { codes: typed('category.codes'), values: dict('category') },
    stop: { codes: typed('stop.codes'), values: dict('stop') },
    score: typed('score'),
    calls: typed('calls'),
    tool_errors: typed('tool_errors'),
    latency: typed('latency'),
    correct: typed('correct'),
    disagree: typed('disagree'),
    scores: Array.isArray(header.scores) ? header.scores : [],
    questions: strings('questions'),
  };
  const [textsAt, textsLen] = header.sections['texts']!;
  const id = header.id;
  const loadTexts = (): string[] => {
    const fd = openSync(file, 'r');
    try {
      const head = Buffer.alloc(base);
      readSync(fd, head, 0, base, 0);
      const again = JSON.parse(head.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + head.readUInt32LE(MAGIC.length))) as Header;
      if (again.id !== id) throw new Error(`${file} was rewritten since it was opened`);
      const buf = Buffer.alloc(textsLen);
      let got = 0;
      while (got < textsLen) {
        const r = readSync(fd, buf, got, textsLen - got, base + textsAt + got);
        if (r === 0) throw new Error(`${file}: search texts are truncated`);
        got += r;
      }
      const v = JSON.parse(buf.toString('utf8')) as unknown;
      if (!Array.isArray(v) || v.length !== n || !v.every((x) => typeof x === 'string')) throw new Error(`${file}: search texts are malformed`);
      return v as string[];
    } finally {
      closeSync(fd);
    }
  };
  const src = header.source;
  if (!src || !Number.isInteger(src.size) || typeof src.head !== 'string' || typeof src.tail !== 'string') throw new Error('index source stamp is malformed');
  if (!Number.isInteger(header.records) || !Number.isInteger(header.unreadable)) throw new Error('index counts are malformed');
  return { source: src, records: header.records, unreadable: header.unreadable, columns, offsets: typed('offsets'), lengths: typed('lengths'), loadTexts };
}

/** Write an index atomically (the workspace's one atomic write: temp file, fsync, rename over the old one). */
export async function writeRunIndex(file: string, bytes: Buffer): Promise<void> {
  await writeFileAtomic(file, bytes);
}

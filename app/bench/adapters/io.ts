/**
 * File readers shared by the adapters. Every failure is a {@link BenchDataError} that names the file
 * (relative to the benchmark folder when possible), the record (JSONL line, TSV/parquet row, JSON index)
 * and the field, so a user can open the file and fix it.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { BenchDataError } from '../types';

/** `file` relative to `root` for messages (absolute when outside it). */
export function displayPath(file: string, root?: string): string {
  if (!root) return file;
  const rel = path.relative(root, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

export function requireFile(file: string, root?: string, what = 'file'): void {
  if (!existsSync(file)) throw new BenchDataError({ file: displayPath(file, root), problem: `${what} not found (expected at ${file})` });
  if (!statSync(file).isFile()) throw new BenchDataError({ file: displayPath(file, root), problem: `${what} is not a regular file` });
}

export function readJsonFile(file: string, root?: string): unknown {
  requireFile(file, root);
  const text = readFileSync(file, 'utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new BenchDataError({ file: displayPath(file, root), problem: `not valid JSON (${(e as Error).message})` });
  }
}

/** JSONL records with their 1-based line numbers; blank lines are skipped. */
export function readJsonl(file: string, root?: string): Array<{ line: number; value: unknown }> {
  requireFile(file, root);
  const out: Array<{ line: number; value: unknown }> = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  lines.forEach((raw, i) => {
    const text = raw.replace(/\r$/, '');
    if (text.trim() === '') return;
    try {
      out.push({ line: i + 1, value: JSON.parse(text) });
    } catch (e) {
      throw new BenchDataError({ file: displayPath(file, root), record: `line ${i + 1}`, problem: `not valid JSON (${(e as Error).message})` });
    }
  });
  return out;
}

/**
 * A tab-separated file with a header row, as pandas `to_csv(sep='\t')` writes it (VLMEvalKit TSVs):
 * fields holding a tab, a quote or a newline are double-quoted, quotes doubled. Streamed line by line
 * because these files embed base64 images and can be gigabytes.
 */
export async function* readTsv(file: string, root?: string): AsyncGenerator<{ row: number; line: number; record: Record<string, string> }> {
  requireFile(file, root);
  const disp = displayPath(file, root);
  const rl = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let header: string[] | null = null;
  let fields: string[] = [];
  let cur = '';
  let inQuotes = false;
  let lineNo = 0;
  let startLine = 1;
  let row = 0;
  /** Turn one complete physical record into a data row (null for the header and blank lines). */
  const finish = (done: string[]): Record<string, string> | null => {
    if (header === null) {
      header = done;
      return null;
    }
    if (done.length === 1 && done[0] === '') return null;
    row++;
    if (done.length !== header.length) {
      throw new BenchDataError({ file: disp, record: `row ${row} (line ${startLine})`, problem: `has ${done.length} fields but the header has ${header.length}` });
    }
    const record: Record<string, string> = {};
    header.forEach((h, i) => (record[h] = done[i]!));
    return record;
  };
  for await (const rawLine of rl) {
    lineNo++;
    if (!inQuotes) startLine = lineNo;
    const line = lineNo === 1 ? rawLine.replace(/^\ufeff/, '') : rawLine;
    if (!inQuotes && !line.includes('"')) {
      // Fast path: base64 image cells are megabytes long and never quoted.
      const record = finish(line.split('\t'));
      if (record) yield { row, line: startLine, record };
      continue;
    }
    for (let i = 0; i < line.length; i++) {
      const ch = line[i]!;
      if (inQuotes) {
        if (ch === '"') {
          if (line[i + 1] === '"') {
            cur += '"';
            i++;
          } else inQuotes = false;
        } else cur += ch;
      } else if (ch === '"' && cur === '') inQuotes = true;
      else if (ch === '\t') {
        fields.push(cur);
        cur = '';
      } else cur += ch;
    }
    if (inQuotes) {
      cur += '\n';
      continue;
    }
    fields.push(cur);
    cur = '';
    const record = finish(fields);
    fields = [];
    if (record) yield { row, line: startLine, record };
  }
  if (inQuotes) throw new BenchDataError({ file: disp, record: `line ${startLine}`, problem: 'a quoted field is never closed' });
  if (header === null) throw new BenchDataError({ file: disp, problem: 'empty file (no header row)' });
}

/** All rows of a parquet file as objects (binary columns as Uint8Array). */
export async function readParquet(file: string, root?: string): Promise<Array<Record<string, unknown>>> {
  requireFile(file, root);
  const disp = displayPath(file, root);
  // A parquet file starts and ends with PAR1; without both it is another format or cut short. Checked first so the
  // user reads that, not the reader's failure deep inside a footer it cannot make sense of.
  const fh = await fsp.open(file, 'r');
  try {
    const { size } = await fh.stat();
    const head = Buffer.alloc(4);
    const tail = Buffer.alloc(4);
    if (size >= 12) {
      await fh.read(head, 0, 4, 0);
      await fh.read(tail, 0, 4, size - 4);
    }
    if (size < 12 || head.toString('latin1') !== 'PAR1' || tail.toString('latin1') !== 'PAR1') {
      throw new BenchDataError({ file: disp, problem: `not a parquet file (${size < 12 ? `only ${size} bytes` : 'no PAR1 marker at its start and end'}: another format, or the file was truncated; download it again)` });
    }
  } finally {
    await fh.close();
  }
  try {
    const buf = await asyncBufferFromFile(file);
    return (await parquetReadObjects({ file: buf, utf8: false })) as Array<Record<string, unknown>>;
  } catch (e) {
    // TypeError/RangeError are the reader tripping over damaged bytes: their text ("reading 'map'") means nothing here.
    const internal = e instanceof TypeError || e instanceof RangeError;
    throw new BenchDataError({ file: disp, problem: `corrupt or truncated parquet file; download it again${internal ? '' : ` (${(e as Error).message})`}` });
  }
}

/** File extension for image bytes, from their magic number. */
export function imageExtension(bytes: Uint8Array): string {
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'jpg';
  if (bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) return 'png';
  if (bytes[0] === 0x52 && bytes[1] === 0x49 && bytes[2] === 0x46 && bytes[3] === 0x46 && bytes[8] === 0x57) return 'webp';
  if (bytes[0] === 0x47 && bytes[1] === 0x49 && bytes[2] === 0x46) return 'gif';
  if (bytes[0] === 0x42 && bytes[1] === 0x4d) return 'bmp';
  return 'bin';
}

/**
 * Write embedded image bytes to `cacheDir/<sha256-prefix>.<ext>` (content-addressed, so re-loading is
 * idempotent) and return the absolute path.
 */
export function cacheImageBytes(bytes: Uint8Array, cacheDir: string): string {
  mkdirSync(cacheDir, { recursive: true });
  const hash = createHash('sha256').update(bytes).digest('hex');
  const file = path.resolve(cacheDir, `${hash.slice(0, 32)}.${imageExtension(bytes)}`);
  if (!existsSync(file)) writeFileSync(file, bytes);
  return file;
}

/** Decode a base64 cell; throws when it is not base64 image data. */
export function decodeBase64Image(cell: string): Uint8Array {
  const clean = cell.replace(/^data:[^;]+;base64,/, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+=*$/.test(clean)) throw new Error('not base64 data');
  const bytes = Buffer.from(clean, 'base64');
  if (bytes.length < 8 || imageExtension(bytes) === 'bin') throw new Error('base64 data is not a JPEG/PNG/WebP/GIF/BMP image');
  return bytes;
}

/** Small typed field readers that raise BenchDataError with file/record/field. */
export class RecordReader {
  constructor(
    readonly file: string,
    readonly record: string,
    readonly value: unknown,
  ) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new BenchDataError({ file, record, problem: `expected a JSON object, got ${describe(value)}` });
    }
  }
  private get obj(): Record<string, unknown> {
    return this.value as Record<string, unknown>;
  }
  has(field: string): boolean {
    return this.obj[field] !== undefined && this.obj[field] !== null;
  }
  raw(field: string): unknown {
    return this.obj[field];
  }
  fail(field: string | undefined, problem: string): never {
    throw new BenchDataError({ file: this.file, record: this.record, field, problem });
  }
  string(field: string): string {
    const v = this.obj[field];
    if (typeof v !== 'string') this.fail(field, v === undefined ? 'missing' : `expected a string, got ${describe(v)}`);
    return v;
  }
  optString(field: string): string | undefined {
    return this.has(field) ? this.string(field) : undefined;
  }
  /** A string or a number, as a string (ids are written either way). */
  id(field: string): string {
    const v = this.obj[field];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    if (typeof v === 'bigint') return v.toString();
    return this.fail(field, v === undefined ? 'missing' : `expected an id (string or number), got ${describe(v)}`);
  }
  int(field: string): number {
    const v = this.obj[field];
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return Number(v.trim());
    return this.fail(field, v === undefined ? 'missing' : `expected an integer, got ${describe(v)}`);
  }
  optNumber(field: string): number | undefined {
    const v = this.obj[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint') return Number(v);
    return this.fail(field, `expected a number, got ${describe(v)}`);
  }
  bool(field: string): boolean {
    const v = this.obj[field];
    if (typeof v === 'boolean') return v;
    return this.fail(field, v === undefined ? 'missing' : `expected true/false, got ${describe(v)}`);
  }
  stringArray(field: string, opts: { nonEmpty?: boolean } = {}): string[] {
    const v = this.obj[field];
    if (!Array.isArray(v) && !(v && typeof v === 'object' && Symbol.iterator in v && typeof v !== 'string')) {
      this.fail(field, v === undefined ? 'missing' : `expected a list of strings, got ${describe(v)}`);
    }
    const arr = Array.from(v as Iterable<unknown>);
    arr.forEach((x, i) => {
      if (typeof x !== 'string') this.fail(`${field}[${i}]`, `expected a string, got ${describe(x)}`);
    });
    if (opts.nonEmpty && arr.length === 0) this.fail(field, 'is an empty list');
    return arr as string[];
  }
}

export function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (typeof v === 'object') return 'an object';
  const s = typeof v === 'string' ? JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v) : String(v);
  return `${typeof v} ${s}`;
}

/** Resolve a media path given relative to one of `bases`; first existing wins. */
export function resolveMedia(
  rel: string,
  bases: string[],
  ctx: { file: string; record: string; field: string; skipCheck?: boolean },
): string {
  const candidates = path.isAbsolute(rel) ? [rel] : bases.map((b) => path.resolve(b, rel));
  for (const c of candidates) if (existsSync(c)) return c;
  if (ctx.skipCheck) return candidates[0]!;
  throw new BenchDataError({
    file: ctx.file,
    record: ctx.record,
    field: ctx.field,
    problem: `media file ${JSON.stringify(rel)} not found (looked in: ${candidates.join(', ')})`,
  });
}

/** Apply `limit`. */
export function applyLimit<T>(items: T[], limit: unknown): T[] {
  if (limit === undefined || limit === null) return items;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) throw new Error(`limit must be a non-negative integer, got ${String(limit)}`);
  return items.slice(0, limit);
}

/** Default directory for decoded embedded images. */
export function mediaCacheDir(dataDir: string, opts: { mediaCacheDir?: string } | undefined): string {
  return path.resolve(opts?.mediaCacheDir ?? path.join(dataDir, '.loupe-media'));
}

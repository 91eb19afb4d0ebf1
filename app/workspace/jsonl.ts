/**
 * Append-only JSON Lines files that survive being killed mid-write.
 *
 * Writer: each record is one `JSON.stringify(record) + '\n'` written with a single `write` on an
 * O_APPEND handle, then `fdatasync`; `append` resolves only after that, so an acknowledged record is
 * on disk. When a writer opens a file whose last line is torn (a crash mid-write), it first repairs
 * the tail: a tail that still parses as JSON only lacked its newline and is kept (a newline is added);
 * anything else is moved to `<file>.torn` (one JSON line per fragment, so nothing is silently dropped)
 * and truncated away. Reader: tolerates a torn last line and malformed lines, skipping and reporting
 * each with its line number — it never throws on content.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fsyncDir } from './fsutil';

/** A line the reader skipped (or accepted with a warning), with where and why. */
export interface JsonlIssue {
  /** 1-based line number. */
  line: number;
  /** Byte offset of the line's start. */
  offset: number;
  kind: 'torn-tail' | 'unterminated-tail' | 'invalid-json' | 'invalid-record';
  message: string;
}

export interface JsonlReadResult<T> {
  records: T[];
  issues: JsonlIssue[];
}

/** What a writer did to a torn tail when it opened the file. */
export interface TailRepair {
  file: string;
  action: 'kept-unterminated' | 'truncated';
  /** Offset the file was truncated to (or where the newline was added). */
  offset: number;
  /** Bytes removed (truncated) — saved to `<file>.torn`. */
  removedBytes: number;
}

function parseLine(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

/**
 * Parse JSONL bytes. `validate` turns a parsed value into a record or returns an error message.
 * A last line without a newline is a torn write unless it parses and validates, in which case it
 * is kept and reported as `unterminated-tail`.
 */
export function parseJsonl<T>(
  buf: Buffer,
  /** `span`: the line's bytes in `buf` (without its newline), for readers that seek back to one record later. */
  validate: (value: unknown, line: number, span: { offset: number; length: number }) => { ok: true; value: T } | { ok: false; message: string },
): JsonlReadResult<T> {
  const records: T[] = [];
  const issues: JsonlIssue[] = [];
  let start = 0;
  let line = 0;
  while (start < buf.length) {
    line += 1;
    const nl = buf.indexOf(0x0a, start);
    const terminated = nl !== -1;
    const end = terminated ? nl : buf.length;
    let text = buf.toString('utf8', start, end);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    const offset = start;
    start = end + 1;
    if (text.trim() === '') continue;
    const parsed = parseLine(text);
    if (!parsed.ok) {
      issues.push(
        terminated
          ? { line, offset, kind: 'invalid-json', message: `line ${line}: not valid JSON (${parsed.message})` }
          : { line, offset, kind: 'torn-tail', message: `line ${line}: torn last line (${end - offset} bytes, no newline; an interrupted write) skipped` },
      );
      continue;
    }
    const v = validate(parsed.value, line, { offset, length: end - offset });
    if (!v.ok) {
      issues.push(
        terminated
          ? { line, offset, kind: 'invalid-record', message: `line ${line}: ${v.message}` }
          : { line, offset, kind: 'torn-tail', message: `line ${line}: torn last line (no newline, invalid record: ${v.message}) skipped` },
      );
      continue;
    }
    records.push(v.value);
    if (!terminated) {
      issues.push({ line, offset, kind: 'unterminated-tail', message: `line ${line}: last record has no trailing newline (kept)` });
    }
  }
  return { records, issues };
}

/** Read a JSONL file tolerantly; a missing file reads as empty. */
export async function readJsonl<T>(
  file: string,
  validate: (value: unknown) => { ok: true; value: T } | { ok: false; message: string },
): Promise<JsonlReadResult<T>> {
  let buf: Buffer;
  try {
    buf = await fsp.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], issues: [] };
    throw err;
  }
  return parseJsonl(buf, validate);
}

/** Find the offset just past the last '\n' in the file (0 if none), reading backwards in chunks. */
async function lastNewlineEnd(fh: fsp.FileHandle, size: number): Promise<number> {
  const chunk = 64 * 1024;
  let pos = size;
  const buf = Buffer.alloc(chunk);
  while (pos > 0) {
    const len = Math.min(chunk, pos);
    pos -= len;
    const { bytesRead } = await fh.read(buf, 0, len, pos);
    const idx = buf.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (idx !== -1) return pos + idx + 1;
  }
  return 0;
}

/**
 * Repair a torn tail in place (see the module comment). Returns what was done, or null when the
 * file was already clean (or does not exist).
 */
export async function repairJsonlTail(file: string, isCompleteRecord: (value: unknown) => boolean = () => true): Promise<TailRepair | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, 'r+');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const { size } = await fh.stat();
    if (size === 0) return null;
    const last = Buffer.alloc(1);
    await fh.read(last, 0, 1, size - 1);
    if (last[0] === 0x0a) return null;
    const cut = await lastNewlineEnd(fh, size);
    const tail = Buffer.alloc(size - cut);
    await fh.read(tail, 0, tail.length, cut);
    const parsed = parseLine(tail.toString('utf8'));
    if (parsed.ok && isCompleteRecord(parsed.value)) {
      await fh.write('\n', size);
      await fh.datasync();
      return { file, action: 'kept-unterminated', offset: size, removedBytes: 0 };
    }
    // Keep the fragment for forensics before cutting it off; it was never acknowledged to a caller.
    const note = JSON.stringify({ at: new Date().toISOString(), offset: cut, bytes: tail.length, text: tail.toString('utf8') }) + '\n';
    const torn = await fsp.open(`${file}.torn`, 'a');
    try {
      await torn.write(note);
      await torn.datasync();
    } finally {
      await torn.close();
    }
    await fh.truncate(cut);
    await fh.datasync();
    return { file, action: 'truncated', offset: cut, removedBytes: tail.length };
  } finally {
    await fh.close();
  }
}

/**
 * How an appender makes lines durable: `each` resolves every append after its fdatasync (labels, jobs: a person's
 * action must survive a power cut once acknowledged); `group` resolves once the line is written (in the page cache, so
 * a killed process loses nothing) and runs fdatasync in the background, one at a time, covering every line written
 * before it started (a power cut can lose the last lines, which a sweep's resume runs again). `flush()` and `close()`
 * wait for the lines written so far to be durable.
 */
export type AppendDurability = 'each' | 'group';

/**
 * A single-process appender. Appends are serialized; each resolves after the line is written (and, with durability
 * `each`, the default, fsync'd). Open with `JsonlAppender.open`, which repairs a torn tail first.
 */
export class JsonlAppender {
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  /** Set when a write failed part-way: the tail may be torn, so further appends must reopen (and repair). */
  private broken: Error | null = null;
  /** The background fdatasync loop (durability `group`), while one runs. */
  private syncing: Promise<void> | null = null;
  private syncAgain = false;

  private constructor(
    readonly file: string,
    private readonly fh: fsp.FileHandle,
    /** The repair done when this appender opened the file, if any. */
    readonly repair: TailRepair | null,
    readonly durability: AppendDurability,
    private readonly beforeSync?: () => Promise<void>,
  ) {}

  /**
   * `beforeSync` (durability `group`): awaited before each background fdatasync, so what the lines name (the
   * workspace's media files) is durable before the lines are.
   */
  static async open(file: string, isCompleteRecord?: (value: unknown) => boolean, durability: AppendDurability = 'each', opts: { beforeSync?: () => Promise<void> } = {}): Promise<JsonlAppender> {
    const repair = await repairJsonlTail(file, isCompleteRecord);
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(file, 'ax'); // a new file: its folder entry is made durable before the first record
      await fh.sync();
      await fsyncDir(path.dirname(file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      fh = await fsp.open(file, 'a');
    }
    return new JsonlAppender(file, fh, repair, durability, opts.beforeSync);
  }

  /** Append one record as one line; resolves once it is written (durability `each`: once it is durable). */
  append(record: unknown): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`append to ${this.file}: the appender is closed`));
    const line = JSON.stringify(record);
    if (line === undefined) return Promise.reject(new Error(`append to ${this.file}: the record is not JSON-serializable`));
    const buf = Buffer.from(line + '\n', 'utf8');
    const next = this.chain.then(async () => {
      if (this.broken) throw new Error(`append to ${this.file}: an earlier write failed (${this.broken.message}); reopen the file to repair its tail`);
      let off = 0;
      // A single write is the norm; loop in case the OS accepts a short write.
      while (off < buf.length) {
        const { bytesWritten } = await this.fh.write(buf, off, buf.length - off);
        off += bytesWritten;
      }
      if (this.durability === 'each') await this.fh.datasync();
      else this.syncSoon();
    }).catch((err: unknown) => {
      if (!this.broken) this.broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    });
    // Keep the chain alive after a failure so later appends still run (and report their own errors).
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Start a background fdatasync, or ask the running one to go once more (it may have started before this write). */
  private syncSoon(): void {
    if (this.syncing) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      try {
        do {
          this.syncAgain = false;
          if (this.beforeSync) await this.beforeSync();
          await this.fh.datasync();
        } while (this.syncAgain);
      } catch (err) {
        // the lines may not be durable: refuse further appends, as after a failed write
        if (!this.broken) this.broken = err instanceof Error ? err : new Error(String(err));
      } finally {
        this.syncing = null;
      }
    })();
  }

  /** Resolves once every line appended so far is durable; rejects if a background fsync failed. */
  async flush(): Promise<void> {
    await this.chain;
    while (this.syncing) await this.syncing;
    if (this.broken) throw this.broken;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.chain;
    while (this.syncing) await this.syncing;
    await this.fh.close();
  }
}

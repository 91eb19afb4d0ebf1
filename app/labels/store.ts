/**
 * The append-only label store: `labels/<annotator>.jsonl`, one event per line.
 *
 * Durability: every append is one `write` of a whole line, followed by fsync (and an fsync of the folder
 * when the file is created), before the promise resolves. A crash can therefore leave at most a torn
 * last line; readers ignore it (and report it), and the next append moves the torn bytes to
 * `labels/<annotator>.jsonl.torn` before writing, so nothing is lost and the file stays line-clean.
 */
import { appendFile, mkdir, open, readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { containedPath } from '../workspace/contain';
import { parseJsonl } from '../workspace/jsonl';
import { fsyncDir, isNotFound } from './fsio';
import { checkAnnotatorId, LabelEventSchema, type LabelEvent, type LabelEventInput } from './events';

/** A line that could not be read; the file is left as it is. */
export interface LabelReadIssue {
  file: string;
  /** 1-based line number. */
  line: number;
  message: string;
}

export interface LabelFileRead {
  annotator: string;
  events: LabelEvent[];
  /** Malformed complete lines (skipped). */
  issues: LabelReadIssue[];
  /** Bytes after the last newline that did not parse: a write interrupted by a crash. */
  tornTail?: { line: number; bytes: number; text: string };
}

/**
 * Parse the text of one annotator file with the workspace's one tolerant JSONL reader. Pure; exported for tests
 * and importers. Bad complete lines become issues; an unparseable last line without its newline is the torn tail.
 */
export function parseLabelLines(text: string, annotator: string, file = `${annotator}.jsonl`): LabelFileRead {
  const out: LabelFileRead = { annotator, events: [], issues: [] };
  const buf = Buffer.from(text, 'utf8');
  const { records, issues } = parseJsonl<LabelEvent>(buf, (raw) => {
    const ev = LabelEventSchema.safeParse(raw);
    if (!ev.success) return { ok: false, message: ev.error.issues.map((x) => `${x.path.join('.') || '(line)'}: ${x.message}`).join('; ') };
    if (ev.data.who !== annotator) return { ok: false, message: `event by '${ev.data.who}' in the file of '${annotator}'; skipped` };
    return { ok: true, value: ev.data };
  });
  out.events = records;
  for (const i of issues) {
    if (i.kind === 'unterminated-tail') continue; // a complete event that only lacks its newline: kept
    if (i.kind === 'torn-tail') {
      const tail = buf.subarray(i.offset);
      out.tornTail = { line: i.line, bytes: tail.length, text: tail.toString('utf8') };
    } else out.issues.push({ file, line: i.line, message: i.message });
  }
  return out;
}

/** Reads and appends label events in one workspace. */
export class LabelStore {
  private chain: Promise<unknown> = Promise.resolve();
  private readonly clean = new Set<string>();

  constructor(readonly workspaceDir: string) {}

  get dir(): string {
    return join(this.workspaceDir, 'labels');
  }

  fileOf(annotator: string): string {
    checkAnnotatorId(annotator);
    return containedPath(this.dir, `${annotator}.jsonl`);
  }

  /** Annotators with a file in `labels/`. */
  async annotators(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    return names
      .filter((n) => n.endsWith('.jsonl'))
      .map((n) => n.slice(0, -'.jsonl'.length))
      .filter((n) => {
        try {
          checkAnnotatorId(n);
          return true;
        } catch {
          return false;
        }
      })
      .sort();
  }

  /** All events of one annotator, in file (= append) order. A missing file is an empty list. */
  async read(annotator: string): Promise<LabelFileRead> {
    const file = this.fileOf(annotator);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if (isNotFound(err)) return { annotator, events: [], issues: [] };
      throw err;
    }
    return parseLabelLines(text, annotator, file);
  }

  /** Every annotator's events. */
  async readAll(): Promise<LabelFileRead[]> {
    const names = await this.annotators();
    return Promise.all(names.map((n) => this.read(n)));
  }

  /**
   * Append one event (validated; `v` and `at` filled in) durably. Appends from this process are
   * serialized so their order on disk is the call order.
   */
  append(input: Omit<LabelEventInput, 'at' | 'v'> & { at?: string }): Promise<LabelEvent> {
    const parsed = LabelEventSchema.safeParse({ v: 1, at: new Date().toISOString(), ...input });
    if (!parsed.success) {
      return Promise.reject(new Error(`invalid label event: ${parsed.error.issues.map((x) => `${x.path.join('.') || '(event)'}: ${x.message}`).join('; ')}`));
    }
    const ev = parsed.data;
    const run = this.chain.then(() => this.appendNow(ev));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async appendNow(ev: LabelEvent): Promise<LabelEvent> {
    const file = this.fileOf(ev.who);
    await mkdir(this.dir, { recursive: true });
    if (!this.clean.has(file)) await this.repairTail(file);
    const fh = await open(file, 'a');
    try {
      await fh.write(JSON.stringify(ev) + '\n');
      await fh.sync();
    } finally {
      await fh.close();
    }
    this.clean.add(file);
    return ev;
  }

  /**
   * Make sure the file ends with a newline before appending. A complete event missing only its newline
   * gets the newline; a torn fragment is copied to `<file>.torn` (fsynced) and cut off.
   */
  private async repairTail(file: string): Promise<void> {
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (err) {
      if (isNotFound(err)) {
        // New file: create it and persist the directory entry.
        const fh = await open(file, 'a');
        await fh.sync();
        await fh.close();
        await fsyncDir(this.dir);
        return;
      }
      throw err;
    }
    if (size === 0) return;
    const fh = await open(file, 'r+');
    try {
      const last = Buffer.alloc(1);
      await fh.read(last, 0, 1, size - 1);
      if (last[0] === 0x0a) return;
      // Find the start of the last line, reading backwards in blocks.
      let start = 0;
      const block = Buffer.alloc(64 * 1024);
      for (let end = size; end > 0; ) {
        const from = Math.max(0, end - block.length);
        const { bytesRead } = await fh.read(block, 0, end - from, from);
        const nl = block.subarray(0, bytesRead).lastIndexOf(0x0a);
        if (nl >= 0) {
          start = from + nl + 1;
          break;
        }
        end = from;
      }
      const tail = Buffer.alloc(size - start);
      await fh.read(tail, 0, tail.length, start);
      const text = tail.toString('utf8');
      let complete = false;
      try {
        complete = LabelEventSchema.safeParse(JSON.parse(text)).success;
      } catch {
        complete = false;
      }
      if (complete) {
        await fh.write('\n', size);
      } else {
        const torn = `${file}.torn`;
        await appendFile(torn, JSON.stringify({ at: new Date().toISOString(), offset: start, text }) + '\n');
        const th = await open(torn, 'r');
        await th.sync();
        await th.close();
        await fh.truncate(start);
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
}

/**
 * The append-only label store: `labels/<annotator>.jsonl`, one event per line.
 *
 * Durability: through the workspace's one JSONL appender (`app/workspace/jsonl.ts`): every append is one `write`
 * of a whole line, followed by fsync (and an fsync of the folder when the file is created), before the promise
 * resolves. A crash can therefore leave at most a torn last line; readers ignore it (and report it), and the next
 * append moves the torn bytes to `labels/<annotator>.jsonl.torn` before writing, so nothing is lost and the file
 * stays line-clean.
 */
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { containedPath } from '../workspace/contain';
import { JsonlAppender, parseJsonl } from '../workspace/jsonl';
import { isNotFound } from '../workspace/fsutil';
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
    // Opened per event: the file is shared with other processes, and opening repairs a torn tail first.
    const out = await JsonlAppender.open(file, (v) => LabelEventSchema.safeParse(v).success);
    try {
      await out.append(ev);
    } finally {
      await out.close();
    }
    return ev;
  }
}

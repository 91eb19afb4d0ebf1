/**
 * Runs on disk: `runs/<run-id>/manifest.json` (validated with RunManifestSchema, written atomically)
 * and `runs/<run-id>/samples.jsonl` (append-only SampleRecords, one line each, written before a sample counts; fsync'd in the background).
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { RunManifestSchema, SampleRecordSchema, type RunManifest, type SampleRecord } from '../contract/trajectory';
import { APP_VERSION } from '../version';
import { redactUrlPasswordsDeep } from '../connectors/redact';
import { containedPath } from './contain';
import { exists, fsyncDir, writeFileAtomic } from './fsutil';
import { JsonlAppender, readJsonl, type JsonlIssue, type TailRepair } from './jsonl';

const RUN_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const MANIFEST_FILE = 'manifest.json';
export const SAMPLES_FILE = 'samples.jsonl';
/** Deleted runs wait here (inside `runs/`, hidden from listings by the leading dot) until the trash is emptied. */
export const TRASH_DIR = '.trash';

export function isRunId(id: string): boolean {
  return RUN_ID_RE.test(id) && !id.includes('..');
}

function zodMessage(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}

/** A new run id: UTC time + random suffix, sortable by creation time. */
export function newRunId(now: Date = new Date(), slug?: string): string {
  const t = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z').replace('T', '-');
  const s = slug ? '-' + slug.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) : '';
  return `${t}${s}-${randomBytes(3).toString('hex')}`;
}

/** The fields `createRun` fills in when absent. */
export type NewRunManifest = Omit<RunManifest, 'id' | 'createdAt' | 'appVersion'> & Partial<Pick<RunManifest, 'id' | 'createdAt' | 'appVersion'>>;

export interface ReadSamplesResult {
  records: SampleRecord[];
  /** Lines skipped or accepted with a warning (torn tail, bad JSON, schema failures), with line numbers. */
  issues: JsonlIssue[];
}

export interface RunListing {
  id: string;
  dir: string;
  /** Null when the manifest is missing or invalid; see `error`. */
  manifest: RunManifest | null;
  error?: string;
}

function validateSample(value: unknown): { ok: true; value: SampleRecord } | { ok: false; message: string } {
  const r = SampleRecordSchema.safeParse(value);
  return r.success ? { ok: true, value: r.data } : { ok: false, message: `not a valid sample record (${zodMessage(r.error)})` };
}

/** An open run: its manifest and an appender for its samples. */
export class RunHandle {
  private appender: JsonlAppender | null = null;
  private opening: Promise<JsonlAppender> | null = null;
  /** The tail repair done when the writer opened, if any. */
  repair: TailRepair | null = null;

  constructor(
    readonly id: string,
    readonly dir: string,
    public manifest: RunManifest,
    /** Awaited before each background fsync of the samples file (`RunStoreOptions.beforeSync`). */
    private readonly beforeSync?: () => Promise<void>,
  ) {}

  get samplesPath(): string {
    return path.join(this.dir, SAMPLES_FILE);
  }

  get manifestPath(): string {
    return path.join(this.dir, MANIFEST_FILE);
  }

  private writer(): Promise<JsonlAppender> {
    if (this.appender) return Promise.resolve(this.appender);
    // Group durability: a sample counts once its line is written (a killed process loses nothing written); the fsync
    // runs in the background, off the next sample's path (a power cut can lose the last lines; resume runs them again).
    this.opening ??= JsonlAppender.open(this.samplesPath, (v) => SampleRecordSchema.safeParse(v).success, 'group', this.beforeSync ? { beforeSync: this.beforeSync } : {}).then((a) => {
      this.appender = a;
      this.repair = a.repair;
      return a;
    });
    return this.opening;
  }

  /** Open the writer now (repairing a torn tail) instead of on the first append. */
  async openWriter(): Promise<TailRepair | null> {
    await this.writer();
    return this.repair;
  }

  /** Validate and append one sample; resolves once it is written (fsync'd in the background, see `writer`). Returns the record as stored. */
  async appendSample(record: SampleRecord | z.input<typeof SampleRecordSchema>): Promise<SampleRecord> {
    const r = SampleRecordSchema.safeParse(record);
    if (!r.success) throw new Error(`run ${this.id}: sample record is invalid, not written (${zodMessage(r.error)})`);
    const w = await this.writer();
    await w.append(r.data);
    return r.data;
  }

  readSamples(): Promise<ReadSamplesResult> {
    return readJsonl(this.samplesPath, validateSample);
  }

  /** Replace the manifest (validated, atomic). */
  async writeManifest(manifest: RunManifest): Promise<void> {
    const r = RunManifestSchema.safeParse(manifest);
    if (!r.success) throw new Error(`run ${this.id}: manifest is invalid, not written (${zodMessage(r.error)})`);
    if (r.data.id !== this.id) throw new Error(`run ${this.id}: manifest id ${JSON.stringify(r.data.id)} does not match the run folder`);
    await writeFileAtomic(this.manifestPath, JSON.stringify(r.data, null, 2) + '\n');
    this.manifest = r.data;
  }

  async close(): Promise<void> {
    const a = this.appender ?? (this.opening ? await this.opening : null);
    this.appender = null;
    this.opening = null;
    await a?.close();
  }
}

export interface RunStoreOptions {
  /**
   * Awaited before each background fsync of a samples file: the workspace passes its media store's `durable()`,
   * so a record line is never on disk before the media files it names.
   */
  beforeSync?: () => Promise<void>;
}

export class RunStore {
  readonly runsDir: string;
  private readonly beforeSync: (() => Promise<void>) | undefined;

  /** `runsDir` = the workspace's `runs/` folder (see `workspaceLayout`). */
  constructor(runsDir: string, opts: RunStoreOptions = {}) {
    this.runsDir = path.resolve(runsDir);
    this.beforeSync = opts.beforeSync;
  }

  runDir(id: string): string {
    if (!isRunId(id)) throw new Error(`not a valid run id: ${JSON.stringify(id)} (letters, digits, '.', '_', '-'; no slashes)`);
    return containedPath(this.runsDir, id);
  }

  /** Create a run folder with its manifest and an empty samples file. Fails if the id exists. */
  async createRun(input: NewRunManifest): Promise<RunHandle> {
    const id = input.id ?? newRunId(new Date(), typeof input.name === 'string' ? input.name : undefined);
    // A model URL may carry a password (https://user:pass@host/v1): manifests are shared, so it is never written.
    const manifest = redactUrlPasswordsDeep({ ...input, id, createdAt: input.createdAt ?? new Date().toISOString(), appVersion: input.appVersion ?? APP_VERSION });
    const r = RunManifestSchema.safeParse(manifest);
    if (!r.success) throw new Error(`createRun: manifest is invalid (${zodMessage(r.error)})`);
    const dir = this.runDir(id);
    await fsp.mkdir(this.runsDir, { recursive: true });
    try {
      await fsp.mkdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`createRun: run ${id} already exists at ${dir}`);
      throw err;
    }
    await fsyncDir(this.runsDir);
    await writeFileAtomic(path.join(dir, MANIFEST_FILE), JSON.stringify(r.data, null, 2) + '\n');
    await fsp.writeFile(path.join(dir, SAMPLES_FILE), '', { flag: 'a' });
    await fsyncDir(dir);
    return new RunHandle(id, dir, r.data, this.beforeSync);
  }

  /** Read and validate a run's manifest; the error names the file and the failing fields. */
  async readManifest(id: string): Promise<RunManifest> {
    const file = path.join(this.runDir(id), MANIFEST_FILE);
    let text: string;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`run ${id}: no manifest at ${file}`);
      throw err;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new Error(`run ${id}: ${file} is not valid JSON (${(err as Error).message})`);
    }
    const r = RunManifestSchema.safeParse(json);
    if (!r.success) throw new Error(`run ${id}: ${file} is not a valid manifest (${zodMessage(r.error)})`);
    return r.data;
  }

  async writeManifest(manifest: RunManifest): Promise<void> {
    const h = new RunHandle(manifest.id, this.runDir(manifest.id), manifest, this.beforeSync);
    await h.writeManifest(manifest);
  }

  /** Open an existing run. Its writer opens (and repairs a torn tail) on the first append or `openWriter()`. */
  async openRun(id: string): Promise<RunHandle> {
    const manifest = await this.readManifest(id);
    return new RunHandle(id, this.runDir(id), manifest, this.beforeSync);
  }

  async hasRun(id: string): Promise<boolean> {
    return isRunId(id) && exists(path.join(this.runDir(id), MANIFEST_FILE));
  }

  /** Samples of a run, tolerating a torn last line and bad lines (skipped, reported in `issues`). */
  readSamples(id: string): Promise<ReadSamplesResult> {
    return readJsonl(path.join(this.runDir(id), SAMPLES_FILE), validateSample);
  }

  /** Every run folder, newest first; a broken manifest is listed with its error, never thrown. */
  async listRuns(): Promise<RunListing[]> {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await fsp.readdir(this.runsDir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: RunListing[] = [];
    for (const e of entries) {
      if (!e.isDirectory() || !isRunId(e.name)) continue;
      const dir = path.join(this.runsDir, e.name);
      try {
        out.push({ id: e.name, dir, manifest: await this.readManifest(e.name) });
      } catch (err) {
        out.push({ id: e.name, dir, manifest: null, error: (err as Error).message });
      }
    }
    out.sort((a, b) => (b.manifest?.createdAt ?? '').localeCompare(a.manifest?.createdAt ?? '') || b.id.localeCompare(a.id));
    return out;
  }

  /** Where deleted runs wait until the trash is emptied. */
  get trashDir(): string {
    return path.join(this.runsDir, TRASH_DIR);
  }

  /** `name` if no other run has it, else `name (2)`, `name (3)`… Names are how people tell runs apart. */
  async uniqueName(name: string, exceptId?: string): Promise<string> {
    const taken = new Set((await this.listRuns()).filter((r) => r.id !== exceptId && r.manifest?.name).map((r) => r.manifest!.name!));
    if (!taken.has(name)) return name;
    for (let i = 2; ; i++) if (!taken.has(`${name} (${i})`)) return `${name} (${i})`;
  }

  /** Rename a run (its manifest `name`; the id and folder stay). Refuses a name another run has. */
  async renameRun(id: string, name: string): Promise<RunManifest> {
    const clean = name.trim();
    if (!clean) throw new Error('a run name cannot be empty');
    const manifest = await this.readManifest(id);
    if ((await this.uniqueName(clean, id)) !== clean) throw new Error(`another run is already named "${clean}"`);
    const next = { ...manifest, name: clean };
    await this.writeManifest(next);
    return next;
  }

  /** Replace a run's tags (trimmed, de-duplicated, in the given order). */
  async setTags(id: string, tags: string[]): Promise<RunManifest> {
    const manifest = await this.readManifest(id);
    const clean = [...new Set(tags.map((t) => t.trim()).filter((t) => t !== ''))];
    const next: RunManifest = { ...manifest, tags: clean };
    if (clean.length === 0) delete next.tags;
    await this.writeManifest(next);
    return next;
  }

  /** Move a run to the trash (`runs/.trash/<id>`); nothing is deleted until `emptyTrash`. */
  async trashRun(id: string): Promise<void> {
    const dir = this.runDir(id);
    if (!(await exists(dir))) throw new Error(`run ${id}: no such run in ${this.runsDir}`);
    await fsp.mkdir(this.trashDir, { recursive: true });
    const dest = path.join(this.trashDir, id);
    // A run trashed before, restored, and trashed again replaces its older copy.
    await fsp.rm(dest, { recursive: true, force: true });
    await fsp.rename(dir, dest);
    await fsyncDir(this.runsDir);
  }

  /** Move a run's folder into another store (the Demo scratch space → `runs/`); refuses an id the other has. */
  async moveRunTo(id: string, other: RunStore): Promise<void> {
    const src = this.runDir(id);
    const dest = other.runDir(id);
    if (!(await exists(path.join(src, MANIFEST_FILE)))) throw new Error(`run ${id}: no such run in ${this.runsDir}`);
    if (await exists(dest)) throw new Error(`run ${id}: a run with this id exists in ${other.runsDir}`);
    await fsp.mkdir(other.runsDir, { recursive: true });
    await fsp.rename(src, dest);
    await fsyncDir(this.runsDir);
    await fsyncDir(other.runsDir);
  }

  /** Delete a run for good (the Demo's scratch questions; `runs/` deletes go through the trash). */
  async removeRun(id: string): Promise<void> {
    const dir = this.runDir(id);
    if (!(await exists(dir))) throw new Error(`run ${id}: no such run in ${this.runsDir}`);
    await fsp.rm(dir, { recursive: true, force: true });
    await fsyncDir(this.runsDir);
  }

  /** Runs in the trash, newest first. */
  async listTrash(): Promise<RunListing[]> {
    return new RunStore(this.trashDir).listRuns();
  }

  /** Bring a run back from the trash. Fails if a run with its id exists again. */
  async restoreRun(id: string): Promise<void> {
    const dest = this.runDir(id); // validates the id
    const src = path.join(this.trashDir, id);
    if (!(await exists(src))) throw new Error(`run ${id}: not in the trash`);
    if (await exists(dest)) throw new Error(`run ${id}: a run with this id exists; rename or delete it first`);
    await fsp.rename(src, dest);
    await fsyncDir(this.runsDir);
  }

  /** Delete every run in the trash for good; returns how many were deleted. */
  async emptyTrash(): Promise<number> {
    const inTrash = await this.listTrash();
    for (const r of inTrash) await fsp.rm(r.dir, { recursive: true, force: true });
    return inTrash.length;
  }

  /** Rewrite a run's samples (e.g. after images were attached), atomically: readers see old or new, never half. */
  async replaceSamples(id: string, records: SampleRecord[]): Promise<void> {
    const lines: string[] = [];
    for (const [i, rec] of records.entries()) {
      const v = validateSample(rec);
      if (!v.ok) throw new Error(`run ${id}: sample ${i + 1} (${rec.qid}): ${v.message}`);
      lines.push(JSON.stringify(v.value));
    }
    await writeFileAtomic(path.join(this.runDir(id), SAMPLES_FILE), lines.length ? lines.join('\n') + '\n' : '');
  }
}

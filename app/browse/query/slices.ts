/**
 * Saved slices (Zeno-style): a name plus a query, kept in the workspace as `slices.json` so they are
 * shared by every run and readable without Loupe. Folders are a plain optional string.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { isNotFound, writeFileAtomic } from '../../workspace/fsutil';
import { compileQuery, type CompiledQuery } from './compile';
import { QueryError } from './parse';

export const SliceSchema = z.object({
  name: z.string().trim().min(1).max(120),
  query: z.string(),
  description: z.string().optional(),
  folder: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Slice = z.infer<typeof SliceSchema>;

export const SlicesFileSchema = z.object({ version: z.literal(1), slices: z.array(SliceSchema) });
export type SlicesFile = z.infer<typeof SlicesFileSchema>;

export const SLICES_FILE = 'slices.json';

export class SliceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SliceError';
  }
}

/** Reads and writes `<workspace>/slices.json`. Every write re-reads the file first so concurrent windows do not drop each other's slices. */
export class SliceStore {
  constructor(readonly workspaceDir: string) {}

  get file(): string {
    return join(this.workspaceDir, SLICES_FILE);
  }

  async list(): Promise<Slice[]> {
    return (await this.readFile()).slices;
  }

  async get(name: string): Promise<Slice | undefined> {
    return (await this.list()).find((s) => s.name === name);
  }

  /** Compile a saved slice's query. */
  async compile(name: string): Promise<CompiledQuery> {
    const s = await this.get(name);
    if (!s) throw new SliceError(`no slice named '${name}'`);
    return compileQuery(s.query);
  }

  /**
   * Create or update (by name) a slice. The query must parse: a QueryError is rethrown as a SliceError
   * with the column, so a broken slice is never stored.
   */
  async save(input: { name: string; query: string; description?: string; folder?: string }, opts: { overwrite?: boolean } = {}): Promise<Slice> {
    const name = input.name.trim();
    if (!name) throw new SliceError('a slice needs a name');
    try {
      compileQuery(input.query);
    } catch (err) {
      if (err instanceof QueryError) throw new SliceError(`slice '${name}': ${err.pretty()}`);
      throw err;
    }
    const file = await this.readFile();
    const now = new Date().toISOString();
    const i = file.slices.findIndex((s) => s.name === name);
    if (i >= 0 && opts.overwrite === false) throw new SliceError(`a slice named '${name}' already exists`);
    const slice: Slice = {
      name,
      query: input.query,
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.folder !== undefined ? { folder: input.folder } : {}),
      createdAt: i >= 0 ? file.slices[i]!.createdAt : now,
      updatedAt: now,
    };
    if (i >= 0) file.slices[i] = slice;
    else file.slices.push(slice);
    await this.writeFile(file);
    return slice;
  }

  async rename(from: string, to: string): Promise<void> {
    const file = await this.readFile();
    const s = file.slices.find((x) => x.name === from);
    if (!s) throw new SliceError(`no slice named '${from}'`);
    if (file.slices.some((x) => x.name === to.trim())) throw new SliceError(`a slice named '${to}' already exists`);
    s.name = to.trim();
    s.updatedAt = new Date().toISOString();
    await this.writeFile(file);
  }

  /** Returns whether a slice was removed. */
  async remove(name: string): Promise<boolean> {
    const file = await this.readFile();
    const n = file.slices.length;
    file.slices = file.slices.filter((s) => s.name !== name);
    if (file.slices.length === n) return false;
    await this.writeFile(file);
    return true;
  }

  private async readFile(): Promise<SlicesFile> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if (isNotFound(err)) return { version: 1, slices: [] };
      throw err;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new SliceError(`${this.file}: not valid JSON (${(err as Error).message}); fix or move the file away`);
    }
    const parsed = SlicesFileSchema.safeParse(raw);
    if (!parsed.success) {
      throw new SliceError(`${this.file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    }
    return parsed.data;
  }

  private async writeFile(f: SlicesFile): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify(f, null, 2) + '\n');
  }
}

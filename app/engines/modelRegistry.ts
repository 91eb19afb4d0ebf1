/**
 * The models a workspace knows about, stored as one JSON file (`models.json`) in a folder the caller passes (the
 * workspace settings dir). Adding a model validates its folder first and records what was found (dtypes, size,
 * memory estimate), so the Models view can list models without touching ONNX files.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../workspace/fsutil';
import { EngineError } from './errors';
import { modelSubfolder, validateModelFolder, type ModelFolderReport } from './local/modelFolder';
import type { EngineDtype } from './types';

/** Models that ship in the package (listed and usable by name without being added); `dir` is relative to the package root. */
export const BUNDLED_MODELS: ReadonlyArray<{ id: string; dir: readonly string[]; name: string }> = [
  { id: 'tiny-random-qwen25vl', dir: ['models', 'tiny-random-qwen25vl'], name: 'tiny-random-qwen25vl (bundled test model, random weights)' },
  { id: 'loupe-tiny', dir: ['models', 'loupe-tiny', 'model'], name: 'loupe-tiny (bundled; knows only loupe-synth scenes: rings, tags, dot boxes, tag pairs — see its card)' },
];

/** A local model a `--model` value or a picker choice names: its registered (or bundled) id and its folder. */
export interface ResolvedLocalModel {
  /** The name runs record and reports show: the registered id, else the folder's own name. */
  id: string;
  path: string;
  /** True when the name is known to this workspace (registered or bundled), not just a folder. */
  known: boolean;
}

export interface RegisteredModel {
  /** Stable id (default: the folder name; made unique). */
  id: string;
  /** Absolute folder path. */
  path: string;
  name: string;
  modelType?: string;
  dtypes: EngineDtype[];
  sizeBytes: number;
  memoryEstimateBytes?: number;
  addedAt: string;
}

interface RegistryFile {
  version: 1;
  models: RegisteredModel[];
}

export class ModelRegistry {
  private readonly file: string;
  private readonly bundledRoot: string | undefined;

  /** `bundledRoot`: the package root holding `models/` (the bundled models); absent: no bundled models. */
  constructor(settingsDir: string, opts: { bundledRoot?: string } = {}) {
    this.file = path.join(settingsDir, 'models.json');
    this.bundledRoot = opts.bundledRoot;
  }

  /** The bundled models whose folders are present (not validated: `models:list` validates what it shows). */
  bundled(): Array<{ id: string; path: string; name: string }> {
    const root = this.bundledRoot;
    if (!root) return [];
    return BUNDLED_MODELS.map((b) => ({ id: b.id, path: path.join(root, ...b.dir), name: b.name })).filter((b) => existsSync(path.join(b.path, 'config.json')));
  }

  /**
   * What a local model reference names: a registered id, a bundled id (`loupe-tiny`), or a folder (relative to
   * `cwd`). A folder that is a registered or bundled model gets that model's id, so a run of
   * `models/loupe-tiny/model` is recorded as `loupe-tiny`, not as `model`. Throws with the known names (and the
   * model sub-folder, when the folder is a card folder) when the reference names nothing usable.
   */
  async resolveLocal(ref: string, cwd: string = process.cwd()): Promise<ResolvedLocalModel> {
    const s = ref.trim();
    const registered = await this.list();
    const known = [...registered.map((m) => ({ id: m.id, path: m.path })), ...this.bundled().filter((b) => !registered.some((m) => m.id === b.id))];
    const byId = known.find((m) => m.id === s);
    if (byId) return { id: byId.id, path: byId.path, known: true };
    const abs = path.resolve(cwd, s);
    const byPath = known.find((m) => path.resolve(m.path) === abs);
    if (byPath) return { id: byPath.id, path: byPath.path, known: true };
    const names = known.length ? `; known models: ${known.map((m) => m.id).join(', ')}` : '';
    if (!existsSync(abs)) {
      throw new EngineError('model_folder', `model folder ${abs} does not exist and no model is named ${JSON.stringify(s)}: give a model name, a model folder, or an OpenAI-compatible URL (http://host:port/v1)${names}`);
    }
    if (!existsSync(path.join(abs, 'config.json'))) {
      const sub = await modelSubfolder(abs);
      if (sub) throw new EngineError('model_folder', `${abs} holds no model itself, but ${sub} does: use that folder`);
    }
    return { id: path.basename(abs), path: abs, known: false };
  }

  async list(): Promise<RegisteredModel[]> {
    return (await this.read()).models;
  }

  async get(id: string): Promise<RegisteredModel | undefined> {
    return (await this.read()).models.find((m) => m.id === id);
  }

  /** Validates `dir` and remembers it; throws EngineError('model_folder') listing every problem. Re-adding a path updates it. */
  async add(dir: string, opts: { id?: string; name?: string } = {}): Promise<{ model: RegisteredModel; report: ModelFolderReport }> {
    const abs = path.resolve(dir);
    const report = await validateModelFolder(abs);
    if (!report.ok) throw new EngineError('model_folder', `${abs} is not a usable model folder:\n- ${report.errors.join('\n- ')}`);
    const data = await this.read();
    const existing = data.models.find((m) => m.path === abs);
    let id = opts.id ?? existing?.id ?? path.basename(abs);
    if (!existing) for (let i = 2; data.models.some((m) => m.id === id); i++) id = `${opts.id ?? path.basename(abs)}-${i}`;
    const model: RegisteredModel = {
      id,
      path: abs,
      name: opts.name ?? existing?.name ?? path.basename(abs),
      ...(report.modelType ? { modelType: report.modelType } : {}),
      dtypes: report.dtypes,
      sizeBytes: report.sizeBytes,
      ...(report.memoryEstimateBytes !== undefined ? { memoryEstimateBytes: report.memoryEstimateBytes } : {}),
      addedAt: existing?.addedAt ?? new Date().toISOString(),
    };
    data.models = existing ? data.models.map((m) => (m === existing ? model : m)) : [...data.models, model];
    await this.write(data);
    return { model, report };
  }

  async remove(id: string): Promise<boolean> {
    const data = await this.read();
    const n = data.models.length;
    data.models = data.models.filter((m) => m.id !== id);
    if (data.models.length === n) return false;
    await this.write(data);
    return true;
  }

  private async read(): Promise<RegistryFile> {
    let raw: string;
    try {
      raw = await readFile(this.file, 'utf8');
    } catch {
      return { version: 1, models: [] };
    }
    try {
      const v = JSON.parse(raw) as RegistryFile;
      if (!v || !Array.isArray(v.models)) throw new Error('no "models" array');
      return v;
    } catch (e) {
      throw new EngineError('model_folder', `${this.file}: not a valid model registry (${(e as Error).message}); fix or remove the file`);
    }
  }

  private async write(data: RegistryFile): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify(data, null, 2) + '\n'); // a crash never leaves half a registry
  }
}

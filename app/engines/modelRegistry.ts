/**
 * The models a workspace knows about, stored as one JSON file (`models.json`) in a folder the caller passes (the
 * workspace settings dir). Adding a model validates its folder first and records what was found (dtypes, size,
 * memory estimate), so the Models view can list models without touching ONNX files.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EngineError } from './errors';
import { validateModelFolder, type ModelFolderReport } from './local/modelFolder';
import type { EngineDtype } from './types';

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

  constructor(settingsDir: string) {
    this.file = path.join(settingsDir, 'models.json');
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
    await mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(data, null, 2) + '\n');
    await rename(tmp, this.file); // atomic: a crash never leaves half a registry
  }
}

/**
 * The model service: the models a workspace knows (its registry, `models.json`, plus the models that ship in the
 * checkout) and the one model the app keeps loaded for the Demo. Loading goes through the engine manager, so a sweep
 * or serve-model on the same folder shares the Demo's engine process instead of starting another.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { LoadedModel, ModelEntry, ModelReport } from '../contract';
import type { EngineHandle, EngineManager } from './manager';
import { BUNDLED_MODELS, ModelRegistry, type RegisteredModel } from './modelRegistry';
import { validateModelFolder, type ModelFolderReport } from './local/modelFolder';
import type { Engine, EngineDevice, EngineDtype } from './types';

export const BUNDLED_TEST_MODEL = 'tiny-random-qwen25vl';
/** Models that ship in the checkout (listed without being added): the registry's list, so names resolve the same in every door. */
const BUNDLED = BUNDLED_MODELS;

function toEntry(m: Pick<RegisteredModel, 'id' | 'name' | 'path' | 'modelType' | 'sizeBytes' | 'memoryEstimateBytes'> & { dtypes: string[] }, bundled: boolean): ModelEntry {
  return { id: m.id, name: m.name, path: m.path, bundled, ...(m.modelType ? { modelType: m.modelType } : {}), dtypes: m.dtypes, sizeBytes: m.sizeBytes, ...(m.memoryEstimateBytes !== undefined ? { memoryEstimateBytes: m.memoryEstimateBytes } : {}) };
}

export function toReport(r: ModelFolderReport): ModelReport {
  return {
    ok: r.ok,
    dir: r.dir,
    errors: r.errors,
    warnings: r.warnings,
    ...(r.modelType ? { modelType: r.modelType } : {}),
    dtypes: r.dtypes,
    sizeBytes: r.sizeBytes,
    dtypeBytes: r.dtypeBytes as Record<string, number>,
    ...(r.memoryEstimateBytes !== undefined ? { memoryEstimateBytes: r.memoryEstimateBytes } : {}),
    ...(r.suggestion ? { suggestion: r.suggestion } : {}),
  };
}

export interface ModelServiceOptions {
  /** Where `models.json` lives (the workspace folder). */
  registryDir: string;
  /** The package root, where the bundled models are. */
  packageRoot: string;
  engines: EngineManager;
  /** ONNX Runtime threads for the next load (the Settings page's; 0 or absent = automatic). */
  threads?: () => Promise<number | undefined>;
}

export class ModelService {
  readonly registry: ModelRegistry;
  private loaded: { handle: EngineHandle; info: LoadedModel } | null = null;
  private loading: Promise<LoadedModel> | null = null;

  constructor(private readonly o: ModelServiceOptions) {
    this.registry = new ModelRegistry(o.registryDir, { bundledRoot: o.packageRoot });
  }

  private async bundledEntry(id: string): Promise<ModelEntry | null> {
    const b = BUNDLED.find((x) => x.id === id);
    if (!b) return null;
    const dir = path.join(this.o.packageRoot, ...b.dir);
    try {
      await fsp.access(path.join(dir, 'config.json'));
    } catch {
      return null;
    }
    const r = await validateModelFolder(dir);
    if (!r.ok) return null;
    return toEntry({ id: b.id, name: b.name, path: dir, ...(r.modelType ? { modelType: r.modelType } : {}), dtypes: r.dtypes, sizeBytes: r.sizeBytes, ...(r.memoryEstimateBytes !== undefined ? { memoryEstimateBytes: r.memoryEstimateBytes } : {}) }, true);
  }

  /** A registered or bundled model; a clear error naming what to do when there is none. */
  async find(id: string): Promise<ModelEntry> {
    const m = await this.registry.get(id);
    if (m) return toEntry(m, false);
    const b = await this.bundledEntry(id);
    if (b) return b;
    throw new Error(`no model "${id}": add its folder on the Models page first`);
  }

  async list(): Promise<{ models: ModelEntry[]; loaded: LoadedModel | null }> {
    const models: ModelEntry[] = [];
    const reg = await this.registry.list();
    for (const { id } of BUNDLED) {
      const b = await this.bundledEntry(id);
      if (b && !reg.some((m) => m.path === b.path)) models.push(b);
    }
    for (const m of reg) models.push(toEntry(m, false));
    return { models, loaded: this.loaded?.info ?? null };
  }

  async validate(dir: string): Promise<ModelReport> {
    return toReport(await validateModelFolder(path.resolve(dir)));
  }

  async add(dir: string): Promise<{ model: ModelEntry; report: ModelReport }> {
    const { model, report } = await this.registry.add(path.resolve(dir));
    return { model: toEntry(model, false), report: toReport(report) };
  }

  async remove(id: string): Promise<{ removed: boolean }> {
    return { removed: await this.registry.remove(id) };
  }

  /** Keep `id` loaded for the Demo (replacing the model kept before); shared with anyone else using the same folder. */
  async load(id: string, device: EngineDevice = 'cpu', dtype?: EngineDtype): Promise<LoadedModel> {
    const l = this.loaded;
    if (l && l.info.id === id && l.info.requestedDevice === device && (dtype === undefined || l.info.dtype === dtype)) return l.info;
    if (this.loading) await this.loading.catch(() => undefined);
    const entry = await this.find(id);
    const previous = this.loaded;
    this.loaded = null;
    await previous?.handle.release();
    const started = Date.now();
    const p = (async () => {
      const threads = (await this.o.threads?.()) || undefined;
      const handle = await this.o.engines.acquire({ modelDir: entry.path, device, ...(dtype ? { dtype } : {}), ...(threads ? { threads } : {}), label: entry.name });
      const info = handle.info;
      const dt = typeof info.dtype === 'string' ? info.dtype : info.dtype ? JSON.stringify(info.dtype) : (dtype ?? null);
      const result: LoadedModel = { id, requestedDevice: device, device: info.device ?? null, dtype: dt, ...(info.fallbackReason ? { fallbackReason: info.fallbackReason } : {}), ...(info.fallbackDetails ? { fallbackDetails: info.fallbackDetails } : {}), loadMs: Date.now() - started };
      this.loaded = { handle, info: result };
      return result;
    })();
    this.loading = p;
    try {
      return await p;
    } finally {
      if (this.loading === p) this.loading = null;
    }
  }

  /** The kept model's engine (loading it first when another or none is kept). */
  async engineFor(id: string, device: EngineDevice = 'cpu', dtype?: EngineDtype): Promise<{ engine: Engine; entry: ModelEntry; info: LoadedModel }> {
    await this.load(id, device, dtype);
    const l = this.loaded;
    if (!l) throw new Error(`model ${id} did not load`);
    return { engine: l.handle.engine, entry: await this.find(id), info: l.info };
  }

  /**
   * Hold `id` for one run: the same process as the kept model when it is that folder (the manager shares it), and it
   * stays up until `release()` even if the kept model changes meanwhile. A Demo pair runs two models at once; without
   * this, loading B as the kept model would end A's process mid-run.
   */
  async hold(id: string, device: EngineDevice = 'cpu', dtype?: EngineDtype): Promise<{ engine: Engine; entry: ModelEntry; release(): Promise<void> }> {
    const entry = await this.find(id);
    const threads = (await this.o.threads?.()) || undefined;
    const handle = await this.o.engines.acquire({ modelDir: entry.path, device, ...(dtype ? { dtype } : {}), ...(threads ? { threads } : {}), label: entry.name });
    return { engine: handle.engine, entry, release: () => handle.release() };
  }

  isLoaded(): boolean {
    return this.loaded !== null;
  }

  async unload(): Promise<{ unloaded: boolean }> {
    const l = this.loaded;
    this.loaded = null;
    if (!l) return { unloaded: false };
    await l.handle.release();
    return { unloaded: true };
  }
}

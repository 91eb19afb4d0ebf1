/**
 * The engine manager: the one owner of local engines in a process. The Demo, sweeps and `serve-model` ask it for a
 * model; a model that is already loaded (same folder and device, and the same dtype when one is asked for) is shared,
 * so one loaded model is one engine process however many users it has. Requests to one model pass a limit on how
 * many run at once (the rest wait their turn, in order). A model stays loaded while someone holds it (the Models
 * page's "load" holds one for the Demo); the last release ends its process.
 *
 * The transport (worker thread for a CLI, child process for the app's core) is handed in by main/, so this file
 * never loads native code.
 */
import path from 'node:path';
import { LocalEngine, type LocalEngineOptions } from './local/localEngine';
import type { EngineTransportFactory } from './local/transport';
import type { AttentionRequest, AttentionResult, Engine, EngineDevice, EngineDtypeSpec, EngineInfo, GenerateRequest, GenerateResult } from './types';

/** What to load: a model folder on a device (dtype and threads when the caller cares). */
export interface EngineRequest {
  modelDir: string;
  device?: EngineDevice;
  dtype?: EngineDtypeSpec;
  threads?: number;
  /** Shown in state events (e.g. the registry's display name). */
  label?: string;
  /**
   * Engine processes for this model (default 1), each a full copy with its own threads; requests go to the least busy.
   * `serve-model` asks for one per core for a small model, so concurrent clients run side by side. Taken when the model
   * loads: a model already loaded serves with the processes it has.
   */
  replicas?: number;
  /**
   * Requests one engine process may decode together, step by step (LoadOptions.batch; default 1). The engine says
   * whether it does (EngineInfo.batch: only where each request still gets exactly its tokens alone); the model then
   * takes replicas × batch requests at once. Taken when the model loads, like `replicas`.
   */
  batch?: number;
}

/** A state change of one loaded model, for the UI's engine indicator and for logs. */
export interface EngineManagerEvent {
  modelDir: string;
  label: string;
  status: 'loading' | 'ready' | 'busy' | 'error' | 'unloaded';
  info?: EngineInfo;
  message?: string;
}

export interface EngineManagerOptions {
  transport: EngineTransportFactory;
  /** Requests in flight per loaded model; more wait in order (default 1: one ONNX session decodes one sequence well). */
  maxConcurrent?: number;
  /** End an idle worker after this long (0 = never; the app's core keeps a loaded model warm). */
  idleMs?: number;
  onEvent?: (e: EngineManagerEvent) => void;
  /** Extra LocalEngine options (request timeout …). */
  engineOptions?: Pick<LocalEngineOptions, 'requestTimeoutMs'>;
}

/** A use of a loaded model; `engine` obeys the concurrency limit; `release()` once done (idempotent). */
export interface EngineHandle {
  engine: Engine;
  info: EngineInfo;
  /** The folder's key: same key, same process. */
  key: string;
  release(): Promise<void>;
}

/**
 * A model's engine processes: one (the norm) or several replicas. A request goes to the replica with the fewest in
 * flight (the first on a tie), so concurrent requests spread over them; each replica runs its requests in order.
 */
class EnginePool {
  private readonly busy: number[];
  constructor(readonly replicas: LocalEngine[]) {
    this.busy = replicas.map(() => 0);
  }
  info(): EngineInfo {
    const info = this.replicas[0]!.info();
    return this.replicas.length > 1 ? { ...info, replicas: this.replicas.length } : info;
  }
  /** Runs `f` on the least busy replica. */
  private async onLeastBusy<T>(f: (r: LocalEngine) => Promise<T>): Promise<T> {
    let i = 0;
    for (let j = 1; j < this.busy.length; j++) if (this.busy[j]! < this.busy[i]!) i = j;
    this.busy[i]!++;
    try {
      return await f(this.replicas[i]!);
    } finally {
      this.busy[i]!--;
    }
  }
  generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.onLeastBusy((r) => r.generate(req));
  }
  attention(req: AttentionRequest): Promise<AttentionResult> {
    return this.onLeastBusy((r) => r.attention(req));
  }
  async dispose(): Promise<void> {
    await Promise.allSettled(this.replicas.map((r) => r.dispose()));
  }
}

interface Entry {
  key: string;
  req: EngineRequest & { modelDir: string; device: EngineDevice };
  label: string;
  ready: Promise<EnginePool>;
  engine: EnginePool | null;
  /** Requests in flight at once: the manager's limit, or replicas × the engine's batch rows when that is higher. */
  limit: number;
  users: number;
  inFlight: number;
  queue: Array<() => void>;
  loadMs: number;
}

const keyOf = (r: { modelDir: string; device: EngineDevice; dtype?: EngineDtypeSpec }) => `${r.modelDir}|${r.device}|${typeof r.dtype === 'object' ? JSON.stringify(r.dtype) : (r.dtype ?? '')}`;

export class EngineManager {
  private readonly entries = new Map<string, Entry>();
  private readonly limit: number;
  private disposed = false;

  constructor(private readonly opts: EngineManagerOptions) {
    this.limit = Math.max(1, opts.maxConcurrent ?? 1);
  }

  /** Use a model, loading it when nobody has it yet. Rejects (and forgets the entry) when loading fails. */
  async acquire(r: EngineRequest): Promise<EngineHandle> {
    if (this.disposed) throw new Error('the engine manager was shut down');
    const req = { ...r, modelDir: path.resolve(r.modelDir), device: r.device ?? 'cpu' };
    const entry = this.find(req) ?? this.load(req);
    entry.users++;
    let engine: EnginePool;
    try {
      engine = await entry.ready;
    } catch (err) {
      entry.users--;
      throw err;
    }
    let released = false;
    return {
      key: entry.key,
      info: engine.info(),
      engine: this.limited(entry, engine),
      release: async () => {
        if (released) return;
        released = true;
        entry.users--;
        await this.maybeEnd(entry);
      },
    };
  }

  /** Models loaded now (or loading): one engine process each. */
  loaded(): Array<{ key: string; modelDir: string; device: EngineDevice; dtype?: EngineDtypeSpec; users: number; info: EngineInfo | null; loadMs: number }> {
    return [...this.entries.values()].map((e) => ({
      key: e.key,
      modelDir: e.req.modelDir,
      device: e.req.device,
      ...(e.req.dtype ? { dtype: e.req.dtype } : {}),
      users: e.users,
      info: e.engine?.info() ?? null,
      loadMs: e.loadMs,
    }));
  }

  /** End every engine (the core is shutting down). */
  async dispose(): Promise<void> {
    this.disposed = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map(async (e) => (await e.ready).dispose()));
  }

  /** A loaded model serves a request for the same folder and device; a dtype asked for must match too. */
  private find(req: { modelDir: string; device: EngineDevice; dtype?: EngineDtypeSpec }): Entry | undefined {
    const exact = this.entries.get(keyOf(req));
    if (exact) return exact;
    if (req.dtype !== undefined) return undefined;
    return [...this.entries.values()].find((e) => e.req.modelDir === req.modelDir && e.req.device === req.device);
  }

  private load(req: Entry['req']): Entry {
    const label = req.label ?? path.basename(req.modelDir);
    const started = Date.now();
    const replicas = Math.max(1, Math.floor(req.replicas ?? 1));
    const startOne = (): Promise<LocalEngine> =>
      LocalEngine.start({
        transport: this.opts.transport,
        modelDir: req.modelDir,
        device: req.device,
        ...(req.dtype ? { dtype: req.dtype } : {}),
        ...(req.threads ? { threads: req.threads } : {}),
        ...(req.batch && req.batch > 1 ? { batch: Math.floor(req.batch) } : {}),
        ...(this.opts.idleMs !== undefined ? { idleMs: this.opts.idleMs } : {}),
        ...this.opts.engineOptions,
      });
    const start = async (): Promise<EnginePool> => {
      const all = await Promise.allSettled(Array.from({ length: replicas }, startOne));
      const failed = all.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      const ok = all.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      if (failed) {
        await Promise.allSettled(ok.map((e) => e.dispose()));
        throw failed.reason;
      }
      return new EnginePool(ok);
    };
    const entry: Entry = { key: keyOf(req), req, label, engine: null, limit: Math.max(this.limit, replicas), users: 0, inFlight: 0, queue: [], loadMs: 0, ready: start() };
    this.entries.set(entry.key, entry);
    this.emit(entry, 'loading', undefined, `loading ${req.modelDir} on ${req.device}`);
    entry.ready = entry.ready.then(
      (engine) => {
        entry.engine = engine;
        entry.loadMs = Date.now() - started;
        const info = engine.info();
        // an engine that batches decode steps takes that many requests at once, each replica
        entry.limit = Math.max(entry.limit, replicas * (info.batch ?? 1));
        this.emit(entry, 'ready', info, info.fallbackReason ? `asked for ${req.device}; running on ${info.device}: ${info.fallbackReason}` : undefined);
        return engine;
      },
      (err: unknown) => {
        if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
        this.emit(entry, 'error', undefined, `could not load ${req.modelDir}: ${err instanceof Error ? err.message : String(err)}`);
        throw err;
      },
    );
    return entry;
  }

  private async maybeEnd(e: Entry): Promise<void> {
    if (e.users > 0 || this.entries.get(e.key) !== e) return;
    this.entries.delete(e.key);
    const engine = await e.ready.catch(() => null);
    await engine?.dispose().catch(() => undefined);
    this.emit(e, 'unloaded');
  }

  /** The engine as users see it: generate waits for a free slot; dispose is the manager's, not the user's. */
  private limited(e: Entry, engine: EnginePool): Engine {
    const slot = async (): Promise<void> => {
      if (e.inFlight < e.limit) {
        e.inFlight++;
        return;
      }
      await new Promise<void>((resolve) => e.queue.push(resolve)); // the slot is handed over, inFlight unchanged
    };
    const free = () => {
      const next = e.queue.shift();
      if (next) next();
      else e.inFlight--;
    };
    return {
      info: () => engine.info(),
      generate: async (req: GenerateRequest): Promise<GenerateResult> => {
        await slot();
        if (e.inFlight === 1 && e.queue.length === 0) this.emit(e, 'busy', engine.info());
        try {
          return await engine.generate(req);
        } finally {
          free();
          if (e.inFlight === 0) this.emit(e, 'ready', engine.info());
        }
      },
      attention: async (req: AttentionRequest): Promise<AttentionResult> => {
        await slot();
        try {
          return await engine.attention(req);
        } finally {
          free();
        }
      },
      dispose: async () => undefined,
    };
  }

  private emit(e: Entry, status: EngineManagerEvent['status'], info?: EngineInfo, message?: string): void {
    this.opts.onEvent?.({ modelDir: e.req.modelDir, label: e.label, status, ...(info ? { info } : {}), ...(message ? { message } : {}) });
  }
}

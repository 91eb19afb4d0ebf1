/**
 * A small typed worker-thread pool. The worker side registers handlers with `serveWorker`; the main
 * side calls them by name with `pool.call`. Calls with the same `key` go to the same worker (cache
 * locality); a crashed worker rejects its in-flight calls with `WorkerCrashError` and is replaced
 * on the next call.
 */
import { Worker, isMainThread, parentPort, type Transferable } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sourceFile } from '../../app/paths';

/** Handlers a worker serves: one argument in, a structured-clonable value out. */
export type WorkerApi = Record<string, (arg: never) => unknown>;

interface Request {
  id: number;
  method: string;
  arg: unknown;
}
interface SerializedError {
  name: string;
  message: string;
  code?: string;
  props?: Record<string, unknown>;
}
type Response = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** The worker died (crash, out of memory, exit) while a call was in flight. */
export class WorkerCrashError extends Error {
  constructor(
    message: string,
    readonly pool: string,
  ) {
    super(message);
    this.name = 'WorkerCrashError';
  }
}

/** An error thrown by a handler inside the worker, carried across with its name, code and own fields. */
export class RemoteError extends Error {
  constructor(
    e: SerializedError,
    readonly code?: string,
    readonly props: Record<string, unknown> = {},
  ) {
    super(e.message);
    this.name = e.name;
  }
}

function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) {
    const props: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(err)) {
      if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) props[k] = v;
    }
    const code = (err as { code?: unknown }).code;
    return { name: err.name, message: err.message, ...(typeof code === 'string' ? { code } : {}), props };
  }
  return { name: 'Error', message: String(err) };
}

/** Worker side: answer calls from the pool. */
export function serveWorker(api: WorkerApi): void {
  if (isMainThread || !parentPort) throw new Error('serveWorker must run inside a worker thread');
  const port = parentPort;
  port.on('message', (req: Request) => {
    const fn = api[req.method] as ((arg: unknown) => unknown) | undefined;
    Promise.resolve()
      .then(() => {
        if (!fn) throw new Error(`worker has no method "${req.method}"`);
        return fn(req.arg);
      })
      .then(
        (value) => port.postMessage({ id: req.id, ok: true, value } satisfies Response),
        (err: unknown) => port.postMessage({ id: req.id, ok: false, error: serializeError(err) } satisfies Response),
      );
  });
}

export interface WorkerPoolOptions {
  /** The worker module (`.ts` under tsx, `.js` when built); it must call `serveWorker`. */
  entry: URL | string;
  /** Number of workers (default 1). */
  size?: number;
  /** For error messages. */
  name?: string;
  /** Passed to each worker as `workerData` (structured-clonable). */
  workerData?: Record<string, unknown>;
  resourceLimits?: import('node:worker_threads').ResourceLimits;
  /** Terminate a worker after this long without calls (its memory, e.g. caches, is freed); 0 = never. Default 60 s. */
  idleMs?: number;
}

interface Slot {
  worker: Worker | null;
  idle?: ReturnType<typeof setTimeout>;
  pending: Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>;
}

function hashKey(key: string): number {
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return h >>> 0;
}

export class WorkerPool<A extends WorkerApi> {
  private readonly slots: Slot[];
  private nextId = 1;
  private rr = 0;
  private closed = false;
  readonly name: string;
  private readonly entry: string;

  constructor(private readonly opts: WorkerPoolOptions) {
    this.name = opts.name ?? 'worker-pool';
    const e = opts.entry;
    this.entry = e instanceof URL ? e.href : e.startsWith('file:') ? e : pathToFileURL(e).href;
    this.slots = Array.from({ length: Math.max(1, opts.size ?? 1) }, () => ({ worker: null, pending: new Map() }));
  }

  get size(): number {
    return this.slots.length;
  }

  /** Workers currently running (they start on demand and stop when idle). */
  get liveWorkers(): number {
    return this.slots.filter((s) => s.worker !== null).length;
  }

  private armIdle(slot: Slot): void {
    const ms = this.opts.idleMs ?? 60_000;
    if (ms <= 0 || slot.pending.size > 0) return;
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = setTimeout(() => {
      slot.idle = undefined;
      const w = slot.worker;
      if (!w || slot.pending.size > 0) return;
      slot.worker = null;
      void w.terminate();
    }, ms);
    slot.idle.unref();
  }

  private spawn(slot: Slot): Worker {
    // A `.ts` entry (from the sources) starts through the bootstrap that registers tsx; a bundle starts directly.
    const file = this.entry.endsWith('.ts') ? sourceFile('native/workerHost/bootstrap.mjs') : fileURLToPath(this.entry);
    const w = new Worker(file, {
      workerData: { ...this.opts.workerData, __entry: this.entry },
      ...(this.opts.resourceLimits ? { resourceLimits: this.opts.resourceLimits } : {}),
    });
    w.on('message', (res: Response) => {
      const p = slot.pending.get(res.id);
      if (!p) return;
      slot.pending.delete(res.id);
      if (res.ok) p.resolve(res.value);
      else p.reject(new RemoteError(res.error, res.error.code, res.error.props));
    });
    const fail = (why: string) => {
      if (slot.worker !== w) return;
      slot.worker = null;
      const err = new WorkerCrashError(`${this.name}: worker ${why}`, this.name);
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
    };
    w.on('error', (err) => fail(`crashed: ${err.message}`));
    w.on('exit', (code) => fail(`exited with code ${code}`));
    // An idle pool must not keep the process alive.
    w.unref();
    slot.worker = w;
    return w;
  }

  /** Call `method` in every worker running now (none started for it); resolves with their answers. */
  callLive<K extends keyof A & string>(method: K, arg: Parameters<A[K]>[0]): Promise<Array<Awaited<ReturnType<A[K]>>>> {
    return Promise.all(this.slots.filter((s) => s.worker !== null).map((s) => this.callSlot(s, method, arg, [])));
  }

  /** Call `method` in a worker. Same `key` → same worker. */
  call<K extends keyof A & string>(method: K, arg: Parameters<A[K]>[0], opts: { key?: string; transfer?: Transferable[] } = {}): Promise<Awaited<ReturnType<A[K]>>> {
    if (this.closed) return Promise.reject(new Error(`${this.name}: the pool is closed`));
    const idx = opts.key !== undefined ? hashKey(opts.key) % this.slots.length : this.rr++ % this.slots.length;
    return this.callSlot(this.slots[idx]!, method, arg, opts.transfer ?? []);
  }

  private callSlot<K extends keyof A & string>(slot: Slot, method: K, arg: Parameters<A[K]>[0], transfer: Transferable[]): Promise<Awaited<ReturnType<A[K]>>> {
    if (slot.idle) {
      clearTimeout(slot.idle);
      slot.idle = undefined;
    }
    const w = slot.worker ?? this.spawn(slot);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      w.ref();
      const done = () => {
        if (slot.pending.size === 0) {
          w.unref();
          this.armIdle(slot);
        }
      };
      const p = slot.pending.get(id)!;
      slot.pending.set(id, {
        resolve: (v) => {
          done();
          p.resolve(v);
        },
        reject: (e) => {
          done();
          p.reject(e);
        },
      });
      try {
        w.postMessage({ id, method, arg } satisfies Request, transfer);
      } catch (err) {
        slot.pending.delete(id);
        done();
        reject(err);
      }
    });
  }

  /**
   * Refuse new calls, let the calls in flight finish (up to `graceMs`), then stop the workers. A worker ended while
   * native work it started is still running (an image encode on libuv's threads) can take the whole process with it.
   */
  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    const inFlight = this.slots.flatMap((s) => [...s.pending.values()].map((p) => new Promise<void>((r) => {
      const { resolve, reject } = p;
      p.resolve = (v) => (resolve(v), r());
      p.reject = (e) => (reject(e), r());
    })));
    if (inFlight.length) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.all(inFlight), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
    }
    await Promise.all(
      this.slots.map(async (s) => {
        if (s.idle) clearTimeout(s.idle);
        const w = s.worker;
        s.worker = null;
        for (const p of s.pending.values()) p.reject(new WorkerCrashError(`${this.name}: the pool was closed`, this.name));
        s.pending.clear();
        if (w) await w.terminate();
      }),
    );
  }
}

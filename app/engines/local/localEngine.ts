/**
 * The local engine as seen by the core: a client of an engine worker. The worker (native/engine/worker.ts) is started
 * through a transport factory that `main/` or a test passes in, so this file never imports native code.
 *
 * - streaming: `onToken` gets each text delta as the worker produces it;
 * - cancel: aborting `signal` asks the worker to stop after the current step; the call resolves with
 *   finishReason 'cancelled' and the text so far;
 * - crash: if the worker dies, pending calls reject with EngineError('crash') and the next call starts a new worker;
 * - idle: after `idleMs` without calls the worker is ended (memory back) and restarted on demand.
 */
import type { AttentionRequest, AttentionResult, ChatContent, ChatMessage, Engine, EngineImage, EngineInfo, GenerateRequest, GenerateResult } from '../types';
import { EngineError, type EngineErrorKind } from '../errors';
import type { LoadOptions, WorkerEvent, WorkerRequest } from './protocol';
import type { EngineTransport, EngineTransportFactory } from './transport';
import { sleep } from '../../sleep';

export interface LocalEngineOptions extends LoadOptions {
  transport: EngineTransportFactory;
  /** End the worker after this long without calls (0/undefined = never). */
  idleMs?: number;
  /** Reject a generate call that runs longer than this (the worker is told to cancel). */
  requestTimeoutMs?: number;
}

interface Pending {
  resolve(v: WorkerEvent): void;
  reject(e: Error): void;
  onToken?: (delta: string) => void;
}

const KINDS: EngineErrorKind[] = ['model_folder', 'load', 'crash', 'timeout', 'http', 'network', 'bad_request', 'cancelled', 'disposed', 'unavailable'];

export class LocalEngine implements Engine {
  private transport: EngineTransport | null = null;
  private starting: Promise<EngineTransport> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private lastInfo: EngineInfo;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private active = 0;
  private disposed = false;

  private constructor(private readonly opts: LocalEngineOptions) {
    this.lastInfo = { id: `local:${opts.modelDir}`, kind: 'local', model: opts.modelDir };
  }

  /** Starts the worker and loads the model; rejects with EngineError('model_folder' | 'load') naming the problem. */
  static async start(opts: LocalEngineOptions): Promise<LocalEngine> {
    const e = new LocalEngine(opts);
    await e.ensure();
    e.armIdle();
    return e;
  }

  info(): EngineInfo {
    return this.lastInfo;
  }

  private call(t: EngineTransport, msg: WorkerRequest, onToken?: (d: string) => void): Promise<WorkerEvent> {
    return new Promise((resolve, reject) => {
      this.pending.set(msg.id, { resolve, reject, ...(onToken ? { onToken } : {}) });
      t.send(msg);
    });
  }

  private ensure(): Promise<EngineTransport> {
    if (this.disposed) return Promise.reject(new EngineError('disposed', 'the local engine was disposed'));
    if (this.transport) return Promise.resolve(this.transport);
    if (this.starting) return this.starting;
    this.starting = (async () => {
      const t = this.opts.transport();
      t.onMessage((m) => this.onEvent(m));
      t.onExit(({ code, error }) => {
        if (this.transport === t || this.starting) this.transport = null;
        const err = new EngineError(
          'crash',
          `the engine worker exited (code ${code ?? 'unknown'})${error ? `: ${error}` : ''}; the next request starts a new one`,
          { retryable: true },
        );
        for (const [id, p] of this.pending) {
          this.pending.delete(id);
          p.reject(err);
        }
      });
      try {
        const { modelDir, device, dtype, kvCache, threads, batch } = this.opts;
        const ev = await this.call(t, {
          type: 'load',
          id: this.nextId++,
          options: { modelDir, ...(device ? { device } : {}), ...(dtype ? { dtype } : {}), ...(kvCache !== undefined ? { kvCache } : {}), ...(threads ? { threads } : {}), ...(batch && batch > 1 ? { batch } : {}) },
        });
        if (ev.type === 'loaded') this.lastInfo = ev.info;
        this.transport = t;
        return t;
      } catch (e) {
        await t.terminate();
        throw e;
      } finally {
        this.starting = null;
      }
    })();
    return this.starting;
  }

  private onEvent(m: WorkerEvent): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.type === 'token') {
      p.onToken?.(m.delta);
      return;
    }
    this.pending.delete(m.id);
    if (m.type === 'error') {
      const kind = (KINDS as string[]).includes(m.kind) ? (m.kind as EngineErrorKind) : 'load';
      p.reject(new EngineError(kind, m.message));
    } else p.resolve(m);
  }

  private armIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const ms = this.opts.idleMs;
    if (!ms || this.active > 0) return;
    this.idleTimer = setTimeout(() => {
      const t = this.transport;
      this.transport = null;
      void t?.terminate();
    }, ms);
    this.idleTimer.unref?.();
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    const t0 = Date.now();
    if (req.signal?.aborted) {
      return { text: '', promptTokens: 0, completionTokens: 0, finishReason: 'cancelled', latencyMs: 0 };
    }
    this.active++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const id = this.nextId++;
    let t: EngineTransport | null = null;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const onAbort = () => t?.send({ type: 'cancel', id });
    try {
      t = await this.ensure();
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const { prompt, maxTokens, temperature, topP, topK, stop, seed, minPixels, maxPixels } = req;
      const messages = await wireMessages(req.messages);
      const run = this.call(
        t,
        {
          type: 'generate',
          id,
          request: {
            messages,
            maxTokens,
            temperature,
            topP,
            topK,
            stop,
            ...(prompt !== undefined ? { prompt } : {}),
            ...(seed !== undefined ? { seed } : {}),
            ...(minPixels !== undefined ? { minPixels } : {}),
            ...(maxPixels !== undefined ? { maxPixels } : {}),
            stream: !!req.onToken,
          },
        },
        req.onToken,
      );
      const ms = this.opts.requestTimeoutMs;
      const ev = ms
        ? await Promise.race([
            run,
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => {
                t?.send({ type: 'cancel', id });
                reject(new EngineError('timeout', `local generation ran past ${ms} ms; cancelled`, { retryable: false }));
              }, ms);
            }),
          ])
        : await run;
      if (ev.type !== 'done') throw new EngineError('crash', `unexpected worker reply ${ev.type}`);
      return { ...ev.result, latencyMs: Date.now() - t0 };
    } finally {
      if (timer) clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      this.active--;
      this.armIdle();
    }
  }

  /** Attention maps for one turn (the worker's analysis decoder; see Engine.attention). */
  async attention(req: AttentionRequest): Promise<AttentionResult> {
    this.active++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    try {
      const t = await this.ensure();
      const ev = await this.call(t, { type: 'attention', id: this.nextId++, request: req });
      if (ev.type !== 'attention') throw new EngineError('crash', `unexpected worker reply ${ev.type}`);
      return ev.result;
    } finally {
      this.active--;
      this.armIdle();
    }
  }

  /** Token ids of `text` (no special tokens added). */
  async tokenize(text: string): Promise<number[]> {
    const t = await this.ensure();
    const ev = await this.call(t, { type: 'tokenize', id: this.nextId++, text });
    if (ev.type !== 'tokens') throw new EngineError('crash', `unexpected worker reply ${ev.type}`);
    return ev.ids;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const t = this.transport ?? (this.starting ? await this.starting.catch(() => null) : null);
    this.transport = null;
    if (!t) return;
    // let running generations stop at their next step first: ending a worker thread while native inference runs in
    // it can abort the whole host process
    const running = [...this.pending.entries()];
    for (const [id] of running) t.send({ type: 'cancel', id });
    if (running.length) {
      await Promise.race([
        Promise.allSettled(running.map(([id, p]) => new Promise<void>((r) => this.pending.set(id, { ...p, resolve: (v) => (p.resolve(v), r()), reject: (e) => (p.reject(e), r()) })))),
        sleep(5000),
      ]);
    }
    try {
      await Promise.race([this.call(t, { type: 'dispose', id: this.nextId++ }), sleep(2000)]);
    } catch {
      // the worker is going away anyway
    }
    await t.terminate();
  }
}

/**
 * The messages as they cross to the worker: a held image (no file) goes as its pixels (`rgb`), fetched once here;
 * the functions an in-process EngineImage carries stay behind (they cannot be cloned).
 */
async function wireMessages(messages: ChatMessage[]): Promise<ChatMessage[]> {
  const wire = async (img: EngineImage): Promise<EngineImage> => {
    const plain: EngineImage = { ...img };
    delete plain.pixels;
    delete plain.bytes;
    if (plain.path !== undefined || plain.rgb) return plain;
    const pixels = img.pixels;
    if (!pixels) throw new EngineError('bad_request', `image ${img.id} has neither a file nor pixels`);
    return { ...plain, rgb: await pixels() };
  };
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const content: ChatContent[] = [];
    for (const c of m.content) {
      if (c.type === 'image') content.push({ type: 'image', image: await wire(c.image) });
      else if (c.type === 'video') content.push({ type: 'video', frames: await Promise.all(c.frames.map(wire)) });
      else content.push(c);
    }
    out.push({ ...m, content });
  }
  return out;
}

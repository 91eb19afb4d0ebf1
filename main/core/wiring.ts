/**
 * Composition of engines (local worker, OpenAI-compatible, replay) and image ops (sharp) for the sweep runner,
 * used by the core and by every CLI command: app/ never imports native/; this file is where they meet.
 */
import type { EngineDevice, EngineDtype } from '../../app/engines/types';
import type { EngineFactory, EngineLease } from '../../app/sweeps/runner';
import { loadReplay, replayEngine } from '../../app/sweeps/runner/replay';
import { hashFiles, hashModelFolder, type ModelSpec } from '../../app/sweeps/plan';
import type { ImageOps } from '../../app/tools/imageOps';
import type { MediaStore } from '../../app/workspace/mediaStore';
import { EngineManager, type EngineManagerOptions } from '../../app/engines/manager';
import path from 'node:path';

export interface EngineWiringOptions {
  /** Samples in flight per engine (default: 1 local, 8 OpenAI-compatible, 8 replay). */
  concurrency?: number;
  device?: EngineDevice;
  dtype?: EngineDtype;
  /** Local engines: ONNX Runtime intra-op threads (absent: automatic, see LoadOptions.threads). */
  threads?: number;
  apiKey?: string;
  /** Per-request timeout for OpenAI-compatible servers (ms). */
  timeoutMs?: number;
  /** Replay engines: wait this long per turn (to model a slow engine in tests and benchmarks). */
  replayDelayMs?: number;
  /** Where a local engine runs: a worker thread (default, CLI) or a child process (the app's core). */
  isolation?: 'thread' | 'process';
  /** The process's engine manager: local models already loaded there are shared, not loaded again (the app's core). */
  manager?: EngineManager;
}

/**
 * An engine manager for a process. A CLI process does one job, so a worker thread is enough; the app's core asks for
 * a crash boundary, because onnxruntime dying inside a thread can take its host process with it: a child process,
 * or, inside Electron's utilityProcess (itself the boundary), a worker thread (native/engine/isolatedTransport.ts).
 */
export async function createEngineManager(o: { isolation?: 'thread' | 'process'; maxConcurrent?: number; idleMs?: number; onEvent?: EngineManagerOptions['onEvent'] } = {}): Promise<EngineManager> {
  const transport =
    o.isolation === 'process'
      ? (await import('../../native/engine/isolatedTransport')).isolatedTransportFactory
      : (await import('../../native/engine/workerThreadTransport')).workerThreadTransportFactory;
  return new EngineManager({
    transport,
    ...(o.maxConcurrent !== undefined ? { maxConcurrent: o.maxConcurrent } : {}),
    ...(o.idleMs !== undefined ? { idleMs: o.idleMs } : {}),
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
  });
}

/** Ask an OpenAI-compatible server for its models; a clear error when it is not there. */
export async function probeOpenAI(url: string, apiKey?: string, timeoutMs = 5000): Promise<string[]> {
  let res: Response;
  try {
    res = await fetch(`${url}/models`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new Error(
      `cannot reach the OpenAI-compatible server at ${url} (${why}); is it running? Start one with \`loupe serve-model MODEL_DIR --port N\` or vLLM, and pass its /v1 URL`,
    );
  }
  if (res.status === 401) throw new Error(`the server at ${url} wants an API key (HTTP 401): set LOUPE_API_KEY to the key it printed`);
  if (!res.ok) throw new Error(`the server at ${url} answered GET /models with HTTP ${res.status}; is this an OpenAI-compatible /v1 URL?`);
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new Error(`the server at ${url} answered GET /models with something that is not JSON; is this an OpenAI-compatible /v1 URL?`);
  }
  const data = (body as { data?: Array<{ id?: unknown }> }).data;
  return Array.isArray(data) ? data.map((d) => String(d.id)) : [];
}

/**
 * Engines for the sweep runner and `loupe run`. Local models come from the engine manager (the one given, or one of
 * this factory's own, which ends its engines as their leases end); OpenAI URLs are probed before any run starts.
 */
export function engineFactory(o: EngineWiringOptions = {}): EngineFactory {
  let own: Promise<EngineManager> | null = null;
  const manager = (): Promise<EngineManager> => (o.manager ? Promise.resolve(o.manager) : (own ??= createEngineManager({ isolation: o.isolation ?? 'thread', maxConcurrent: o.concurrency ?? 1 })));
  return async (m: ModelSpec): Promise<EngineLease> => {
    if (m.kind === 'local') {
      const modelHash = await hashModelFolder(m.path);
      const h = await (await manager()).acquire({ modelDir: m.path, device: o.device ?? 'cpu', ...(o.dtype ? { dtype: o.dtype } : {}), ...(o.threads ? { threads: o.threads } : {}) });
      if (h.info.fallbackReason) process.stderr.write(`warning: ${h.info.fallbackReason}; running on ${h.info.device}\n`);
      return { info: h.info, engineFor: () => h.engine, concurrency: o.concurrency ?? 1, modelHash, dispose: () => h.release() };
    }
    if (m.kind === 'openai') {
      // The key may come from the environment, so it need not sit on argv where any local user can read it.
      const apiKey = o.apiKey ?? (process.env.LOUPE_API_KEY || undefined);
      const models = await probeOpenAI(m.url, apiKey);
      const model = m.model || models[0];
      if (!model) throw new Error(`the server at ${m.url} lists no models; name one with ${m.url}#MODEL_ID`);
      if (m.model && models.length && !models.includes(m.model)) throw new Error(`the server at ${m.url} does not serve ${JSON.stringify(m.model)} (it serves: ${models.join(', ')})`);
      const { OpenAIEngine } = await import('../../app/engines/openai/openaiEngine');
      const concurrency = o.concurrency ?? 8;
      const engine = new OpenAIEngine({ baseURL: m.url, model, concurrency, ...(apiKey ? { apiKey } : {}), ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) });
      return { info: engine.info(), engineFor: () => engine, concurrency, dispose: () => engine.dispose() };
    }
    const book = await loadReplay(m.file);
    const h = await hashFiles(path.dirname(m.file), [path.basename(m.file)]);
    return {
      info: { id: `replay:${m.file}`, kind: 'scripted', model: m.name },
      engineFor: (s) => replayEngine(book, s.qid, { model: m.name, ...(o.replayDelayMs ? { delayMs: o.replayDelayMs } : {}) }),
      concurrency: o.concurrency ?? 8,
      modelHash: h,
      dispose: async () => undefined,
    };
  };
}

/**
 * Image ops for a process: 'inline' runs sharp from the calling thread (libvips still works on its own threads),
 * right for a CLI; 'worker' keeps every image operation off the thread that serves requests (the app's core).
 */
export async function imageOpsFor(media: MediaStore, mode: 'inline' | 'worker' = 'inline'): Promise<ImageOps & { close?: () => Promise<void> }> {
  const { createImageOps } = await import('../../native/image');
  return createImageOps(media, { mode });
}

/**
 * The PyVision code sandbox for sweeps, the Demo and `loupe run`: native/pysandbox, one isolated Python process per
 * episode, with the wall time each reference waited (PV 20 s, PVRL 30 s). `allowUnisolated` is the user's
 * explicit opt-in where no namespace isolation exists.
 */
export async function codeSandboxFactory(o: { allowUnisolated?: boolean; workRoot?: string } = {}): Promise<import('../../app/tools/codeSandbox').CodeSandboxFactory> {
  const [{ startPySandbox }, { PYVISION_LIMITS }] = await Promise.all([import('../../native/pysandbox'), import('../../app/protocol/pyvision')]);
  return (ep) => startPySandbox(ep, { limits: { wallSeconds: ep.variant === 'PV' ? PYVISION_LIMITS.PV.timeoutS : PYVISION_LIMITS.PVRL.timeoutS }, ...(o.allowUnisolated ? { allowUnisolated: true } : {}), ...(o.workRoot ? { workRoot: o.workRoot } : {}) });
}

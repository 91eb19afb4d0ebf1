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

/** Engines for the CLI. Local models load the worker once per model; OpenAI URLs are probed before any run starts. */
export function cliEngineFactory(o: EngineWiringOptions = {}): EngineFactory {
  return async (m: ModelSpec): Promise<EngineLease> => {
    if (m.kind === 'local') {
      const modelHash = await hashModelFolder(m.path);
      const { LocalEngine } = await import('../../app/engines/local/localEngine');
      // A CLI process does one job, so a worker thread is enough; the app's core asks for a child
      // process, because onnxruntime dying inside a thread can take its host process with it.
      const transport =
        o.isolation === 'process'
          ? (await import('../../native/engine/childProcessTransport')).childProcessTransportFactory
          : (await import('../../native/engine/workerThreadTransport')).workerThreadTransportFactory;
      const engine = await LocalEngine.start({ modelDir: m.path, transport, device: o.device ?? 'cpu', ...(o.dtype ? { dtype: o.dtype } : {}), ...(o.threads ? { threads: o.threads } : {}) });
      const info = engine.info();
      if (info.fallbackReason) process.stderr.write(`warning: ${info.fallbackReason}; running on ${info.device}\n`);
      return { info, engineFor: () => engine, concurrency: o.concurrency ?? 1, modelHash, dispose: () => engine.dispose() };
    }
    if (m.kind === 'openai') {
      const models = await probeOpenAI(m.url, o.apiKey);
      const model = m.model || models[0];
      if (!model) throw new Error(`the server at ${m.url} lists no models; name one with ${m.url}#MODEL_ID`);
      if (m.model && models.length && !models.includes(m.model)) throw new Error(`the server at ${m.url} does not serve ${JSON.stringify(m.model)} (it serves: ${models.join(', ')})`);
      const { OpenAIEngine } = await import('../../app/engines/openai/openaiEngine');
      const concurrency = o.concurrency ?? 8;
      const engine = new OpenAIEngine({ baseURL: m.url, model, concurrency, ...(o.apiKey ? { apiKey: o.apiKey } : {}), ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) });
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

/** Sharp image ops on the calling thread (libvips still works on its own threads): right for a CLI. */
export async function cliImageOps(media: MediaStore): Promise<ImageOps & { close?: () => Promise<void> }> {
  const { createImageOps } = await import('../../native/image');
  return createImageOps(media, { mode: 'inline' });
}

/**
 * `serve-model`: a local model behind the OpenAI-compatible server. The engine comes from the engine manager, so a
 * model the process already holds (the app's Demo, a sweep) is served by the same engine process, not a second copy.
 * With `replicas` (EngineRequest) several engine processes serve one model and the server hands them that many
 * requests at once, so concurrent clients gain throughput on a multi-core machine. With `batch` each engine process
 * also decodes several requests' steps together (EngineInfo.batch when it does), and the server hands it that many.
 */
import type { EngineManager, EngineRequest } from '../manager';
import type { EngineInfo } from '../types';
import { startOpenAIServer, type OpenAIServer, type OpenAIServerOptions } from './openaiServer';

export interface ServedModel {
  server: OpenAIServer;
  info: EngineInfo;
  /** Stop serving and release the engine (it ends when nobody else holds it). */
  close(): Promise<void>;
}

export async function serveModel(engines: EngineManager, req: EngineRequest, server: Omit<OpenAIServerOptions, 'engine'> = {}): Promise<ServedModel> {
  const h = await engines.acquire(req);
  let s: OpenAIServer;
  try {
    // as many requests to the engine at once as its processes take: one each, or their batch rows
    s = await startOpenAIServer({ ...server, engine: h.engine, concurrency: server.concurrency ?? (h.info.replicas ?? 1) * (h.info.batch ?? 1) });
  } catch (err) {
    await h.release();
    throw err;
  }
  return {
    server: s,
    info: h.info,
    close: async () => {
      await s.close();
      await h.release();
    },
  };
}

/**
 * An EngineTransport over node:worker_threads. From the sources the worker runs TypeScript through tsx (no build
 * step): the thread starts from a small .mjs that registers tsx's loader first. A bundle starts its worker bundle.
 */
import { Worker } from 'node:worker_threads';
import type { EngineTransport, EngineTransportFactory } from '../../app/engines/local/transport';
import type { WorkerEvent } from '../../app/engines/local/protocol';
import { fromBundle, sourceFile, workerFile } from '../../app/paths';

export function createWorkerThreadTransport(opts: { resourceLimits?: import('node:worker_threads').ResourceLimits } = {}): EngineTransport {
  const w = new Worker(fromBundle ? workerFile('engine') : sourceFile('native/engine/workerBootstrap.mjs'), { ...(opts.resourceLimits ? { resourceLimits: opts.resourceLimits } : {}) });
  const exitCbs = new Set<(info: { code: number | null; error?: string }) => void>();
  let lastError: string | undefined;
  let exited = false;
  w.on('error', (e) => {
    lastError = e instanceof Error ? e.message : String(e);
  });
  w.on('exit', (code) => {
    exited = true;
    for (const cb of exitCbs) cb({ code, ...(lastError ? { error: lastError } : {}) });
  });
  return {
    send: (msg) => w.postMessage(msg),
    onMessage: (cb) => {
      const h = (m: WorkerEvent) => cb(m);
      w.on('message', h);
      return () => w.off('message', h);
    },
    onExit: (cb) => {
      exitCbs.add(cb);
      return () => exitCbs.delete(cb);
    },
    terminate: async () => {
      if (!exited) await w.terminate();
    },
  };
}

export const workerThreadTransportFactory: EngineTransportFactory = () => createWorkerThreadTransport();

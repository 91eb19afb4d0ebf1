/**
 * An EngineTransport over a child Node process (node:child_process.fork). Unlike a worker thread, a crash of the
 * native runtime (or a kill mid-inference) takes down only the child: use this where crash isolation matters, as
 * Electron's utilityProcess will. Ending a worker *thread* while onnxruntime runs in it can abort the host process.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { EngineTransport, EngineTransportFactory } from '../../app/engines/local/transport';
import type { WorkerEvent } from '../../app/engines/local/protocol';
import { fromBundle, workerFile } from '../../app/paths';

export interface ChildProcessTransport extends EngineTransport {
  readonly child: ChildProcess;
}

export function createChildProcessTransport(): ChildProcessTransport {
  // From the sources the worker is TypeScript run through tsx; a bundle's worker is plain JavaScript.
  const child = fork(workerFile('engine'), [], { execArgv: fromBundle ? [] : ['--import', 'tsx'], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exitCbs = new Set<(info: { code: number | null; error?: string }) => void>();
  let exited = false;
  let lastError: string | undefined;
  child.on('error', (e) => (lastError = e.message));
  child.on('exit', (code, signal) => {
    exited = true;
    for (const cb of exitCbs) cb({ code, ...(signal ? { error: `killed by ${signal}` } : lastError ? { error: lastError } : {}) });
  });
  return {
    child,
    send: (msg) => {
      if (!exited && child.connected) child.send(msg);
    },
    onMessage: (cb) => {
      const h = (m: WorkerEvent) => cb(m);
      child.on('message', h);
      return () => child.off('message', h);
    },
    onExit: (cb) => {
      exitCbs.add(cb);
      return () => exitCbs.delete(cb);
    },
    terminate: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export const childProcessTransportFactory: EngineTransportFactory = () => createChildProcessTransport();

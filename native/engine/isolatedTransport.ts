/**
 * The engine off the core's thread, with a crash boundary. Under Node (CLI, browser mode) that is a child process.
 * Inside Electron's utilityProcess (the Electron door's core) a child Node process is not available (the
 * RunAsNode fuse is off), and the utility process is itself the boundary: a native crash ends it, never the
 * window or Electron's main process. There the engine runs on a worker thread.
 */
import type { EngineTransportFactory } from '../../app/engines/local/transport';
import { createChildProcessTransport } from './childProcessTransport';
import { createWorkerThreadTransport } from './workerThreadTransport';

/** True inside Electron's utilityProcess, which gives its module `process.parentPort`. */
export function inUtilityProcess(): boolean {
  return (process as NodeJS.Process & { parentPort?: unknown }).parentPort !== undefined;
}

export const isolatedTransportFactory: EngineTransportFactory = () => (inUtilityProcess() ? createWorkerThreadTransport() : createChildProcessTransport());

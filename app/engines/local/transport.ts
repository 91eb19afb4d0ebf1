/**
 * How the local engine client talks to its worker. `app/` never creates threads or processes itself: `main/` (or a
 * test) passes a factory — worker_threads today, Electron's utilityProcess later — that speaks these messages.
 */
import type { WorkerRequest, WorkerEvent } from './protocol';

export interface EngineTransport {
  send(msg: WorkerRequest): void;
  /** Subscribe to worker events; returns a disposer. */
  onMessage(cb: (msg: WorkerEvent) => void): () => void;
  /** Called once when the worker ends for any reason (code null = killed / unknown). */
  onExit(cb: (info: { code: number | null; error?: string }) => void): () => void;
  /** Ends the worker; resolves once it is gone. */
  terminate(): Promise<void>;
}

export type EngineTransportFactory = () => EngineTransport;

/**
 * Messages between the local engine client (app/engines/local) and its worker (native/engine/worker.ts).
 * Plain JSON-cloneable data only; images travel as file paths.
 */
import type { EngineDevice, EngineDtypeSpec, EngineInfo, GenerateRequest, GenerateResult } from '../types';

export interface LoadOptions {
  /** Absolute path of a model folder in the transformers.js layout. */
  modelDir: string;
  device?: EngineDevice;
  dtype?: EngineDtypeSpec;
  /** Keep the previous turn's KV cache and reuse the longest shared prefix (default true). */
  kvCache?: boolean;
}

/** A generate request without the callbacks and the AbortSignal (those stay on the client side). */
export type WireGenerateRequest = Omit<GenerateRequest, 'signal' | 'onToken'> & {
  /** Send token events (default true). */
  stream?: boolean;
};

export type WorkerRequest =
  | { type: 'load'; id: number; options: LoadOptions }
  | { type: 'generate'; id: number; request: WireGenerateRequest }
  | { type: 'cancel'; id: number }
  | { type: 'tokenize'; id: number; text: string }
  | { type: 'dispose'; id: number };

export type WorkerEvent =
  | { type: 'loaded'; id: number; info: EngineInfo }
  | { type: 'token'; id: number; delta: string }
  | { type: 'done'; id: number; result: GenerateResult }
  | { type: 'tokens'; id: number; ids: number[] }
  | { type: 'disposed'; id: number }
  | { type: 'error'; id: number; kind: string; message: string };

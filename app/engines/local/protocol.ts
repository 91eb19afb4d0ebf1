/**
 * Messages between the local engine client (app/engines/local) and its worker (native/engine/worker.ts).
 * Plain JSON-cloneable data only; images travel as file paths.
 */
import type { AttentionRequest, AttentionResult, EngineDevice, EngineDtypeSpec, EngineInfo, GenerateRequest, GenerateResult } from '../types';

export interface LoadOptions {
  /** Absolute path of a model folder in the transformers.js layout. */
  modelDir: string;
  device?: EngineDevice;
  dtype?: EngineDtypeSpec;
  /** Keep the previous turn's KV cache and reuse the longest shared prefix (default true). */
  kvCache?: boolean;
  /**
   * ONNX Runtime intra-op threads per session. Absent or 0: automatic — 1 for a small model (its ONNX files under
   * SMALL_MODEL_BYTES), ONNX Runtime's default (one per physical core) otherwise.
   */
  threads?: number;
  /**
   * Which decoder graph to run: 'fused' (onnx/decoder_model_merged_fused{suffix}.onnx, written by `loupe convert
   * --fused`: onnxruntime's fused operators, ~4× fewer nodes a step), 'exported' (the exporter's own), or 'auto'
   * (default): the fused one on CUDA when the folder has it, where a decode step is bound by issuing nodes; the
   * exported one on CPU and WebGPU.
   */
  decoder?: 'auto' | 'fused' | 'exported';
  /**
   * Most requests one decode step may take together (default 1: one request at a time). Above 1, requests that arrive
   * while others decode join them step by step, each getting exactly the tokens it gets alone; only where the decoder
   * allows that (a q8 export on the CPU with one intra-op thread, checked on a probe at load: EngineInfo.batch says).
   */
  batch?: number;
}

/**
 * Below this many bytes of ONNX files a model runs on one intra-op thread by default. A tiny model's ops take
 * microseconds, so handing each one to a thread pool costs more than it saves, and the free core keeps the agent
 * loop's image work off the engine's path: loupe-tiny (12 MB q8) on a 2-core CPU ran a whole image trajectory in
 * 858–918 ms with 1 thread vs 940–1126 ms with the default 2 (paired runs, 40 scenes each).
 */
export const SMALL_MODEL_BYTES = 64 * 2 ** 20;

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
  | { type: 'attention'; id: number; request: AttentionRequest }
  | { type: 'dispose'; id: number };

export type WorkerEvent =
  | { type: 'loaded'; id: number; info: EngineInfo }
  | { type: 'token'; id: number; delta: string }
  | { type: 'done'; id: number; result: GenerateResult }
  | { type: 'tokens'; id: number; ids: number[] }
  | { type: 'attention'; id: number; result: AttentionResult }
  | { type: 'disposed'; id: number }
  | { type: 'error'; id: number; kind: string; message: string };

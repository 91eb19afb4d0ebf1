/**
 * The engine interface the agent loop talks to. Engines never see dialects: they get a rendered
 * conversation and return text. Local engines use `prompt` + `images`; remote ones use `messages`.
 */
import type { MediaRef } from '../contract/trajectory';

/** An image given to an engine: a workspace media file at the size the tools see it. */
export interface EngineImage extends MediaRef {
  /** Absolute path of the file on disk. */
  path: string;
}

export type ChatContent =
  | { type: 'text'; text: string }
  | { type: 'image'; image: EngineImage }
  | { type: 'video'; frames: EngineImage[] };

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: ChatContent[];
}

export interface GenerateRequest {
  /** The conversation so far, ending with a user message (or a partial assistant prefix for continuation). */
  messages: ChatMessage[];
  /** The same conversation rendered exactly as the dialect's chat template does, with image placeholders. */
  prompt?: string;
  maxTokens: number;
  temperature: number;
  topP: number;
  /** -1 = off (vLLM convention). */
  topK: number;
  stop: string[];
  seed?: number;
  /** Bounds the engine's own image preprocessing applies (MIN/MAX_PIXELS). */
  minPixels?: number;
  maxPixels?: number;
  signal?: AbortSignal;
  /** Called with each streamed text delta. */
  onToken?: (delta: string) => void;
}

export interface GenerateResult extends LocalGenerateDetail {
  text: string;
  promptTokens: number;
  completionTokens: number;
  finishReason: 'stop' | 'length' | 'cancelled';
  latencyMs: number;
}

export interface EngineInfo {
  id: string;
  kind: 'local' | 'openai' | 'scripted';
  model: string;
  /** The device that actually ran (local engines), e.g. 'cpu', 'cuda'. */
  device?: string;
  /** Additive: the device that was asked for, when it differs from `device` (a fallback happened), and why. */
  requestedDevice?: string;
  fallbackReason?: string;
  /** Additive: the provider's raw error behind `fallbackReason` (for a "details" disclosure; can be long). */
  fallbackDetails?: string;
  /** Additive: the dtype(s) loaded (local engines). */
  dtype?: EngineDtypeSpec;
  /** Additive: ONNX Runtime intra-op threads per session (local engines); 0 = ONNX Runtime's default. */
  threads?: number;
  /** Additive: engine processes serving this model when more than one (EngineRequest.replicas). */
  replicas?: number;
}

export interface Engine {
  info(): EngineInfo;
  generate(req: GenerateRequest): Promise<GenerateResult>;
  dispose(): Promise<void>;
}

// ---- additive (engines helper): optional detail local engines report --------------------------------------------

/** Where a local engine should run and with which ONNX precision. */
export type EngineDevice = 'cpu' | 'cuda' | 'webgpu' | 'dml' | 'coreml';
/** transformers.js dtype names; `q8` = `*_quantized.onnx`. */
export type EngineDtype = 'fp32' | 'fp16' | 'q8' | 'int8' | 'uint8' | 'q4' | 'q4f16' | 'bnb4';
/** One dtype for all files, or one per ONNX file (`embed_tokens`, `vision_encoder`, `decoder_model_merged`). */
export type EngineDtypeSpec = EngineDtype | Partial<Record<'embed_tokens' | 'vision_encoder' | 'decoder_model_merged', EngineDtype>>;

/** Extra, optional fields of a local engine's result (GenerateResult & LocalGenerateDetail). */
export interface LocalGenerateDetail {
  /** Completion token ids, stop tokens included. */
  tokens?: number[];
  /** Prompt tokens whose KV cache was reused from the previous call (0 = full prefill). */
  cachedTokens?: number;
  prefillMs?: number;
  decodeMs?: number;
}

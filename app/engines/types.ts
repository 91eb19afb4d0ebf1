/**
 * The engine interface the agent loop talks to. Engines never see dialects: they get a rendered
 * conversation and return text. Local engines use `prompt` + `images`; remote ones use `messages`.
 */
import type { MediaRef } from '../contract/trajectory';

/** Decoded 8-bit RGB pixels, row-major, 3 bytes a pixel, no row padding. */
export interface RgbPixels {
  data: Uint8Array;
  width: number;
  height: number;
}

/**
 * An image given to an engine at the size the tools see it: a workspace media file (`path`), or an image the
 * ImageOps holds in memory (no `path`; `pixels` and `bytes` fetch it on demand, nothing is written for it).
 */
export interface EngineImage extends MediaRef {
  /** Absolute path of the file on disk; absent for a held image. */
  path?: string;
  /** A held image's decoded RGB pixels (engines in this process; the local engine client sends them on as `rgb`). */
  pixels?: () => Promise<RgbPixels>;
  /** A held image's PNG bytes, the very bytes the media store writes when it is kept (for engines that send files). */
  bytes?: () => Promise<Uint8Array>;
  /** The pixels themselves, as they cross into an engine worker (the local engine client fills it from `pixels`). */
  rgb?: RgbPixels;
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
  /** Additive: 'fused' when the local engine runs the fused decoder graph (LoadOptions.decoder). */
  decoder?: 'fused' | 'exported';
  /** Additive: true when that fused decoder also runs greedy decode steps in one run (`loupe convert --fused`, unless --no-decode-loop). */
  decodeLoop?: boolean;
  /** Additive: engine processes serving this model when more than one (EngineRequest.replicas). */
  replicas?: number;
  /** Additive: requests one engine process decodes together, step by step, when more than one (LoadOptions.batch). */
  batch?: number;
}

export interface Engine {
  info(): EngineInfo;
  generate(req: GenerateRequest): Promise<GenerateResult>;
  dispose(): Promise<void>;
  /**
   * Where the model looked while it wrote `completion` after `messages` (teacher-forced): per text layer, the
   * head-averaged attention from the tokens of `span` onto one image's tokens. Local ONNX engines with an analysis
   * decoder implement it; others reject with EngineError('unavailable') saying why.
   */
  attention?(req: AttentionRequest): Promise<AttentionResult>;
}

/** An attention request: the conversation before a turn, the turn's text, and which tokens and image to look at. */
export interface AttentionRequest {
  messages: ChatMessage[];
  prompt?: string;
  /** The assistant turn's text, fed after the prompt as the model wrote it (teacher forcing). */
  completion: string;
  /** Characters of `completion` whose tokens are the queries (e.g. the box of a crop call); absent = all of it. */
  span?: [number, number];
  /** Which image of the conversation (0-based, in order of appearance) the map is over. */
  imageIndex: number;
  minPixels?: number;
  maxPixels?: number;
}

/**
 * Attention maps over one image's merged vision tokens: a grid of `grid.h` × `grid.w` cells, each covering 28 × 28
 * pixels (2 × 2 patches of 14) of the image as the engine resized it (`imageSize`), row-major from the top left.
 */
export interface AttentionResult {
  grid: { h: number; w: number };
  /** [width, height] of the image the vision tower saw (smart_resize'd): grid.w * 28 × grid.h * 28. */
  imageSize: [number, number];
  /** Per text layer: the map normalized to sum 1 over the image's cells (length grid.h * grid.w). */
  layers: number[][];
  /** Per text layer: the attention mass the query tokens gave to this image, before normalizing (0..1). */
  imageMass: number[];
  /** Per text layer: mean sum of a query row over all key positions (≈ 1: the softmax's own check). */
  rowSums: number[];
  /** Query tokens (completion tokens inside `span`) the maps average over. */
  queryTokens: number;
  /** The query tokens' text, as the tokenizer decodes them. */
  queryText: string;
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

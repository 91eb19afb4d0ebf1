/**
 * A dialect is data plus a few pure functions: prompts, chat rendering, tool-turn detection, call
 * parsing and a *plan* for each call (geometry, sizes, observation or error text). The agent loop
 * executes plans on real pixels through `ImageOps`; adding a dialect never touches the loop.
 */
import type { Box } from '../contract/trajectory';
import type { PyValue } from '../pycompat/repr';

export type DialectId = 'pixel-reasoner' | 'verl-tool' | 'deepeyes';
/** Prompt variant appended to the user text (Pixel Reasoner's `--system_prompt`). */
export type PromptId = 'vcot' | 'notool';
/** Which resize preset applies (the reference's eval vs train bounds). */
export type ResizeMode = 'eval' | 'train';

/** What the dialect knows about one image in the episode's list (sizes as the tool sees them). */
export interface EpisodeImage {
  width: number;
  height: number;
  /** 'original' = a question image, 'crop' = a zoom result, 'frame' = a selected or video frame. */
  kind: 'original' | 'crop' | 'frame';
}

/** The episode state a plan is computed against. */
export interface EpisodeState {
  mode: ResizeMode;
  isVideo: boolean;
  /** Question images after the initial resize (image case). */
  originals: EpisodeImage[];
  /** Video frames after resize (video case). */
  videoFrames: EpisodeImage[];
  /** Images appended by earlier calls, in order. */
  prior: EpisodeImage[];
  /** Raw (file) sizes of the question images, for dialects that crop the un-resized image (DeepEyes). */
  rawSizes: Array<[number, number]>;
}

export interface ParsedCall {
  name: string;
  arguments: unknown;
  /** Exact text between the call tags. */
  raw: string;
  /**
   * The call as Python's `json.loads` built it (ints vs floats kept apart). Plans use this when set;
   * without it (e.g. arguments edited by hand) integral numbers count as ints. (Additive.)
   */
  py?: { name: PyValue; arguments: PyValue };
}

export type ParseResult =
  | { ok: true; call: ParsedCall }
  | {
      ok: false;
      raw: string;
      error: { type: string; message: string };
      observation: string;
      name?: string | null;
      /**
       * `{name, arguments}` (plain JSON) when both keys were read before the failure (an unknown tool
       * name), else null. (Additive.)
       */
      parsed?: { name: unknown; arguments: unknown } | null;
    };

/** A reference to an image for a plan: which list and which (0-based, already-resolved) index. */
export interface ImageSelection {
  source: 'raw' | 'images' | 'videoFrame';
  /**
   * The reference's own (Python) index into its list, as the golden vectors report it: it may be
   * negative (`target_image=0` picks `[-1]`) and, for a video, the video counts as one entry. To find
   * the image, use `list` + `position`.
   */
  index: number;
  size: [number, number];
  /**
   * Where the image lives, unambiguously (always set by the built-in dialects): which of
   * `EpisodeState`'s lists — `'raw'` = the question image at file size, `rawSizes[position]` — and the
   * non-negative position in it. (Additive.)
   */
  list?: 'originals' | 'prior' | 'videoFrames' | 'raw';
  position?: number;
}

export type CallPlan =
  | {
      kind: 'crop';
      target: ImageSelection;
      bboxMode: 'normalized' | 'absolute';
      bboxRaw: Box;
      normalizedBox: Box;
      cropBoxFloat: Box;
      cropBox: Box;
      cropSize: [number, number];
      resizedSize: [number, number];
      observation: string;
      imagesAfter: number;
      exceedsMaxImages: boolean;
    }
  | {
      kind: 'frames';
      /** The reference's 0-based Python indices (may be negative). */
      frameIndices: number[];
      /** Non-negative positions into `EpisodeState.videoFrames` (PR) or the image list (VT). (Additive.) */
      framePositions?: number[];
      /**
       * verl-tool only: each selected image is cropped with bbox (0,0,1,1) and re-fetched; the loop cuts
       * `cropBox` from `target` and resizes to `resizedSize`. (Additive.)
       */
      frameCrops?: Array<{ target: ImageSelection; cropBox: Box; resizedSize: [number, number] }>;
      frameSize: [number, number];
      observation: string;
      imagesAfter: number;
      exceedsMaxImages: boolean;
    }
  | { kind: 'error'; error: { type: string; message: string }; observation: string };

export interface DialectLimits {
  maxCalls: number;
  maxImages: number;
  tokenBudget: number;
  maxTokensPerTurn: number;
}

export interface Dialect {
  id: DialectId;
  label: string;
  /** Tool names this dialect binds. */
  tools: string[];
  limits: DialectLimits;
  /** Stop strings for generation. */
  stop: string[];
  systemPrompt(prompt: PromptId): string;
  userText(question: string, prompt: PromptId, imageCount: number): string;
  /** Qwen2.5-VL chat rendering of a conversation, with vision placeholders. */
  render(turns: RenderTurn[], addGenerationPrompt: boolean): string;
  isToolTurn(response: string): boolean;
  /** `prefix` = decoded prompt so far with image pads removed; `response` = this turn's output. */
  parseCall(prefix: string, response: string): ParseResult;
  planCall(call: ParsedCall, state: EpisodeState): CallPlan;
  /** The final answer span of a non-tool turn (e.g. `<answer>` for DeepEyes), or null. */
  extractAnswer(text: string): string | null;
  /**
   * The user turn that carries a plan's observation, images in place (crop: text then the image;
   * frames: text then k images; error: text only). (Additive.)
   */
  observationParts?(plan: CallPlan): RenderPart[];
  /**
   * Whether the loop must stop before running this turn's call (PR: more than 3 calls so far, more
   * than 16 images, or prompt+output over the token budget). (Additive.)
   */
  forceFinish?(s: { toolCallsSoFar: number; imageCount: number; promptTokens: number; outputTokens: number }): boolean;
}

export type RenderPart = { type: 'text'; text: string } | { type: 'image' } | { type: 'video' };
export interface RenderTurn {
  role: 'system' | 'user' | 'assistant';
  parts: RenderPart[];
}

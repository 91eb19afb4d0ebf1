/** Settings, inputs and events of one agent episode (see runEpisode). */
import type { MediaRef, ToolCallRecord, Trajectory, Turn } from '../contract/trajectory';
import type { Engine } from '../engines/types';
import type { CallPlan, Dialect, DialectLimits, EpisodeState, ParsedCall, ParseResult, PromptId, ResizeMode } from '../protocol/types';
import type { ImageOps } from '../tools/imageOps';

export interface PixelBounds {
  minPixels: number;
  maxPixels: number;
}

/** Decoding per the reference: eval greedy; train T=1.0, top_p 0.95, top_k 40, then T=0.9 after turn 1. */
export interface DecodingSettings {
  temperature: number;
  topP: number;
  /** -1 = off. */
  topK: number;
  /** Temperature for turns after the first (PR train uses 0.9); default = `temperature`. */
  laterTemperature?: number;
  seed?: number;
}

export interface EpisodeSettings {
  /** Prompt variant (`vcot` = tools + guidelines, `notool`). */
  prompt: PromptId;
  /** Resize preset family and decoding defaults: the reference's eval or train settings. */
  mode: ResizeMode;
  /** Bounds the *engine* re-applies to every image (vLLM `MIN_PIXELS`/`MAX_PIXELS`); passed through. */
  minPixels?: number;
  maxPixels?: number;
  /** Override the initial resize bounds (default: the preset for `mode`). */
  initialPixels?: PixelBounds;
  /** Override the zoom-result resize bounds (default: the dialect's preset for `mode`). */
  zoomPixels?: PixelBounds;
  /** Override the video-frame resize bounds (default: the `video_frame` preset). */
  videoFramePixels?: PixelBounds;
  decoding: DecodingSettings;
  /** Per-field overrides of the dialect's limits. */
  limits?: Partial<DialectLimits>;
  /** Abort a single engine call after this long (→ `engine_error`). */
  turnTimeoutMs?: number;
}

/** A question's media: file paths (imported through ImageOps) or already-imported media. */
export type EpisodeMedia = { images: Array<string | MediaRef> } | { videoFrames: Array<string | MediaRef> };

export interface StepHookContext {
  turnIndex: number;
  /** The model's text for this turn. */
  text: string;
  parse: ParseResult;
  plan: CallPlan;
  state: EpisodeState;
}

/** What a step hook may do: run as planned (undefined), replace the call, or stop the episode. */
export type StepHookDecision = void | undefined | { call: ParsedCall } | { cancel: true };

export type EpisodeEvent =
  | { type: 'episode-start'; media: MediaRef[]; originals: MediaRef[]; isVideo: boolean; system: string; userText: string }
  | { type: 'turn-start'; turnIndex: number; prompt: string }
  | { type: 'token'; turnIndex: number; delta: string }
  | { type: 'call-planned'; turnIndex: number; call: ParsedCall | null; plan: CallPlan; edited: boolean }
  | { type: 'call-executed'; turnIndex: number; call: ToolCallRecord; observation: string }
  | { type: 'turn-end'; turn: Turn }
  | { type: 'done'; trajectory: Trajectory };

export interface RunEpisodeOptions {
  engine: Engine;
  dialect: Dialect;
  settings?: Partial<Omit<EpisodeSettings, 'decoding'>> & { decoding?: Partial<DecodingSettings> };
  media: EpisodeMedia;
  question: string;
  imageOps: ImageOps;
  /** Called with each event as it happens (must not throw; errors are ignored). */
  onStep?: (event: EpisodeEvent) => void;
  /** Step mode: called before each call runs; may replace it (the record is marked `edited`). */
  stepHook?: (ctx: StepHookContext) => StepHookDecision | Promise<StepHookDecision>;
  signal?: AbortSignal;
  /**
   * The question media already imported and resized by `prepareEpisodeMedia` with this episode's media, ImageOps and
   * settings (started early by a caller that overlaps it with other work); a rejection ends the episode as its own
   * `error` ("preparing the question media: …"), exactly as a failure of the preparation inside the episode would.
   */
  prepared?: Promise<PreparedEpisodeMedia>;
}

/** The question media of an episode before its first turn: the imported originals and the initial (resized) images. */
export interface PreparedEpisodeMedia {
  originals: MediaRef[];
  initial: MediaRef[];
  /** With `keep`: the keeps (writes) of the initial images, started and not awaited; settles when they are done. */
  writes?: Promise<void>;
}

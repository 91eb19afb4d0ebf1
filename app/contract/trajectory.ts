/**
 * The trajectory and run-record shapes shared by the core, the run store, importers and the UI.
 * Plain zod, no Node imports: the renderer imports this file.
 */
import { z } from 'zod';

/** A content-addressed image in the workspace (`media/<sha256>.<ext>`). */
export const MediaRefSchema = z.object({
  /** `<sha256>.<ext>`; the file name under `media/`. */
  id: z.string().min(1),
  width: z.number().int().nonnegative(),
  height: z.number().int().nonnegative(),
  mime: z.string().optional(),
});
export type MediaRef = z.infer<typeof MediaRefSchema>;

/** Why an episode ended. */
export const StopReasonSchema = z.enum([
  'answer', // the model produced a final (non-tool) turn
  'max_calls', // tool-call limit reached (Pixel Reasoner: > 3 calls forces finish)
  'max_images', // the next observation would pass the image limit (16)
  'token_budget', // prompt + output would pass the token budget
  'length', // a turn hit its max tokens without a stop string
  'cancelled', // the user or the runner cancelled
  'engine_error', // the engine failed (crash, timeout, HTTP error)
  'error', // anything else; see `error`
]);
export type StopReason = z.infer<typeof StopReasonSchema>;

/** [x1, y1, x2, y2]. */
export const BoxSchema = z.tuple([z.number(), z.number(), z.number(), z.number()]);
export type Box = z.infer<typeof BoxSchema>;

/** One executed (or attempted) visual operation within a turn. */
export const ToolCallRecordSchema = z.object({
  /** The exact text between the tags the dialect parsed. */
  raw: z.string(),
  /** Tool name as the model wrote it; null when parsing failed before the name. */
  name: z.string().nullable(),
  /** Parsed arguments, as JSON. */
  arguments: z.unknown().optional(),
  /** For crops: which image the box refers to (0-based index into the episode's image list). */
  targetIndex: z.number().int().optional(),
  /** 'normalized' when all four values < 1 (Pixel Reasoner rule), else 'absolute'. */
  bboxMode: z.enum(['normalized', 'absolute']).optional(),
  /** The box exactly as the model gave it. */
  bboxRaw: BoxSchema.optional(),
  /** Normalized [0,1] box before padding. */
  bboxNormalized: BoxSchema.optional(),
  /** Normalized [0,1] box after padding and clamping. */
  bboxPadded: BoxSchema.optional(),
  /** Integer pixel box on the target image (as handed to the crop). */
  cropBox: BoxSchema.optional(),
  /** For select_frames: 0-based frame indices. */
  frameIndices: z.array(z.number().int()).optional(),
  /** Media produced (crop after zoom resize, or selected frames). */
  produced: z.array(MediaRefSchema).default([]),
  /** Exact error text given to the model, when the call failed. */
  error: z.string().optional(),
  /** Set when the call was edited by a person in step mode. */
  edited: z.boolean().optional(),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;

/** One model turn and the observation that followed it. */
export const TurnSchema = z.object({
  index: z.number().int().nonnegative(),
  /** The model's text for this turn (stop string excluded). */
  text: z.string(),
  /** The tool call of this turn, if it was a tool turn. */
  call: ToolCallRecordSchema.optional(),
  /** Exact observation text appended as the next user message ('' when none). */
  observation: z.string().optional(),
  promptTokens: z.number().int().nonnegative().optional(),
  completionTokens: z.number().int().nonnegative().optional(),
  latencyMs: z.number().nonnegative().optional(),
  finishReason: z.string().optional(),
});
export type Turn = z.infer<typeof TurnSchema>;

/** A full episode. */
export const TrajectorySchema = z.object({
  dialect: z.string(),
  prompt: z.string(),
  /** The initial media as the model saw them (after the initial resize). */
  media: z.array(MediaRefSchema),
  /** The original files, before resize (same order as media). */
  originals: z.array(MediaRefSchema).default([]),
  isVideo: z.boolean().default(false),
  question: z.string(),
  /** Exact system prompt text. */
  system: z.string().optional(),
  /** Exact first user text (question plus prompt suffix). */
  userText: z.string().optional(),
  turns: z.array(TurnSchema),
  stopReason: StopReasonSchema,
  error: z.string().optional(),
  /** The final answer text (last turn's text when it is not a tool turn). */
  finalText: z.string().optional(),
  totalTokens: z.number().int().nonnegative().optional(),
  latencyMs: z.number().nonnegative().optional(),
});
export type Trajectory = z.infer<typeof TrajectorySchema>;

/** One line of `samples.jsonl`. */
export const SampleRecordSchema = z.object({
  qid: z.string(),
  bench: z.string(),
  category: z.string().optional(),
  question: z.string(),
  options: z.array(z.string()).optional(),
  answer: z.unknown(),
  prediction: z.string(),
  extracted: z.unknown().optional(),
  score: z.number(),
  scores: z.record(z.string(), z.number()).optional(),
  correct: z.boolean(),
  stop_reason: StopReasonSchema,
  calls: z.number().int().nonnegative(),
  tool_errors: z.number().int().nonnegative(),
  latency_ms: z.number().nonnegative().optional(),
  error: z.string().optional(),
  trajectory: TrajectorySchema.optional(),
  /** Where the record came from when imported. */
  source: z.string().optional(),
  /** Source-specific fields an importer keeps as they were (e.g. Pixel Reasoner `curiosity`, DeepEyes `status`). */
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type SampleRecord = z.infer<typeof SampleRecordSchema>;

/** `manifest.json` of a run. */
export const RunManifestSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  /** Labels the user gave the run (Runs page, `loupe runs tag`). */
  tags: z.array(z.string()).optional(),
  createdAt: z.string(),
  appVersion: z.string(),
  kind: z.enum(['eval', 'demo', 'import']).default('eval'),
  model: z.object({ id: z.string(), path: z.string().optional(), hash: z.string().optional() }).passthrough(),
  engine: z.string(),
  dialect: z.string(),
  prompt: z.string(),
  minPixels: z.number().optional(),
  maxPixels: z.number().optional(),
  zoom: z.object({ minPixels: z.number(), maxPixels: z.number() }).optional(),
  decoding: z.object({ temperature: z.number(), topP: z.number(), topK: z.number(), maxTokens: z.number(), seed: z.number().optional() }).partial().optional(),
  limits: z.object({ maxCalls: z.number(), maxImages: z.number(), tokenBudget: z.number() }).partial().optional(),
  bench: z.object({ id: z.string(), revision: z.string().optional(), data: z.string().optional(), n: z.number().optional(), optionOrder: z.string().optional() }).passthrough().optional(),
  scorers: z.record(z.string(), z.string()).optional(),
  shard: z.object({ index: z.number(), count: z.number() }).optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
}).passthrough();
export type RunManifest = z.infer<typeof RunManifestSchema>;

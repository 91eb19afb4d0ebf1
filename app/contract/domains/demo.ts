/**
 * Demo domain: run a model on a question about pixels and stream its trajectory, step through its calls, keep
 * edited branches, export. Handlers: main/core/handlers/demo.ts over app/demo/service.ts (models: domains/models.ts).
 */
import { AttentionMapsSchema } from '../attention';
import { z } from 'zod';
import { Empty } from '../common';
import { BoxSchema, MediaRefSchema, ToolCallRecordSchema, TrajectorySchema, TurnSchema } from '../trajectory';

/** Which engine answers: a local model folder, an OpenAI-compatible server, or a replay of recorded text. */
export const DemoEngineSpecSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('local'),
    /** A registered model id (see `models:list`); the bundled tiny model is `tiny-random-qwen25vl`. */
    modelId: z.string().min(1),
    device: z.enum(['cpu', 'cuda', 'webgpu', 'dml', 'coreml']).optional(),
    dtype: z.enum(['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4']).optional(),
  }),
  z.object({
    kind: z.literal('openai'),
    /** e.g. http://127.0.0.1:8000/v1 */
    baseURL: z.string().url(),
    model: z.string().min(1),
    apiKey: z.string().optional(),
  }),
  z.object({
    /**
     * A served engine Loupe started (`served:start`): the core answers with its URL, model and key, so the key
     * never reaches the renderer.
     */
    kind: z.literal('served'),
    id: z.string().min(1).max(300),
  }),
  z.object({
    /**
     * Replays a recorded trajectory's model text turn by turn while the tools run for real on the
     * chosen image. Not a model: the text cannot react to an edited box.
     */
    kind: z.literal('replay'),
    runId: z.string().min(1),
    qid: z.string().min(1),
  }),
]);
export type DemoEngineSpec = z.infer<typeof DemoEngineSpecSchema>;

export const DemoSettingsSchema = z
  .object({
    /** The engine's own image bounds (vLLM MIN_PIXELS / MAX_PIXELS). */
    minPixels: z.number().int().positive().optional(),
    maxPixels: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).default(0),
    maxCalls: z.number().int().positive().max(64).optional(),
    maxImages: z.number().int().positive().max(256).optional(),
    tokenBudget: z.number().int().positive().optional(),
    maxTokensPerTurn: z.number().int().positive().max(32768).optional(),
    /** A turn that takes longer fails the episode with `engine_error` (stalled engine). */
    turnTimeoutMs: z.number().int().positive().optional(),
  })
  .strict();
export type DemoSettings = z.infer<typeof DemoSettingsSchema>;

export const DemoRunReqSchema = z
  .object({
    /** Imported media ids (from `demo:import` or the browser-mode `/upload` route). */
    media: z.array(MediaRefSchema).min(1),
    /** True: the media are the frames of one video, in order. */
    isVideo: z.boolean().default(false),
    question: z.string().min(1),
    engine: DemoEngineSpecSchema,
    /** `pyvision` / `pyvision-rl`: the code tool (PV / PVRL), run in the episode's sandbox. */
    dialect: z.enum(['pixel-reasoner', 'verl-tool', 'deepeyes', 'pyvision', 'pyvision-rl']).default('pixel-reasoner'),
    prompt: z.enum(['vcot', 'notool']).default('vcot'),
    settings: DemoSettingsSchema.default({ temperature: 0 }),
    /** Pause before each tool call runs (see `demo:continue`). */
    stepMode: z.boolean().default(false),
  })
  .strict();
export type DemoRunReq = z.input<typeof DemoRunReqSchema>;

/** One side of a Demo pair: what differs between the two runs (a model, a prompt, a dialect, a checkpoint). */
export const DemoPairSideSchema = z
  .object({
    engine: DemoEngineSpecSchema,
    dialect: z.enum(['pixel-reasoner', 'verl-tool', 'deepeyes', 'pyvision', 'pyvision-rl']).default('pixel-reasoner'),
    prompt: z.enum(['vcot', 'notool']).default('vcot'),
  })
  .strict();
export type DemoPairSide = z.input<typeof DemoPairSideSchema>;

/** Two configurations at once on the same input; every other field is shared (as in `demo:run`). */
export const DemoRunPairReqSchema = z
  .object({
    media: z.array(MediaRefSchema).min(1),
    isVideo: z.boolean().default(false),
    question: z.string().min(1),
    settings: DemoSettingsSchema.default({ temperature: 0 }),
    /** Each side pauses before its own calls; `demo:continue` names the side's run id. */
    stepMode: z.boolean().default(false),
    a: DemoPairSideSchema,
    b: DemoPairSideSchema,
  })
  .strict();
export type DemoRunPairReq = z.input<typeof DemoRunPairReqSchema>;

/** A Demo pair: its id (in both runs' manifests, `extra.pair`) and the two runs, A first. */
export const DemoPairSchema = z.object({
  pairId: z.string(),
  a: z.string(),
  b: z.string(),
  /** Where the runs are now: still in the Demo's scratch space, or saved into `runs/`. */
  saved: z.boolean(),
  /** Short descriptions of each side's configuration, e.g. `loupe-tiny · vcot`. */
  labels: z.tuple([z.string(), z.string()]),
});
export type DemoPair = z.infer<typeof DemoPairSchema>;

/** A paused tool call as step mode shows it: what the model asked for, on which image. */
export const DemoProposalSchema = z.object({
  turnIndex: z.number().int(),
  name: z.string().nullable(),
  raw: z.string(),
  /** 'crop' calls (the box) and 'code' calls (the Python) can be edited; 'frames' and 'error' calls can only run or stop. */
  kind: z.enum(['crop', 'frames', 'error', 'code']),
  /** 'code': the Python the model wrote, as it would run. */
  code: z.string().optional(),
  targetIndex: z.number().int().optional(),
  target: MediaRefSchema.optional(),
  bboxMode: z.enum(['normalized', 'absolute']).optional(),
  bboxRaw: BoxSchema.optional(),
  /** Normalized box before padding. */
  bboxNormalized: BoxSchema.optional(),
  bboxPadded: BoxSchema.optional(),
  error: z.string().optional(),
});
export type DemoProposal = z.infer<typeof DemoProposalSchema>;

/** One branch of a demo run: the original (as the model went) or one with a person's edits. */
export const DemoBranchSchema = z.object({
  id: z.string(),
  label: z.string(),
  /** Turn index of the first edit (absent for the original). */
  forkTurn: z.number().int().optional(),
});
export type DemoBranch = z.infer<typeof DemoBranchSchema>;

const base = { runId: z.string(), branch: z.string() };
/** Everything a run streams, in order. */
export const DemoEventSchema = z.discriminatedUnion('type', [
  z.object({ ...base, type: z.literal('start'), media: z.array(MediaRefSchema), originals: z.array(MediaRefSchema), isVideo: z.boolean(), system: z.string(), userText: z.string(), engineLabel: z.string(), replay: z.boolean() }),
  z.object({ ...base, type: z.literal('turn-start'), turnIndex: z.number().int(), at: z.number() }),
  /** Text deltas of the current turn, coalesced (a few per animation frame at most). */
  z.object({ ...base, type: z.literal('tokens'), turnIndex: z.number().int(), delta: z.string() }),
  z.object({ ...base, type: z.literal('paused'), proposal: DemoProposalSchema }),
  z.object({ ...base, type: z.literal('call'), turnIndex: z.number().int(), call: ToolCallRecordSchema, observation: z.string() }),
  z.object({ ...base, type: z.literal('turn'), turn: TurnSchema }),
  /** An error the user should see (engine crash, timeout, bad media); the partial trajectory is kept. */
  z.object({ ...base, type: z.literal('error'), message: z.string() }),
  z.object({ ...base, type: z.literal('done'), trajectory: TrajectorySchema, branches: z.array(DemoBranchSchema) }),
]);
export type DemoEvent = z.infer<typeof DemoEventSchema>;

export const ReplaySourceSchema = z.object({
  runId: z.string(),
  runName: z.string().optional(),
  qid: z.string(),
  question: z.string(),
  dialect: z.string(),
  calls: z.number().int(),
  turns: z.number().int(),
  /** The recorded question media, when present in this workspace. */
  media: z.array(MediaRefSchema),
  isVideo: z.boolean(),
});
export type ReplaySource = z.infer<typeof ReplaySourceSchema>;

export const ExportResultSchema = z.object({
  format: z.enum(['html', 'webp', 'gif']),
  /** Absolute path of the written file (under the workspace's `exports/`). */
  path: z.string(),
  /** Its file name in `exports/` (what a download is called). */
  name: z.string(),
  bytes: z.number().int(),
  /** Animation frames (webp/gif). */
  frames: z.number().int().optional(),
  /** For animations: the media id, viewable through the media URL. */
  mediaId: z.string().optional(),
});
export type ExportResult = z.infer<typeof ExportResultSchema>;

/** A ready-to-run example for the Demo: a loupe-synth scene, its question, and the bundled model to try it with. */
export const DemoExampleSchema = z.object({
  id: z.string(),
  title: z.string(),
  question: z.string(),
  answer: z.string(),
  modelId: z.string(),
  media: z.array(MediaRefSchema).min(1),
});
export type DemoExample = z.infer<typeof DemoExampleSchema>;

/** An unsaved Demo question in the scratch space (the workspace's `demo/`). */
export const DemoScratchRunSchema = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  model: z.string(),
  question: z.string(),
  /** Branches recorded so far (step-mode edits fork new ones). */
  branches: z.number().int(),
  /** Turns of the first branch. */
  turns: z.number().int(),
  /** Still running or paused in step mode (saving or discarding stops it first, keeping what it did). */
  live: z.boolean(),
});
export type DemoScratchRun = z.infer<typeof DemoScratchRunSchema>;

export const demoCalls = {
  /** Import files the core can read (Electron passes dropped paths): images, or a folder of frames (→ a video). */
  'demo:import': {
    req: z.object({ paths: z.array(z.string().min(1)).min(1).max(512) }).strict(),
    res: z.object({ media: z.array(MediaRefSchema), isVideo: z.boolean() }),
  },
  'demo:replaySources': { req: Empty, res: z.array(ReplaySourceSchema) },
  /** The bundled example scenes (models/loupe-tiny/examples), imported into the workspace; [] when absent. */
  'demo:examples': { req: Empty, res: z.array(DemoExampleSchema) },
  /** Start a run; its events arrive on `demo:event` with the returned run id. */
  'demo:run': { req: DemoRunReqSchema, res: z.object({ runId: z.string() }) },
  'demo:stop': { req: z.object({ runId: z.string().min(1) }).strict(), res: z.object({ stopped: z.boolean() }) },
  /** Step mode: run the paused call as proposed, with an edited box (normalized to the target image), or stop. */
  'demo:continue': {
    req: z
      .object({
        runId: z.string().min(1),
        turnIndex: z.number().int().nonnegative(),
        action: z.enum(['run', 'edit', 'stop']),
        /** Normalized [x1, y1, x2, y2] on the target image, for `edit` of a crop. */
        bbox: BoxSchema.optional(),
        /** The Python to run instead, for `edit` of a code call. */
        code: z.string().optional(),
        /** Keep pausing at later calls (default true). */
        keepStepping: z.boolean().default(true),
      })
      .strict(),
    res: z.object({ ok: z.boolean() }),
  },
  /** The trajectories of a finished demo run, one per branch. */
  'demo:get': {
    req: z.object({ runId: z.string().min(1) }).strict(),
    res: z.object({ runId: z.string(), branches: z.array(DemoBranchSchema.extend({ trajectory: TrajectorySchema })) }),
  },
  /** The Demo's scratch space: questions asked but not saved (out of the run list, stats and Annotate's queue). */
  'demo:scratch': { req: Empty, res: z.array(DemoScratchRunSchema) },
  /** Keep a Demo question: move it into `runs/` as a run (kind `demo`), under `name` or its own, made unique. */
  'demo:save': {
    req: z.object({ runId: z.string().min(1), name: z.string().trim().min(1).max(200).optional() }).strict(),
    res: z.object({ runId: z.string(), name: z.string() }),
  },
  /** Drop an unsaved Demo question for good. */
  'demo:discard': { req: z.object({ runId: z.string().min(1) }).strict(), res: z.object({ discarded: z.boolean() }) },
  /**
   * Where the model looked when it wrote a crop box (turn `turnIndex` of a branch): per-layer attention maps over the
   * call's target image, from a local ONNX model's analysis decoder; `unavailable` says why there are none (an
   * OpenAI-compatible server, a replay, a model folder without an analysis decoder, a turn without a crop).
   */
  'demo:attention': {
    req: z.object({ runId: z.string().min(1), branch: z.string().min(1).default('b0'), turnIndex: z.number().int().nonnegative() }).strict(),
    res: z.object({ maps: AttentionMapsSchema.optional(), unavailable: z.string().optional() }),
  },
  'demo:export': {
    req: z.object({ runId: z.string().min(1), branch: z.string().optional(), format: z.enum(['html', 'webp', 'gif']) }).strict(),
    res: ExportResultSchema,
  },
  /**
   * Side by side: two runs at once on the same input, each an ordinary Demo run (its own events, step mode and
   * `demo:continue`), linked by a pair id. A side that cannot run (its model is missing, or it repeats the other
   * side) ends with an error on its own run; the other goes on.
   */
  'demo:runPair': { req: DemoRunPairReqSchema, res: DemoPairSchema },
  /** A pair by id (either run's manifest names it). */
  'demo:pair': { req: z.object({ pairId: z.string().min(1) }).strict(), res: DemoPairSchema },
  /** Keep both runs of a pair (stopping a side still running): they move into `runs/`, named after the question and side. */
  'demo:savePair': { req: z.object({ pairId: z.string().min(1) }).strict(), res: DemoPairSchema },
  /** The pair as one self-contained HTML page: two columns, every image inlined. */
  'demo:exportPair': { req: z.object({ pairId: z.string().min(1) }).strict(), res: ExportResultSchema },
} as const;

export const demoEvents = {
  'demo:event': DemoEventSchema,
} as const;

/**
 * Served engines: OpenAI-compatible servers (vLLM, SGLang, `transformers serve`, `loupe serve-model`) that Loupe
 * starts for a model folder, here or as a Slurm job behind an SSH tunnel (app/engines/served). Once ready, the Demo
 * (engine kind `served`) and sweeps (model `served:<id>`) use one like any OpenAI-compatible engine; its key stays in
 * the core. Handlers: main/core/handlers/served.ts over the core's one ServedEngineLauncher.
 */
import { z } from 'zod';
import { Empty } from '../common';

export const SERVED_BACKEND_IDS = ['loupe', 'vllm', 'sglang', 'transformers'] as const;

/** One served engine as the status bar and the Models page show it. */
export const ServedEngineStateSchema = z.object({
  id: z.string(),
  backend: z.enum(SERVED_BACKEND_IDS),
  model: z.string(),
  where: z.enum(['local', 'slurm', 'in-app']),
  status: z.enum(['starting', 'ready', 'error', 'stopped']),
  /** The URL this machine reaches it at (the tunnel's end for Slurm). */
  baseURL: z.string().optional(),
  /** A sentence a user can act on. */
  message: z.string().optional(),
  jobId: z.string().optional(),
  node: z.string().optional(),
  pid: z.number().optional(),
  startedAt: z.number(),
});
export type ServedEngineStateWire = z.infer<typeof ServedEngineStateSchema>;

/** Where the server runs: this machine, or a job through a saved `slurm-ssh` connector (Training → Connectors). */
export const ServedWhereSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('local') }).strict(),
  z
    .object({
      kind: z.literal('slurm'),
      /** A saved connector's name. */
      connector: z.string().min(1, 'choose a Slurm connector').max(64),
      /** Working folder of the job on the cluster (absolute). */
      cwd: z.string().max(4096).optional(),
      cpus: z.number().int().min(1).max(1024).optional(),
      gpus: z.number().int().min(0).max(64).optional(),
      /** Wall time in minutes. */
      timeMinutes: z.number().int().min(1).max(60 * 24 * 30).optional(),
    })
    .strict(),
]);
export type ServedWhere = z.infer<typeof ServedWhereSchema>;

/**
 * What to serve. The values are checked again by the launcher's own schema (app/engines/served/commands.ts), whose
 * messages name the field (`modelDir: must be an absolute path`, pixel bounds that differ from the dialect's …).
 */
export const ServedStartSchema = z
  .object({
    backend: z.enum(SERVED_BACKEND_IDS),
    /** The model folder on the machine that runs the server. */
    modelDir: z.string().min(1, 'the model folder is required').max(4096),
    modelName: z.string().max(128).optional(),
    /** The dialect's resize mode, whose initial-image bounds are the server's MIN/MAX_PIXELS. */
    mode: z.enum(['eval', 'train']).default('eval'),
    minPixels: z.number().int().positive().optional(),
    maxPixels: z.number().int().positive().optional(),
    port: z.number().int().optional(),
    dtype: z.string().max(32).optional(),
    gpuMemory: z.number().optional(),
    imagesPerPrompt: z.number().int().optional(),
    host: z.enum(['127.0.0.1', '0.0.0.0']).optional(),
    /** loupe serve-model only. */
    device: z.enum(['cpu', 'cuda']).optional(),
    threads: z.number().int().optional(),
    /** The program that starts the server on the machine that runs it (argv words; default per backend). */
    launcher: z.array(z.string().min(1).max(4096)).min(1).max(8).optional(),
    where: ServedWhereSchema.default({ kind: 'local' }),
  })
  .strict();
export type ServedStartReq = z.input<typeof ServedStartSchema>;

export const servedCalls = {
  /** Validate and start; answers at once with state `starting` (follow `served:state`). */
  'served:start': { req: ServedStartSchema, res: ServedEngineStateSchema },
  /** Stop one (a Slurm job is cancelled, the tunnel closed) and forget it. */
  'served:stop': { req: z.object({ id: z.string().min(1).max(300) }).strict(), res: z.object({ stopped: z.boolean() }) },
  'served:list': { req: Empty, res: z.object({ engines: z.array(ServedEngineStateSchema) }) },
  /** The last lines of one engine's log (server output, or the job's output file). */
  'served:log': { req: z.object({ id: z.string().min(1).max(300), lines: z.number().int().min(1).max(2000).default(200) }).strict(), res: z.object({ lines: z.array(z.string()) }) },
  /** The MIN/MAX_PIXELS a dialect mode expects of a server (the form shows them). */
  'served:bounds': { req: z.object({ mode: z.enum(['eval', 'train']).default('eval') }).strict(), res: z.object({ minPixels: z.number(), maxPixels: z.number() }) },
} as const;

export const servedEvents = {
  'served:state': ServedEngineStateSchema,
  'served:log': z.object({ id: z.string(), line: z.string() }),
} as const;

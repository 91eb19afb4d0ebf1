/**
 * Evaluation sweeps started from the UI: the same runner and run files as `loupe eval`, with progress
 * streamed as events. Prompts are a list, so one sweep can run vcot and notool side by side.
 */
import { z } from 'zod';

export const SweepProgressSchema = z.object({
  runId: z.string(),
  name: z.string(),
  state: z.enum(['starting', 'running', 'done', 'cancelled', 'error']),
  done: z.number().int(),
  total: z.number().int(),
  correct: z.number().int(),
  samplesPerSec: z.number().nullable(),
  etaMs: z.number().nullable(),
  error: z.string().optional(),
  /** 'cluster': a "Run on cluster" sweep (cancel it with `sweeps:clusterCancel`); absent: run in the core. */
  where: z.enum(['local', 'cluster']).optional(),
});
export type SweepProgress = z.infer<typeof SweepProgressSchema>;

export const sweepsCalls = {
  'sweeps:start': {
    req: z
      .object({
        /** Local model folder, OpenAI-compatible URL, replay:<file>, or served:<id> (a served engine, `served:list`). */
        model: z.string().min(1),
        bench: z.string().min(1),
        data: z.string().min(1),
        prompts: z.array(z.enum(['vcot', 'notool'])).min(1).default(['vcot']),
        /** `pyvision` / `pyvision-rl`: the code tool (PV / PVRL), each sample in its own sandbox. */
        dialect: z.enum(['pixel-reasoner', 'verl-tool', 'deepeyes', 'pyvision', 'pyvision-rl']).default('pixel-reasoner'),
        limit: z.number().int().positive().optional(),
        /** Max new tokens per turn (default: the dialect's). */
        maxTokens: z.number().int().positive().max(32768).optional(),
        concurrency: z.number().int().positive().max(256).optional(),
        name: z.string().min(1).max(120).optional(),
      })
      .strict(),
    res: z.object({ runIds: z.array(z.string()) }),
  },
  /**
   * "Run on cluster": one run through a saved connector, one shard per task (`loupe eval --shard i/n` on the
   * cluster): a Slurm array job through slurm-ssh (files copied back as they grow), or one Ray job per shard through
   * a Ray connector (files read from the job's log when it ends; `remoteWorkspace` required). The shards are merged
   * into the one run `name`, followed again after a restart. Progress arrives as `sweeps:progress` with runId = name.
   */
  'sweeps:clusterStart': {
    req: z
      .object({
        connector: z.string().min(1, 'choose a cluster connector (slurm-ssh or Ray)').max(64),
        /** The run's name (also its id): 1-101 characters of A-Z a-z 0-9 . _ -. */
        name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/, 'run name: 1-101 characters of A-Z a-z 0-9 . _ - (not starting with . _ -)'),
        shards: z.number().int().min(1).max(1000),
        /** Model as `loupe eval --model` takes it on the cluster (a folder there, a URL, replay:<file>). */
        model: z.string().min(1).max(4096),
        bench: z.string().min(1).max(64),
        /** The benchmark data folder on the cluster. */
        data: z.string().min(1).max(4096),
        dialect: z.enum(['pixel-reasoner', 'verl-tool', 'deepeyes', 'pyvision', 'pyvision-rl']).default('pixel-reasoner'),
        prompt: z.enum(['vcot', 'notool']).default('vcot'),
        limit: z.number().int().positive().optional(),
        maxTokens: z.number().int().positive().max(32768).optional(),
        concurrency: z.number().int().positive().max(256).optional(),
        /** The `loupe` command on the cluster, as words (default `loupe`). */
        loupe: z.array(z.string().min(1).max(4096)).min(1).max(8).optional(),
        /** Absolute workspace folder on the cluster (default: `loupe-workspace` under the connector's job folder). */
        remoteWorkspace: z.string().max(4096).optional(),
        /** Working folder of the tasks on the cluster. */
        cwd: z.string().max(4096).optional(),
        cpus: z.number().int().min(1).max(1024).optional(),
      })
      .strict(),
    res: z.object({ runId: z.string() }),
  },
  'sweeps:clusterCancel': { req: z.object({ runId: z.string().min(1) }).strict(), res: z.object({ cancelled: z.boolean() }) },
  'sweeps:cancel': { req: z.object({ runId: z.string().min(1) }).strict(), res: z.object({ cancelled: z.boolean() }) },
  'sweeps:list': { req: z.object({}).strict(), res: z.array(SweepProgressSchema) },
} as const;

export const sweepsEvents = {
  'sweeps:progress': SweepProgressSchema,
} as const;

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
  'sweeps:cancel': { req: z.object({ runId: z.string().min(1) }).strict(), res: z.object({ cancelled: z.boolean() }) },
  'sweeps:list': { req: z.object({}).strict(), res: z.array(SweepProgressSchema) },
} as const;

export const sweepsEvents = {
  'sweeps:progress': SweepProgressSchema,
} as const;

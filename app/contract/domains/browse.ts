/**
 * Runs, sample tables and run statistics. The core holds the index; the renderer asks for windows of
 * compact rows and opens one full sample at a time, so 50 000-sample runs stay light in the page.
 */
import { z } from 'zod';
import { RunManifestSchema, SampleRecordSchema } from '../trajectory';
import { Empty } from '../common';

export const RunSummarySchema = z.object({
  id: z.string(),
  /** Null when the manifest could not be read; `error` says why. */
  manifest: RunManifestSchema.nullable(),
  error: z.string().optional(),
  samples: z.number().int().nonnegative(),
  correct: z.number().int().nonnegative(),
  /** Lines that could not be read (e.g. a torn last line after a crash). */
  unreadable: z.number().int().nonnegative(),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const SAMPLE_FIELDS = ['bench', 'category', 'correct', 'score', 'calls', 'stop', 'tool_errors', 'latency', 'label', 'qid', 'run'] as const;
export const SortKeySchema = z.object({ field: z.enum(SAMPLE_FIELDS), dir: z.enum(['asc', 'desc']).default('asc') });
export type SortKey = z.infer<typeof SortKeySchema>;

/** One table row: no trajectory. */
export const SampleRowSchema = z.object({
  id: z.number().int(),
  run: z.string(),
  qid: z.string(),
  bench: z.string(),
  category: z.string().optional(),
  question: z.string(),
  correct: z.boolean(),
  score: z.number(),
  /** Additive: every scorer's score of a re-scored sample, and whether the two disagree on `correct`. */
  scores: z.record(z.string(), z.number()).optional(),
  disagree: z.boolean().optional(),
  calls: z.number(),
  tool_errors: z.number(),
  stop: z.string(),
  latency: z.number().optional(),
  labels: z.array(z.string()),
});
export type SampleRow = z.infer<typeof SampleRowSchema>;

export const QueryProblemSchema = z.object({ message: z.string(), column: z.number().int().optional() });

const Num = z.number().nullable(); // NaN (no data) crosses as null
const IntervalSchema = z.object({ lo: Num, hi: Num });
export const GroupStatSchema = z.object({
  key: z.record(z.string(), z.string().nullable()),
  n: z.number().int(),
  correct: z.number().int(),
  accuracy: Num,
  /** The 95 % Wilson score interval of the accuracy: one method everywhere (Runs, Compare, `loupe report`), so the same k of n always shows the same interval. */
  ci: IntervalSchema,
  rapr: Num,
  callsPerSample: Num,
  toolErrorRate: Num,
});
export type GroupStat = z.infer<typeof GroupStatSchema>;

export const RunStatsSchema = z.object({
  overall: GroupStatSchema,
  byBench: z.array(GroupStatSchema),
  byCategory: z.array(GroupStatSchema),
  toolUse: z.object({
    n: z.number().int(),
    rapr: Num,
    callsPerSample: Num,
    toolErrorRate: Num,
    stopReasons: z.record(z.string(), z.number()),
    callHistogram: z.array(z.number()),
  }),
  withTool: z.object({ n: z.number().int(), accuracy: Num, ci: IntervalSchema }),
  withoutTool: z.object({ n: z.number().int(), accuracy: Num, ci: IntervalSchema }),
});
export type RunStats = z.infer<typeof RunStatsSchema>;

export const PairedSchema = z.object({
  shared: z.number().int(),
  onlyA: z.number().int(),
  onlyB: z.number().int(),
  aBetter: z.number().int(),
  bBetter: z.number().int(),
  ties: z.number().int(),
  accuracyA: Num,
  accuracyB: Num,
  delta: z.object({ value: Num, lo: Num, hi: Num }),
  p: Num,
  aBetterKeys: z.array(z.string()),
  bBetterKeys: z.array(z.string()),
  summary: z.string(),
  /** The A/B table per (bench, category) of the shared samples: Wilson intervals for A and B, Newcombe's paired one for Δ. */
  byCategory: z.array(
    z.object({
      bench: z.string(),
      category: z.string().nullable(),
      n: z.number().int(),
      accuracyA: Num,
      ciA: z.object({ lo: Num, hi: Num }),
      accuracyB: Num,
      ciB: z.object({ lo: Num, hi: Num }),
      delta: z.object({ value: Num, lo: Num, hi: Num }),
      aBetter: z.number().int(),
      bBetter: z.number().int(),
      p: Num,
    }),
  ),
});
export type Paired = z.infer<typeof PairedSchema>;

export const TaxonomyLabelSchema = z.object({ id: z.string(), name: z.string(), description: z.string(), key: z.string().optional(), archived: z.boolean().optional(), color: z.string().optional() });
export type TaxonomyLabel = z.infer<typeof TaxonomyLabelSchema>;

/** A current label on a sample (step null) or on one step of it. */
export const CurrentLabelSchema = z.object({ who: z.string(), label: z.string(), step: z.number().int().nullable(), note: z.string().optional(), at: z.string() });
export type CurrentLabelView = z.infer<typeof CurrentLabelSchema>;

export const AnnotatorSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'annotator names use letters, digits, ".", "_" and "-"');

export const AgreementSchema = z.object({
  annotators: z.array(z.string()),
  method: z.enum(['cohen', 'fleiss']),
  units: z.number().int(),
  partial: z.number().int(),
  primaryKappa: Num,
  meanPerLabelKappa: Num,
  perLabel: z.array(z.object({ label: z.string(), kappa: Num, positives: z.array(z.number()) })),
});
export type Agreement = z.infer<typeof AgreementSchema>;

export const SliceViewSchema = z.object({ name: z.string(), query: z.string(), updatedAt: z.string() });
export type SliceView = z.infer<typeof SliceViewSchema>;

/** A run in the trash (deleted, not yet emptied). */
export const TrashedRunSchema = z.object({ id: z.string(), manifest: RunManifestSchema.nullable(), error: z.string().optional() });
export type TrashedRun = z.infer<typeof TrashedRunSchema>;

export const LocateImagesResultSchema = z.object({
  /** Samples that got their images now. */
  attached: z.number().int().nonnegative(),
  /** Samples still without images (their names were not found in the folder). */
  missing: z.number().int().nonnegative(),
  /** Image files found under the folder. */
  folderImages: z.number().int().nonnegative(),
});
export type LocateImagesResult = z.infer<typeof LocateImagesResultSchema>;

const RunIdField = z.string().min(1);

export const browseCalls = {
  'slices:list': { req: Empty, res: z.array(SliceViewSchema) },
  'slices:save': { req: z.object({ name: z.string().trim().min(1).max(120), query: z.string().max(2000) }).strict(), res: z.array(SliceViewSchema) },
  'slices:delete': { req: z.object({ name: z.string().min(1) }).strict(), res: z.array(SliceViewSchema) },
  'runs:list': { req: Empty, res: z.array(RunSummarySchema) },
  /** Run hygiene: names are unique; delete moves to a trash the user empties. */
  'runs:rename': { req: z.object({ runId: RunIdField, name: z.string().trim().min(1).max(200) }).strict(), res: RunManifestSchema },
  'runs:tag': { req: z.object({ runId: RunIdField, tags: z.array(z.string().trim().min(1).max(60)).max(50) }).strict(), res: RunManifestSchema },
  'runs:trash': { req: z.object({ runId: RunIdField }).strict(), res: Empty },
  'runs:trashList': { req: Empty, res: z.array(TrashedRunSchema) },
  'runs:restore': { req: z.object({ runId: RunIdField }).strict(), res: Empty },
  'runs:emptyTrash': { req: Empty, res: z.object({ deleted: z.number().int().nonnegative() }) },
  /**
   * Import another tool's outputs (the Runs page's Import dialog; `loupe import` is the same service). A wrong
   * `from` is an error naming the format the files look like.
   */
  'runs:import': {
    req: z
      .object({
        from: z.enum(['pixel-reasoner', 'verl-tool', 'deepeyes', 'lmms-eval']),
        path: z.string().trim().min(1).max(4096),
        name: z.string().trim().min(1).max(200).optional(),
        images: z.string().trim().min(1).max(4096).optional(),
      })
      .strict(),
    res: z.object({ runId: z.string(), name: z.string(), summary: z.string(), samples: z.number().int(), issues: z.array(z.string()) }),
  },
  /** "Locate images…": attach originals from a folder (by the records' image names) to an imported run. */
  'runs:locateImages': { req: z.object({ runId: RunIdField, folder: z.string().trim().min(1).max(4096) }).strict(), res: LocateImagesResultSchema },
  'samples:query': {
    req: z
      .object({
        runIds: z.array(z.string().min(1)).min(1),
        query: z.string().max(2000).default(''),
        search: z.string().max(500).default(''),
        sort: z.array(SortKeySchema).max(5).default([]),
        offset: z.number().int().nonnegative().default(0),
        limit: z.number().int().positive().max(2000).default(200),
      })
      .strict(),
    res: z.object({ total: z.number().int(), rows: z.array(SampleRowSchema), problem: QueryProblemSchema.optional(), ms: z.number() }),
  },
  'samples:get': { req: z.object({ runId: z.string().min(1), qid: z.string().min(1) }).strict(), res: SampleRecordSchema },
  'runs:stats': { req: z.object({ runIds: z.array(z.string().min(1)).min(1), query: z.string().max(2000).default('') }).strict(), res: RunStatsSchema },
  'runs:compare': { req: z.object({ a: z.string().min(1), b: z.string().min(1) }).strict(), res: PairedSchema },
  /** Training data from runs (RL rows for verl, Pixel Reasoner, ms-swift; SFT traces), written to `exports/` in the workspace. */
  'runs:exportData': {
    req: z.object({ runIds: z.array(z.string().min(1)).min(1) }).strict(),
    res: z.object({ dir: z.string(), files: z.array(z.object({ name: z.string(), rows: z.number().int() })), skippedRl: z.number().int(), skippedSft: z.number().int() }),
  },
} as const;

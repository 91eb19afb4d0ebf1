/**
 * Labels domain: the failure taxonomy and its keys, label events per annotator (append-only, `labels/*.jsonl`),
 * progress through a queue of samples, exports and agreement. Handlers: main/core/handlers/labels.ts over
 * app/labels/service.ts.
 */
import { z } from 'zod';
import { Empty } from '../common';
import { AgreementSchema, AnnotatorSchema, CurrentLabelSchema, SortKeySchema, TaxonomyLabelSchema } from './browse';

export const labelsCalls = {
  'labels:config': {
    req: Empty,
    res: z.object({
      taxonomy: z.array(TaxonomyLabelSchema),
      /** action → chords, resolved for the core's platform (label actions are `label:<id>`). */
      keymap: z.record(z.string(), z.array(z.string())),
      /** Human text per action for the `?` sheet. */
      actions: z.record(z.string(), z.string()),
      annotators: z.array(z.string()),
      platform: z.enum(['mac', 'other']),
      problems: z.array(z.string()),
    }),
  },
  'labels:setTaxonomy': { req: z.object({ labels: z.array(TaxonomyLabelSchema).min(1) }).strict(), res: z.array(TaxonomyLabelSchema) },
  'labels:sample': { req: z.object({ runId: z.string().min(1), qid: z.string().min(1) }).strict(), res: z.array(CurrentLabelSchema) },
  'labels:apply': {
    req: z.object({ annotator: AnnotatorSchema, runId: z.string().min(1), qid: z.string().min(1), step: z.number().int().nonnegative().nullable().default(null), label: z.string().min(1), op: z.enum(['add', 'remove']), note: z.string().max(5000).optional() }).strict(),
    res: z.array(CurrentLabelSchema),
  },
  'labels:progress': {
    req: z
      .object({
        runIds: z.array(z.string().min(1)).min(1),
        query: z.string().default(''),
        annotator: AnnotatorSchema,
        /** The queue's order (the sample table's sort); query order when empty. */
        sort: z.array(SortKeySchema).max(5).default([]),
        /** Look for the next unlabelled sample from this position on, wrapping around to the start. */
        from: z.number().int().nonnegative().default(0),
      })
      .strict(),
    res: z.object({ total: z.number().int(), labelled: z.number().int(), next: z.object({ run: z.string(), qid: z.string(), position: z.number().int() }).nullable() }),
  },
  'labels:export': {
    req: z.object({ format: z.enum(['jsonl', 'csv']), kind: z.enum(['current', 'events']).default('current') }).strict(),
    res: z.object({ filename: z.string(), text: z.string(), rows: z.number().int() }),
  },
  'labels:agreement': { req: z.object({ annotators: z.array(AnnotatorSchema).optional() }).strict(), res: AgreementSchema },
} as const;

export const labelsEvents = {
  'labels:changed': z.object({ runId: z.string(), qid: z.string() }),
} as const;

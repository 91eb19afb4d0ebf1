/**
 * Label events: one JSON object per line in `labels/<annotator>.jsonl`, append-only.
 * The current labels are a fold over these events (see fold.ts); nothing is ever rewritten.
 */
import { z } from 'zod';

/** Annotator ids double as file names, so they are restricted to a safe set. */
export const ANNOTATOR_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function checkAnnotatorId(id: string): void {
  if (!ANNOTATOR_RE.test(id) || id.endsWith('.jsonl') || id.toLowerCase() === 'taxonomy') {
    throw new Error(
      `annotator id '${id}' is not allowed: use 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit (it becomes the file labels/<id>.jsonl)`,
    );
  }
}

export const LabelEventSchema = z.object({
  /** Format version of the line. */
  v: z.literal(1).default(1),
  /** Annotator id (matches the file name). */
  who: z.string().regex(ANNOTATOR_RE),
  /** ISO-8601 time the annotator made the change. */
  at: z.string().min(1),
  /** Run id (`runs/<run>/`). */
  run: z.string().min(1),
  /** Sample id within the run. */
  qid: z.string().min(1),
  /** Turn index when the label is about one step; absent/null for the whole sample. */
  step: z.number().int().nonnegative().nullable().optional(),
  /** Taxonomy label id. Unknown ids are kept (the taxonomy may have changed since). */
  label: z.string().min(1),
  op: z.enum(['add', 'remove']),
  /** Free text; on `add` it becomes the label's note, an `add` of a present label just updates the note. */
  note: z.string().optional(),
});
export type LabelEvent = z.infer<typeof LabelEventSchema>;
export type LabelEventInput = z.input<typeof LabelEventSchema>;

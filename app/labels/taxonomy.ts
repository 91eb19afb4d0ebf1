/**
 * The failure taxonomy: what can go wrong in a pixel-space reasoning episode.
 * Defaults ship with the app; a workspace may edit them in `labels/taxonomy.json`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { isNotFound, writeFileAtomic } from '../workspace/fsutil';
import { normalizeChord } from './keymap';

/** Label ids are stable identifiers used in label events and queries (`label = wrong_region`). */
export const LABEL_ID_RE = /^[a-z][a-z0-9_]{0,63}$/;
/** Words the query language gives a meaning to (`label = none`, `label = any`); not usable as ids. */
export const RESERVED_LABEL_IDS: readonly string[] = ['none', 'any', 'and', 'or', 'not', 'true', 'false'];

/** One failure category. */
export const FailureLabelSchema = z.object({
  /** Stable id, e.g. `wrong_region`; lower snake case. */
  id: z.string().regex(LABEL_ID_RE, 'label id must be lower snake case: a-z, 0-9, _ (starting with a letter)'),
  /** Short human name shown on buttons and badges. */
  name: z.string().min(1).max(80),
  /** What the label means, shown in the help sheet and the searchable picker. */
  description: z.string().max(2000).default(''),
  /** The default key that toggles the label in the annotate view (e.g. `1`); optional. */
  key: z.string().min(1).optional(),
  /** Hidden from pickers but kept so old events still have a name. */
  archived: z.boolean().optional(),
  /** Optional display colour (CSS colour). */
  color: z.string().optional(),
});
export type FailureLabel = z.infer<typeof FailureLabelSchema>;

export const TaxonomySchema = z.object({
  version: z.literal(1),
  labels: z.array(FailureLabelSchema),
});
export type Taxonomy = z.infer<typeof TaxonomySchema>;

/** The default taxonomy, ordered from "looked in the wrong place" to "the benchmark was wrong". */
export const DEFAULT_TAXONOMY: Taxonomy = {
  version: 1,
  labels: [
    {
      id: 'wrong_region',
      name: 'Wrong region',
      description: 'The model zoomed (cropped or selected frames) but the region does not contain the evidence needed to answer.',
      key: '1',
    },
    {
      id: 'right_region_misread',
      name: 'Right region, misread',
      description: 'The crop or frames contain the evidence, yet the model misread it (wrong colour, count, text or relation).',
      key: '2',
    },
    {
      id: 'no_zoom',
      name: 'No zoom when needed',
      description: 'The answer needed a closer look (small object, fine text, a specific frame) and the model answered without a visual operation.',
      key: '3',
    },
    {
      id: 'needless_zoom',
      name: 'Needless zoom',
      description: 'The model called a visual operation the question did not need, and it cost budget or led it astray.',
      key: '4',
    },
    {
      id: 'tool_format_error',
      name: 'Tool-format error',
      description: 'The tool call could not be parsed or executed: bad JSON, wrong tool name, invalid or degenerate box, out-of-range frame.',
      key: '5',
    },
    {
      id: 'reasoning_error',
      name: 'Reasoning error',
      description: 'The model saw the right evidence and read it correctly, but the reasoning from it to the answer is wrong.',
      key: '6',
    },
    {
      id: 'grader_error',
      name: 'Grader or extraction error',
      description: 'The answer is right (or wrong) but the scorer or answer extraction judged it otherwise.',
      key: '7',
    },
    {
      id: 'ambiguous_question',
      name: 'Ambiguous question',
      description: 'The question, options or ground truth are ambiguous or wrong, so no answer can be judged fairly.',
      key: '8',
    },
  ],
};

/** A problem found in a taxonomy; `path` names the field (`labels[2].id`). */
export interface TaxonomyIssue {
  path: string;
  message: string;
}

/** Semantic checks beyond the schema: unique ids, unique keys, reserved words, valid keys. */
export function validateTaxonomy(t: Taxonomy): TaxonomyIssue[] {
  const issues: TaxonomyIssue[] = [];
  const ids = new Map<string, number>();
  const keys = new Map<string, number>();
  t.labels.forEach((l, i) => {
    const prev = ids.get(l.id);
    if (prev !== undefined) issues.push({ path: `labels[${i}].id`, message: `duplicate label id '${l.id}' (also labels[${prev}])` });
    else ids.set(l.id, i);
    if (RESERVED_LABEL_IDS.includes(l.id)) issues.push({ path: `labels[${i}].id`, message: `'${l.id}' is reserved by the query language; choose another id` });
    if (l.key !== undefined && !l.archived) {
      let chord: string | undefined;
      try {
        chord = normalizeChord(l.key);
      } catch (err) {
        issues.push({ path: `labels[${i}].key`, message: (err as Error).message });
      }
      if (chord !== undefined) {
        const other = keys.get(chord);
        if (other !== undefined) issues.push({ path: `labels[${i}].key`, message: `key '${l.key}' is already used by '${t.labels[other]?.id}'` });
        else keys.set(chord, i);
      }
    }
  });
  return issues;
}

/** Raised when `labels/taxonomy.json` is unreadable or invalid; names the file and each field. */
export class TaxonomyError extends Error {
  constructor(
    readonly file: string,
    readonly issues: TaxonomyIssue[],
  ) {
    super(`${file}: invalid taxonomy:\n${issues.map((i) => `  - ${i.path || '(root)'}: ${i.message}`).join('\n')}\nFix the file or delete it to go back to the defaults.`);
    this.name = 'TaxonomyError';
  }
}

/** Parse and check taxonomy JSON text; throws TaxonomyError naming `file`. */
export function parseTaxonomy(text: string, file = 'taxonomy.json'): Taxonomy {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new TaxonomyError(file, [{ path: '', message: `not valid JSON: ${(err as Error).message}` }]);
  }
  const parsed = TaxonomySchema.safeParse(raw);
  if (!parsed.success) {
    throw new TaxonomyError(
      file,
      parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })),
    );
  }
  const issues = validateTaxonomy(parsed.data);
  if (issues.length) throw new TaxonomyError(file, issues);
  return parsed.data;
}

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

/** `<workspace>/labels/taxonomy.json`. */
export function taxonomyPath(workspaceDir: string): string {
  return join(workspaceDir, 'labels', 'taxonomy.json');
}

/** The workspace taxonomy, or a copy of the defaults when the file does not exist. */
export async function loadTaxonomy(workspaceDir: string): Promise<Taxonomy> {
  const file = taxonomyPath(workspaceDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (isNotFound(err)) return structuredClone(DEFAULT_TAXONOMY);
    throw err;
  }
  return parseTaxonomy(text, file);
}

/** Validate and write the workspace taxonomy atomically. */
export async function saveTaxonomy(workspaceDir: string, taxonomy: Taxonomy): Promise<void> {
  const file = taxonomyPath(workspaceDir);
  const checked = parseTaxonomy(JSON.stringify(taxonomy), file);
  await writeFileAtomic(file, JSON.stringify(checked, null, 2) + '\n');
}

/**
 * Add a label while working (Label Studio #5403: "add labels while working"). The id is derived from the
 * name when not given; throws when it clashes.
 */
export function addLabel(t: Taxonomy, label: { name: string; description?: string; id?: string; key?: string }): Taxonomy {
  const id = label.id ?? slugLabelId(label.name);
  const next: Taxonomy = {
    version: 1,
    labels: [...t.labels, { id, name: label.name, description: label.description ?? '', ...(label.key ? { key: label.key } : {}) }],
  };
  const issues = validateTaxonomy(next);
  const schema = TaxonomySchema.safeParse(next);
  if (!schema.success) throw new TaxonomyError('(new label)', schema.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })));
  if (issues.length) throw new TaxonomyError('(new label)', issues);
  return next;
}

/** `"Right region, misread"` → `right_region_misread`. */
export function slugLabelId(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  return /^[a-z]/.test(s) ? s : `l_${s}`.slice(0, 64);
}

/** Case-insensitive search over id, name and description, for the picker of big taxonomies. */
export function searchLabels(t: Taxonomy, text: string, opts: { includeArchived?: boolean } = {}): FailureLabel[] {
  const q = text.trim().toLowerCase();
  const pool = t.labels.filter((l) => opts.includeArchived || !l.archived);
  if (!q) return pool;
  const score = (l: FailureLabel): number => {
    const name = l.name.toLowerCase();
    if (l.id === q || name === q) return 0;
    if (name.startsWith(q) || l.id.startsWith(q)) return 1;
    if (name.includes(q) || l.id.includes(q)) return 2;
    if (l.description.toLowerCase().includes(q)) return 3;
    return -1;
  };
  return pool
    .map((l, i) => ({ l, i, s: score(l) }))
    .filter((x) => x.s >= 0)
    .sort((a, b) => a.s - b.s || a.i - b.i)
    .map((x) => x.l);
}

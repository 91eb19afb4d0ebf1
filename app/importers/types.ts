/**
 * Importers turn other tools' eval/rollout outputs into Loupe runs (`manifest.json` + SampleRecords).
 * An importer only reads; it returns `{manifest, samples, media, issues}` and a `RunWriter` stores it.
 */
import type { MediaRef, SampleRecord } from '../contract/trajectory';
import type { NewRunManifest } from '../workspace/runStore';

export const IMPORT_FORMATS = ['pixel-reasoner', 'verl-tool', 'deepeyes', 'lmms-eval', 'pyvision'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** A problem with one input record (or file). Records with an `error` issue are skipped; nothing else is lost. */
export interface ImportIssue {
  severity: 'error' | 'warning';
  /** Path as given on the command line, or relative to the import root. */
  file: string;
  /** 1-based line for JSONL files, or the record index (1-based) for JSON arrays. */
  line?: number;
  /** Dotted field path inside the record, when the problem is one field. */
  field?: string;
  message: string;
}

/** `file:line: field: message` — what the CLI prints. */
export function formatIssue(i: ImportIssue): string {
  const where = i.line !== undefined ? `${i.file}:${i.line}` : i.file;
  return `${i.severity === 'error' ? 'error' : 'warning'}: ${where}: ${i.field ? `${i.field}: ` : ''}${i.message}`;
}

/** A media file the importer found (a crop dump, an image) and referenced from a record. */
export interface ImportedMedia {
  ref: MediaRef;
  /** Absolute path of the bytes to store under `media/<ref.id>`. */
  path: string;
}

export interface ImportStats {
  files: number;
  /** Input records seen (lines/array items that were not blank). */
  records: number;
  imported: number;
  skipped: number;
}

export interface ImportedRun {
  manifest: NewRunManifest;
  samples: SampleRecord[];
  media: ImportedMedia[];
  issues: ImportIssue[];
  stats: ImportStats;
}

export interface ImportOptions {
  /** Run name (becomes part of the run id). */
  name?: string;
  /** Model id to record when the source does not say. */
  model?: string;
  /** Pixel Reasoner: which eval iteration (`eval_iter{N}`); default the highest found. */
  iter?: number;
}

/** Where imported runs go. `workspaceWriter` (writer.ts) stores them through the workspace's RunStore. */
export interface RunWriter {
  write(run: ImportedRun): Promise<{ runId: string; dir: string }>;
}

/** Thrown when the input as a whole cannot be imported (missing path, no recognisable files). */
export class ImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportError';
  }
}

/**
 * Benchmark samples as the core sees them, whatever file format they came from.
 * An adapter turns a benchmark's published files into `BenchSample`s; the sweep runner feeds
 * `question` + `media` to the agent and scores the final text with `getScorer(sample.scorer)`.
 */

/** Media of one sample; every path is absolute. */
export interface BenchMedia {
  /** Image files, in the order the model sees them. */
  images?: string[];
  /** A video file. */
  video?: string;
  /** Pre-extracted frames of the video (or of a frame-folder task), in time order. */
  frames?: string[];
}

/** One benchmark question. */
export interface BenchSample {
  /**
   * Unique within a run. The built-in adapters write `<bench>-<id>` so that `qid.split('-')[0]` is the
   * benchmark (the Pixel Reasoner evaluator's rule); Loupe-format folders keep the qids they were given
   * (loupe-synth: `synth-<seed>-<n>`), so use `bench`, not the qid, to group.
   */
  qid: string;
  /** Benchmark id, e.g. `vstar`, `tallyqa`, `infovqa`, `mvbench`, `vsibench`, `hrbench4k`, `loupe-synth`. */
  bench: string;
  /** Sub-task used for per-category accuracy (V* `direct_attributes`, VSI `question_type`, TallyQA `simple`…). */
  category?: string;
  /** The question text as the benchmark states it (options not included). */
  question: string;
  /** Option texts in the order shown to the model (letters A, B, … by position). */
  options?: string[];
  /** Gold answer in the form the scorer expects (letter, string, list of strings, number). */
  answer: unknown;
  media: BenchMedia;
  isVideo: boolean;
  /** Name of the scorer (see `app/bench/scorers`) that scores this sample. */
  scorer: string;
  /** Benchmark-specific fields kept for analysis (bbox, issimple, cycle_category, option permutation…). */
  extra?: Record<string, unknown>;
}

/** Options shared by all adapters. */
export interface LoadOptions {
  /** Keep only the first `limit` samples (after filtering). */
  limit?: number;
  /** Seed for option shuffling where the source has a fixed correct position (V* raw JSON). Default 0. */
  seed?: number;
  /** Where decoded embedded images (base64 TSV cells, parquet bytes) are written. Default `<dataDir>/.loupe-media`. */
  mediaCacheDir?: string;
  /** Do not check that media files exist (for listing a benchmark without its media). */
  skipMediaCheck?: boolean;
  /** Adapter-specific choices, e.g. TallyQA `subset: 'simple'|'complex'`, VSI `mra: 'tis'|'lmmsEval'`. */
  [key: string]: unknown;
}

/** What an adapter reports about the data it loaded (goes into the run manifest's `bench`). */
export interface LoadInfo {
  /** The file(s) read, relative to dataDir. */
  files: string[];
  /** The format recognised, e.g. `vstar.test_questions.jsonl`. */
  format: string;
  /** How option order was decided, e.g. `official`, `seeded-shuffle:0`. */
  optionOrder?: string;
}

export interface LoadResult {
  samples: BenchSample[];
  info: LoadInfo;
}

/** One benchmark's loader. */
export interface BenchmarkAdapter {
  /** Registry id (`getAdapter(id)`). */
  readonly id: string;
  readonly title: string;
  /** The file layouts this adapter recognises, for error messages and docs. */
  readonly formats: readonly string[];
  /** Load every sample under `dataDir`. Rejects with a {@link BenchDataError} naming file, record and field. */
  load(dataDir: string, opts?: LoadOptions): Promise<LoadResult>;
}

/** Bad or missing benchmark data: says which file, which record (line/row) and which field. */
export class BenchDataError extends Error {
  readonly file: string;
  readonly record?: string;
  readonly field?: string;
  constructor(opts: { file: string; record?: string; field?: string; problem: string }) {
    const where = [opts.file, opts.record, opts.field ? `field '${opts.field}'` : undefined].filter(Boolean).join(', ');
    super(`${where}: ${opts.problem}`);
    this.name = 'BenchDataError';
    this.file = opts.file;
    this.record = opts.record;
    this.field = opts.field;
  }
}

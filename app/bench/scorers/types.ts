/**
 * The uniform scorer API. Every scorer reproduces one reference evaluator exactly and carries a
 * `name` and a `version`; both go into a run's manifest (`scorers: {name: version}`), so a number can
 * always be traced to the rule that produced it. Bump `version` whenever the scoring rule changes.
 */

/** What a scorer needs from a benchmark sample. */
export interface ScorableSample {
  /** Gold answer: a letter, a string, a list of accepted strings, or a number. */
  answer: unknown;
  /** Multiple-choice option texts (letter order A, B, ...), when the benchmark has options. */
  options?: string[];
  /** Benchmark-specific extras (e.g. VSI-Bench `question_type`). */
  extra?: Record<string, unknown>;
}

/** The result of scoring one prediction. */
export interface ScoreResult {
  /** The metric value for this sample (accuracy 0/1, ANLS in [0,1], MRA in {0, 0.1, ..., 1}). */
  score: number;
  /** Whether the sample counts as correct (for ANLS/MRA: score >= 0.5). */
  correct: boolean;
  /** What the scorer read from the prediction (letter, count, number, string), or null. */
  extracted: unknown;
  /** Extra per-sample detail (e.g. per-reference ANLS values); JSON-safe. */
  detail?: Record<string, unknown>;
}

/** One versioned scoring rule. */
export interface Scorer {
  /** Stable id, e.g. `anls`, `mra.lmmsEval`, `mc.vstar`. */
  readonly name: string;
  /** Version string recorded in run manifests, e.g. `lmms-eval@75571cfe/1`. */
  readonly version: string;
  /** One-line description of the rule and its reference source. */
  readonly description: string;
  score(prediction: string, sample: ScorableSample): ScoreResult;
}

/** `{type, message}` of a Python exception, as the golden vectors write it. */
export interface PyErrorInfo {
  type: string;
  message: string;
}

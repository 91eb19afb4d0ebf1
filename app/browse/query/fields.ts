/**
 * The fields the sample query language knows, their types and aliases.
 */
import { StopReasonSchema } from '../../contract/trajectory';

export type FieldType = 'string' | 'number' | 'bool' | 'enum' | 'labels';

/** Canonical field names. */
export type QueryField = 'bench' | 'category' | 'correct' | 'disagree' | 'score' | 'calls' | 'stop' | 'tool_errors' | 'latency' | 'label' | 'qid' | 'run';
export type StringField = 'bench' | 'category' | 'stop' | 'qid' | 'run';
export type NumberField = 'score' | 'calls' | 'tool_errors' | 'latency';

export interface FieldSpec {
  type: FieldType;
  /** Shown in help and errors. */
  description: string;
  /** For enums: allowed values. */
  values?: readonly string[];
}

export const STOP_REASONS: readonly string[] = StopReasonSchema.options;

export const FIELDS: Readonly<Record<QueryField, FieldSpec>> = {
  bench: { type: 'string', description: 'benchmark id, e.g. vstar' },
  category: { type: 'string', description: 'benchmark category' },
  correct: { type: 'bool', description: 'true when the sample was scored correct' },
  disagree: { type: 'bool', description: 'true when a re-scored sample is correct under one scorer and not the other (loupe rescore)' },
  score: { type: 'number', description: 'the sample score (0–1)' },
  calls: { type: 'number', description: 'number of tool calls (zoom/frames)' },
  stop: { type: 'enum', description: 'why the episode ended', values: STOP_REASONS },
  tool_errors: { type: 'number', description: 'number of failed tool calls' },
  latency: { type: 'number', description: 'sample latency in milliseconds' },
  label: { type: 'labels', description: 'failure labels (any annotator); `none`/`any` test for absence/presence; a number compares the count' },
  qid: { type: 'string', description: 'sample id' },
  run: { type: 'string', description: 'run id' },
};

/** Other spellings users type. */
export const FIELD_ALIASES: Readonly<Record<string, QueryField>> = {
  labels: 'label',
  stop_reason: 'stop',
  latency_ms: 'latency',
  tool_error: 'tool_errors',
  errors: 'tool_errors',
  benchmark: 'bench',
  cat: 'category',
  id: 'qid',
  zooms: 'calls',
};

export function resolveField(name: string): QueryField | undefined {
  const n = name.toLowerCase();
  if (n in FIELDS) return n as QueryField;
  return FIELD_ALIASES[n];
}

/** Nearest known field name by edit distance, for "did you mean". */
export function suggestField(name: string): string | undefined {
  const all = [...Object.keys(FIELDS), ...Object.keys(FIELD_ALIASES)];
  let best: string | undefined;
  let bestD = Infinity;
  for (const f of all) {
    const d = editDistance(name.toLowerCase(), f);
    if (d < bestD) {
      best = f;
      bestD = d;
    }
  }
  return bestD <= Math.max(1, Math.floor(name.length / 3)) ? best : undefined;
}

export function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]!;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]!;
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}

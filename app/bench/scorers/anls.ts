/**
 * ANLS with τ = 0.5 and the **raw-length** denominator (lmms-eval `api/metrics.py:anls`, identical to
 * VLMEvalKit `vqa_eval.py:anls_compute/hit_calculate`):
 *   NL(g, p) = Lev(n(g), n(p)) / max(len(g.upper()), len(p.upper())), 0.0 when that length is 0,
 *   n = ' '.join(x.strip().lower().split());  s = 1 - min NL; s = 0 when s < 0.5.
 * The denominator uses the un-normalised strings (upper-cased, so 'ß' counts two): a quirk kept for parity.
 */
import { levenshtein, pyLen, pyLower, pySplit, pyStrip, pyUpper } from '../../pycompat/str';
import type { ScorableSample, ScoreResult, Scorer } from './types';

export const ANLS_THRESHOLD = 0.5;

function normalize(s: string): string {
  return pySplit(pyLower(pyStrip(s))).join(' ');
}

/** Normalised Levenshtein distance of one reference and the prediction. */
export function anlsValue(reference: string, prediction: string): number {
  const dist = levenshtein(normalize(reference), normalize(prediction));
  const length = Math.max(pyLen(pyUpper(reference)), pyLen(pyUpper(prediction)));
  return length === 0 ? 0.0 : dist / length;
}

/** Per-reference NL values and the question's ANLS. */
export function anlsCompute(references: string[], prediction: string, threshold = ANLS_THRESHOLD): { values: number[]; anls: number } {
  if (references.length === 0) throw new Error('anls: the sample has no reference answers (min() of an empty list)');
  const values = references.map((r) => anlsValue(r, prediction));
  let result = 1 - Math.min(...values);
  if (result < threshold) result = 0;
  return { values, anls: result };
}

function referencesOf(answer: unknown): string[] {
  if (Array.isArray(answer)) return answer.map((a) => String(a));
  return [String(answer)];
}

export const anlsScorer: Scorer = {
  name: 'anls',
  version: 'lmms-eval@75571cfe:anls/tau0.5/raw-len/1',
  description: 'ANLS, τ=0.5, raw-length denominator (lmms-eval metrics.anls = VLMEvalKit anls_compute)',
  score(prediction: string, sample: ScorableSample): ScoreResult {
    const { values, anls } = anlsCompute(referencesOf(sample.answer), prediction);
    return { score: anls, correct: anls >= 0.5, extracted: prediction, detail: { values } };
  },
};

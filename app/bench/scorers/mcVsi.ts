/**
 * VSI-Bench multiple-choice (MCA) scoring, thinking-in-space@51e089c `vsibench/utils.py`
 * (= lmms-eval@75571cfe): token = `pred.split(' ')[0].rstrip('.').strip()`; score 1.0 iff
 * `token.lower() == ground_truth.lower()`. Only ' ' splits: a leading space gives an empty token, and
 * "A.\n" keeps its dot because `rstrip('.')` sees the newline first.
 */
import { pyLower } from '../../pycompat/str';
import { vsiFuzzyMatching } from './mra';
import type { ScorableSample, ScoreResult, Scorer } from './types';

export function mcVsiCompute(prediction: string, groundTruth: string): { token: string; score: number } {
  const token = vsiFuzzyMatching(prediction);
  return { token, score: pyLower(token) === pyLower(groundTruth) ? 1.0 : 0.0 };
}

export const mcVsiScorer: Scorer = {
  name: 'mc.vsi',
  version: 'thinking-in-space@51e089c:vsibench.fuzzy_matching.exact_match/1',
  description: "VSI-Bench MCA: first ' ' token, rstrip('.'), strip(), case-insensitive equality",
  score(prediction: string, sample: ScorableSample): ScoreResult {
    const { token, score } = mcVsiCompute(prediction, String(sample.answer));
    return { score, correct: score === 1, extracted: token };
  },
};

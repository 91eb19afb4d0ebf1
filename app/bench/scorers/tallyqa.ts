/**
 * TallyQA count scoring (VLMEvalKit@e8e78f05 `dataset/utils/tallyqa.py` + `image_vqa.py:TallyQA.evaluate`).
 * Extraction: a number prediction passes if 0 <= x <= 20 (`int()` truncates; NaN → None); a string is
 * lower-cased and the first `\b`-bounded match of `[0-9]|1[0-9]|20` or of the words zero…twenty wins
 * (Python `\b`: Unicode word characters, so `_3` or `3個` do not match). Correct iff it equals `int(answer)`.
 */
import { PY_WORD_BOUNDARY, pyLower } from '../../pycompat/str';
import type { ScorableSample, ScoreResult, Scorer } from './types';

const WORDS = [
  'zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve',
  'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty',
];
const B = PY_WORD_BOUNDARY;
const COMBINED = new RegExp(`(${B}([0-9]|1[0-9]|20)${B}|${B}(${WORDS.join('|')})${B})`, 'u');

/** `text_to_int` / `extract_count_from_prediction`: a count 0..20 or null. */
export function extractCount(prediction: unknown): number | null {
  if (typeof prediction === 'boolean') prediction = prediction ? 1 : 0;
  if (typeof prediction === 'number') {
    if (Number.isNaN(prediction)) return null;
    return prediction >= 0 && prediction <= 20 ? Math.trunc(prediction) + 0 : null;
  }
  if (prediction === null || prediction === undefined) prediction = 'None';
  const text = pyLower(String(prediction));
  const m = COMBINED.exec(text);
  if (!m) return null;
  const found = m[0];
  if (/^[0-9]+$/.test(found)) return Number(found);
  const i = WORDS.indexOf(found);
  return i >= 0 ? i : null;
}

/** Extraction and exact match, shaped like the golden vectors. */
export function tallyqaCompute(prediction: unknown, answer: number): { extracted: number | null; correct: boolean } {
  const extracted = extractCount(prediction);
  return { extracted, correct: extracted !== null && extracted === Math.trunc(answer) };
}

export const tallyqaScorer: Scorer = {
  name: 'tallyqa.count',
  version: 'VLMEvalKit@e8e78f05:tallyqa.text_to_int/1',
  description: 'first \\b-bounded 0–20 digit or number word; exact match with int(answer) (VLMEvalKit TallyQA)',
  score(prediction: string, sample: ScorableSample): ScoreResult {
    const answer = typeof sample.answer === 'number' ? sample.answer : Number.parseInt(String(sample.answer), 10);
    const { extracted, correct } = tallyqaCompute(prediction, answer);
    return { score: correct ? 1 : 0, correct, extracted };
  },
};

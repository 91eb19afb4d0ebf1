/**
 * V* multiple-choice letter extraction, lmms-eval@75571cfe `tasks/vstar_bench/utils.py:extract_answer_letter`.
 * The reply is `strip()`ped and `upper()`ed (Python, full Unicode), then the first hit of:
 *   1. `^([A-D])\s*[\.)\]]*`          — starts with a letter ("ANSWER: B" starts with A: a reference quirk)
 *   2. `(?:THE\s+)?(?:ANSWER|CHOICE|OPTION)(?:\s+IS)?[\s:]+([A-D])`
 *   3. `\(([A-D])\)`   4. `([A-D])\s*(?:\.|\)|])`   5. `(?:^|\s)([A-D])(?:\s|$)`
 * then "exactly one A–D character anywhere", then "first character is A–D"; else null.
 * Score 1.0 iff the letter equals `label.strip().upper()`.
 *
 * Python-regex details reproduced: `\s` is Python's whitespace set, `re.IGNORECASE` on an upper-cased
 * text only adds 'İ' (simple lower-case 'i') as a match for 'I', and `$` also matches before a final '\n'.
 */
import { PY_WS, pyStrip, pyUpper } from '../../pycompat/str';
import type { ScorableSample, ScoreResult, Scorer } from './types';

const WS = PY_WS;
const WS_INNER = PY_WS.slice(1, -1);
const I = '[Iİ]';
const END = '(?=\\n?$)';
const PATTERNS: RegExp[] = [
  new RegExp(`^([A-D])${WS}*[.)\\]]*`, 'u'),
  new RegExp(`(?:THE${WS}+)?(?:ANSWER|CHO${I}CE|OPT${I}ON)(?:${WS}+${I}S)?[${WS_INNER}:]+([A-D])`, 'u'),
  new RegExp(`\\(([A-D])\\)`, 'u'),
  new RegExp(`([A-D])${WS}*(?:\\.|\\)|\\])`, 'u'),
  new RegExp(`(?:^|${WS})([A-D])(?:${WS}|${END})`, 'u'),
];

/** `extract_answer_letter(response)`: 'A'..'D' or null. */
export function extractVstarLetter(response: string): string | null {
  const text = pyUpper(pyStrip(response));
  for (const re of PATTERNS) {
    const m = re.exec(text);
    if (m) return pyUpper(m[1]!);
  }
  const letters = text.match(/[A-D]/gu) ?? [];
  if (letters.length === 1) return letters[0]!;
  const first = Array.from(text)[0];
  if (first !== undefined && 'ABCD'.includes(first)) return first;
  return null;
}

/** Letter and score, shaped like the golden vectors. */
export function mcVstarCompute(response: string, label: string): { letter: string | null; score: number } {
  const letter = extractVstarLetter(response);
  const gt = pyUpper(pyStrip(label));
  return { letter, score: letter === gt ? 1.0 : 0.0 };
}

function labelOf(sample: ScorableSample): string {
  return String(sample.answer);
}

export const mcVstarScorer: Scorer = {
  name: 'mc.vstar',
  version: 'lmms-eval@75571cfe:vstar_bench.extract_answer_letter/1',
  description: 'lmms-eval V* letter cascade on the upper-cased reply; exact letter match',
  score(prediction: string, sample: ScorableSample): ScoreResult {
    const { letter, score } = mcVstarCompute(prediction, labelOf(sample));
    return { score, correct: score === 1, extracted: letter };
  },
};

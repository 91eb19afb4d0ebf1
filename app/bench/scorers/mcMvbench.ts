/**
 * MVBench multiple-choice scoring, lmms-eval@75571cfe `tasks/mvbench/utils.py:mcq_acc`.
 * `process(x)`: if `x.strip()` matches `^([A-E])\.\s*(.+)$` (case-insensitive, one line) → that letter;
 * else newline/tab → space, strip, VQA-style punctuation handling, strip quotes/parens, lower, and the first
 * `\b[A-E]\b` → that letter, else the processed text. Score 1 iff process(pred) == process(gold letter).
 * Reference quirks kept: the period regex `(?!<=\d)(\.)(?!\d)` is a mistyped look-behind (it removes any
 * '.' not followed by a digit), and `re.UNICODE` lands in `sub`'s `count` slot, so at most 32 are removed.
 * Aggregation (not here): empty predictions are excluded from the denominator.
 */
import { PY_WORD_BOUNDARY, PY_WS, pyLower, pyStrip, pyUpper } from '../../pycompat/str';
import type { ScorableSample, ScoreResult, Scorer } from './types';

const PUNCT = [';', '/', '[', ']', '"', '{', '}', '(', ')', '=', '+', '\\', '_', '-', '>', '<', '@', '`', ',', '?', '!'];
const COMMA_STRIP = /(\p{Nd})(,)(\p{Nd})/u;
const PERIOD_STRIP = /(?!<=\p{Nd})(\.)(?!\p{Nd})/gu;
const OPTION_RE = new RegExp(`^([A-Ea-e])\\.${PY_WS}*([^\\n]+)(?=\\n?$)`, 'u');
const LETTER_RE = new RegExp(`${PY_WORD_BOUNDARY}([A-Ea-e])${PY_WORD_BOUNDARY}`, 'u');

function processPunctuation(inText: string): string {
  let out = inText;
  const hasCommaNumber = COMMA_STRIP.test(inText);
  for (const p of PUNCT) {
    if (inText.includes(p + ' ') || inText.includes(' ' + p) || hasCommaNumber) out = out.replaceAll(p, '');
    else out = out.replaceAll(p, ' ');
  }
  let n = 0;
  out = out.replace(PERIOD_STRIP, (m) => (n++ < 32 ? '' : m));
  return out;
}

/** `mcq_acc`'s `process(answer)`. */
export function mvbenchProcess(answer: string): string {
  const m = OPTION_RE.exec(pyStrip(answer));
  if (m) return pyUpper(m[1]!);
  let a = answer.replaceAll('\n', ' ').replaceAll('\t', ' ');
  a = pyStrip(a);
  a = processPunctuation(a);
  a = pyStrip(a, "'");
  a = pyStrip(a, '"');
  a = pyStrip(a, ')');
  a = pyStrip(a, '(');
  a = pyLower(pyStrip(a));
  const lm = LETTER_RE.exec(a);
  if (lm) return pyUpper(lm[1]!);
  return a;
}

export function mcMvbenchCompute(prediction: string, goldLetter: string): { extracted: string; score: number } {
  const extracted = mvbenchProcess(prediction);
  return { extracted, score: extracted === mvbenchProcess(goldLetter) ? 1 : 0 };
}

export const mcMvbenchScorer: Scorer = {
  name: 'mc.mvbench',
  version: 'lmms-eval@75571cfe:mvbench.mcq_acc/1',
  description: 'lmms-eval MVBench mcq_acc: "X." prefix, else punctuation-stripped first standalone A–E',
  score(prediction: string, sample: ScorableSample): ScoreResult {
    const { extracted, score } = mcMvbenchCompute(prediction, String(sample.answer));
    return { score, correct: score === 1, extracted };
  },
};

/**
 * VSI-Bench Mean Relative Accuracy (numerical-answer questions).
 *
 * MRA = (1/10) Σ_θ 1[ |ŷ − y| / y <= 1 − θ ],  θ = np.linspace(.5, .95, 10).
 * - The denominator is `y`, not `|y|` (a negative ground truth passes every threshold): kept for parity.
 * - `1 − θ` is taken from numpy's doubles, so relative error 0.2 passes 6 thresholds, not 7.
 * - A `None` operand (failed parse) scores 0.0 (the reference catches the TypeError).
 * - y = 0 raises ZeroDivisionError in both references; here that is reported as `error`.
 *
 * Two extraction variants:
 * - `tis` — thinking-in-space@51e089c (original): `float(pred.split(' ')[0].rstrip('.').strip())`.
 * - `lmmsEval` — lmms-eval@75571cfe `extract_number`: the first number token, digits or English number
 *   words (with "hundred"/"thousand" composition), whichever starts first.
 */
import { pyFloat, tryPyFloat } from '../../pycompat/float';
import { PY_DIGIT, pyLower, pyRstrip, pySplit, pyStrip } from '../../pycompat/str';
import type { PyErrorInfo, ScorableSample, ScoreResult, Scorer } from './types';

/** `1 - np.linspace(.5, .95, 10)`, exactly as numpy 1.24 computes them in doubles. */
export const MRA_BOUNDS: readonly number[] = [
  0.5, 0.44999999999999996, 0.4, 0.35, 0.30000000000000004, 0.25, 0.19999999999999996, 0.15000000000000002,
  0.10000000000000009, 0.050000000000000044,
];

/** One extraction variant's outcome. */
export interface MraVariantResult {
  predFloat: number | null;
  relError: number | null;
  /** Absent when the reference raised (ground truth 0). */
  mra?: number;
  error?: PyErrorInfo;
}

/** `fuzzy_matching` of thinking-in-space / lmms-eval vsibench. */
export function vsiFuzzyMatching(pred: string): string {
  return pyStrip(pyRstrip(pySplit(pred, ' ')[0] ?? '', '.'));
}

/** thinking-in-space: `to_float(fuzzy_matching(pred))`. */
export function extractTis(prediction: string): number | null {
  return tryPyFloat(vsiFuzzyMatching(prediction));
}

const NUMBER_WORDS: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18,
  nineteen: 19, twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90,
  hundred: 100, thousand: 1000,
};
// Python `\d` on a str pattern is any Unicode decimal digit; float() then maps them to ASCII.
const NUM_RE = new RegExp(`-?${PY_DIGIT}+(?:\\.${PY_DIGIT}+)?`, 'u');

/** lmms-eval `extract_number(text)`. */
export function extractNumberLmms(text: unknown): number | null {
  if (text === null || text === undefined) return null;
  const s = pyLower(pyStrip(String(text)));
  if (!s) return null;
  const digit = NUM_RE.exec(s);
  let wordRunStart: number | null = null;
  const tokens: string[] = [];
  for (const m of s.matchAll(/[a-z]+/g)) {
    const tok = m[0];
    if (wordRunStart === null) {
      if (Object.hasOwn(NUMBER_WORDS, tok)) {
        wordRunStart = m.index;
        tokens.push(tok);
      }
    } else {
      if (tok === 'and') continue;
      if (Object.hasOwn(NUMBER_WORDS, tok)) tokens.push(tok);
      else break;
    }
  }
  // Both indices are UTF-16 offsets into the same string, so their order equals the code-point order.
  const digitFirst = digit !== null && (wordRunStart === null || digit.index < wordRunStart);
  if (digitFirst) {
    const v = tryPyFloat(digit[0]);
    if (v !== null) return v;
  }
  if (wordRunStart === null) return null;
  let total = 0;
  let current = 0;
  for (const tok of tokens) {
    const val = NUMBER_WORDS[tok]!;
    if (val === 100) current = Math.max(current, 1) * 100;
    else if (val === 1000) {
      total += Math.max(current, 1) * 1000;
      current = 0;
    } else current += val;
  }
  return total + current;
}

/** `mean_relative_accuracy(pred, gt)` with the reference's None/zero behaviour. */
export function mraFromFloats(pred: number | null, gt: number | null): MraVariantResult {
  if (pred === null || gt === null) return { predFloat: pred, relError: null, mra: 0.0 };
  if (gt === 0) {
    return { predFloat: pred, relError: null, error: { type: 'ZeroDivisionError', message: 'float division by zero' } };
  }
  const relError = Math.abs(pred - gt) / gt;
  let n = 0;
  for (const b of MRA_BOUNDS) if (relError <= b) n++;
  return { predFloat: pred, relError, mra: n / 10 };
}

export interface MraVectorOutput {
  groundTruthFloat: number | null;
  tis: MraVariantResult;
  lmmsEval: MraVariantResult;
}

/** Both variants for one (prediction, ground truth) pair, as the golden vectors lay them out. */
export function mraCompute(prediction: string, groundTruth: string): MraVectorOutput {
  const gt = tryPyFloat(groundTruth);
  return {
    groundTruthFloat: gt,
    tis: mraFromFloats(extractTis(prediction), gt),
    lmmsEval: mraFromFloats(extractNumberLmms(prediction), gt),
  };
}

function makeMraScorer(variant: 'tis' | 'lmmsEval'): Scorer {
  return {
    name: `mra.${variant}`,
    version: variant === 'tis' ? 'thinking-in-space@51e089c:vsibench.mra/1' : 'lmms-eval@75571cfe:vsibench.extract_number.mra/1',
    description:
      variant === 'tis'
        ? 'VSI-Bench MRA over θ∈linspace(.5,.95,10); prediction = float(first space token)'
        : 'VSI-Bench MRA over θ∈linspace(.5,.95,10); prediction = first digit/number-word value',
    score(prediction: string, sample: ScorableSample): ScoreResult {
      const gt = typeof sample.answer === 'number' ? sample.answer : tryPyFloat(String(sample.answer));
      const pred = variant === 'tis' ? extractTis(prediction) : extractNumberLmms(prediction);
      const r = mraFromFloats(pred, gt);
      if (r.error) {
        // The reference crashes here; a sweep must not. Score 0 and keep the reason.
        return { score: 0, correct: false, extracted: pred, detail: { relError: null, error: r.error } };
      }
      const mra = r.mra ?? 0;
      return { score: mra, correct: mra >= 0.5, extracted: pred, detail: { relError: r.relError } };
    },
  };
}

export const mraTisScorer = makeMraScorer('tis');
export const mraLmmsEvalScorer = makeMraScorer('lmmsEval');

/** Python `float()` of a ground-truth string, raising like the reference (exported for adapters). */
export const parseGroundTruth = pyFloat;

/**
 * Pixel Reasoner answer scoring, TIGER-AI-Lab/Pixel-Reasoner@a3a6c3a
 * `curiosity_driven_rl/openrlhf/trainer/ppo_utils/experience_maker.py`
 * (`extract_qwen_query_and_response`, `rule_reward`, `handle_boxed`, `normalize_answer`, `do_verify`).
 *
 * String steps reproduced exactly (checked by the `pr_boxed` golden vectors):
 * - solution = everything after the first `<|im_start|>assistant\n`, later assistant markers removed;
 * - validity: `<|im_end|>` (Qwen eos) or `<|endoftext|>` present, else "No eos."; more than 5 "wait"
 *   (lower-cased) → "too many waits". `requires_box` is effectively None (the reference passes `executor`
 *   in that slot), so "No valid boxed." never fires;
 * - GT variants: lower-cased; for a list GT the first item containing '%' is added, '%'-stripped, in front;
 *   a scalar GT becomes `[str(gt).lower()]`;
 * - candidates (on the lower-cased solution): tail from the last `\boxed` (stripped); `\boxed{…}` around
 *   the first single-line `<answer>(.*?)</answer>`; the whole solution as fallback. The reference's
 *   `Answer:` indicator is dead code (it searches the lower-cased text for a capital A);
 * - `normalize_answer`: dfrac→frac, drop `\text`, `\varnothing`→`\emptyset`, drop "minutes", drop "cm"
 *   (even inside words);
 * - multi-span GT (contains ','): splits = `ans[7:-1].split(',')` (a slice of the raw GT, so a GT
 *   without `\boxed{` loses its first 7 characters — a reference quirk), all found in `'\\' + text from
 *   the last "boxed"` → reward 1.0.
 *
 * NOT reproduced: `math_verify.parse/verify` (sympy-based). For runtime scoring {@link mathEquivalent}
 * approximates it: normalised string equality, numeric equality (commas, %, simple \frac{a}{b}, a/b),
 * and single-letter options "(c)" ≡ "c". math_verify accepts more (symbolic equality, sets, intervals,
 * unit-free LaTeX) and some things less; expect rare disagreements on math-style answers.
 */
import { pyFloatRepr } from '../../pycompat/float';
import { pyCount, pyLower, pySlice, pySplit, pyStrip } from '../../pycompat/str';
import type { ScorableSample, ScoreResult, Scorer } from './types';

/** Qwen2.5-VL tokenizer eos token. */
export const QWEN_EOS = '<|im_end|>';
const ASSISTANT = '<|im_start|>assistant\n';

export interface PrCandidate {
  indicator: '\\boxed' | '<answer>' | 'fallback';
  nsol: string;
}
export interface PrMultispan {
  splits: string[];
  boxedTail: string | null;
  allFound: boolean;
}
export interface PrPerGt {
  gt: string;
  gtParseInput: string;
  multispan: PrMultispan | null;
}
export interface PrBoxedTrace {
  solution: string;
  valid: boolean;
  errorInfo: string | null;
  gtVariants: string[];
  candidates: PrCandidate[];
  perGt: PrPerGt[];
}

/** `extract_qwen_query_and_response(...)[1]`. */
export function prSolution(qaText: string): string {
  const parts = qaText.split(ASSISTANT);
  return parts.length === 1 ? '' : parts.slice(1).join('');
}

/** `normalize_answer`. */
export function prNormalizeAnswer(answer: string): string {
  let a = answer;
  if (a.includes('dfrac')) a = a.replaceAll('dfrac', 'frac');
  if (a.includes('text')) a = a.replaceAll('\\text', '');
  if (a.includes('\\varnothing')) a = a.replaceAll('\\varnothing', '\\emptyset');
  if (a.includes('minutes')) a = a.replaceAll('minutes', '');
  if (a.includes('cm')) a = a.replaceAll('cm', '');
  return a;
}

/** Python `str(gt)` for the scalar GT kinds a dataset holds. */
function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v).toString() : pyFloatRepr(v);
  if (typeof v === 'bigint') return v.toString();
  return String(v);
}

/** The `rule_reward` GT list. */
export function prGtVariants(gt: unknown): string[] {
  if (Array.isArray(gt)) {
    const list = gt.map((x, i) => {
      if (typeof x !== 'string') throw new TypeError(`pr_boxed: GT list item ${i} is ${typeof x}, not a string ('${typeof x}' object has no attribute 'lower')`);
      return pyLower(x);
    });
    const withPercent = list.find((x) => x.includes('%'));
    if (withPercent !== undefined) {
      const stripped = withPercent.replaceAll('%', '');
      if (!list.includes(stripped)) list.unshift(stripped);
    }
    return list;
  }
  return [pyLower(pyStr(gt))];
}

/** `rule_reward` validity. */
export function prValidity(sol: string, eos = QWEN_EOS): { valid: boolean; errorInfo: string | null } {
  if (!sol.includes(eos) && !sol.includes('<|endoftext|>')) return { valid: false, errorInfo: 'No eos.' };
  if (pyCount(pyLower(sol), 'wait') > 5) return { valid: false, errorInfo: 'too many waits' };
  return { valid: true, errorInfo: null };
}

/** The strings `handle_boxed` hands to math_verify, in order (already normalised). */
export function prCandidates(lowerSol: string): PrCandidate[] {
  const out: PrCandidate[] = [];
  if (lowerSol.includes('\\boxed')) {
    const idx = lowerSol.lastIndexOf('\\boxed');
    out.push({ indicator: '\\boxed', nsol: prNormalizeAnswer(pyStrip(lowerSol.slice(idx))) });
  }
  if (lowerSol.includes('<answer>')) {
    // Python `.` excludes only '\n'.
    const found = /<answer>([^\n]*?)<\/answer>/u.exec(lowerSol);
    if (found) out.push({ indicator: '<answer>', nsol: prNormalizeAnswer(`\\boxed{${found[1]}}`) });
  }
  out.push({ indicator: 'fallback', nsol: prNormalizeAnswer(lowerSol) });
  return out;
}

/** The string `handle_boxed` parses as the GT. */
export function prGtParseInput(ans: string): string {
  const g = prNormalizeAnswer(ans);
  return g.includes('\\boxed') ? g : `\\boxed{${g}}`;
}

/** Multi-span check of `rule_reward` for one GT variant, or null when the GT has no ','. */
export function prMultispan(ans: string, lowerSol: string): PrMultispan | null {
  if (!ans.includes(',')) return null;
  const splits = pySplit(pySlice(ans, 7, -1), ',').map((x) => pyStrip(pyLower(x)));
  const boxedIndex = lowerSol.lastIndexOf('boxed');
  if (boxedIndex === -1) return { splits, boxedTail: null, allFound: false };
  const boxedTail = '\\' + lowerSol.slice(boxedIndex);
  const allFound = splits.every((sp) => boxedTail.includes(sp));
  return { splits, boxedTail, allFound };
}

/** The whole string-level trace for one (qaText, gt), shaped like the golden vectors. */
export function prBoxedTrace(qaText: string, gt: unknown): PrBoxedTrace {
  const solution = prSolution(qaText);
  return prBoxedTraceOfSolution(solution, gt);
}

export function prBoxedTraceOfSolution(solution: string, gt: unknown): PrBoxedTrace {
  const { valid, errorInfo } = prValidity(solution);
  const gtVariants = prGtVariants(gt);
  const lowerSol = pyLower(solution);
  const candidates = prCandidates(lowerSol);
  const perGt: PrPerGt[] = [];
  for (const ans of gtVariants) {
    const multispan = prMultispan(ans, lowerSol);
    perGt.push({ gt: ans, gtParseInput: prGtParseInput(ans), multispan });
    if (multispan?.allFound) break;
  }
  return { solution, valid, errorInfo, gtVariants, candidates, perGt };
}

// ---------------------------------------------------------------------------------------------------------
// Runtime equivalence (approximation of math_verify; see the module comment).

/** Content of the last `\boxed{...}` (balanced braces) in `s`, or null. */
export function lastBoxedContent(s: string): string | null {
  const idx = s.lastIndexOf('\\boxed');
  if (idx === -1) return null;
  let i = idx + '\\boxed'.length;
  while (i < s.length && s[i] === ' ') i++;
  if (s[i] !== '{') return null;
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    if (s[j] === '{') depth++;
    else if (s[j] === '}') {
      depth--;
      if (depth === 0) return s.slice(i + 1, j);
    }
  }
  return null;
}

function canonicalString(s: string): string {
  let t = s.replace(/<\|[a-z_]+\|>/g, '');
  t = t.replace(/\\left|\\right|\\!|\\,|\\;|\\ /g, '').replace(/\$/g, '');
  t = t.replace(/\^\{?\\circ\}?/g, '').replace(/\\%|%/g, '');
  t = t.replace(/\s+/gu, '');
  t = t.replace(/\.+$/, '');
  while (/^\{.*\}$/.test(t) && lastClosingMatches(t)) t = t.slice(1, -1);
  const letter = /^\(?([a-z])\)?[.:]?$/.exec(t);
  if (letter) return letter[1]!;
  return t;
}

function lastClosingMatches(t: string): boolean {
  let depth = 0;
  for (let i = 0; i < t.length; i++) {
    if (t[i] === '{') depth++;
    else if (t[i] === '}') depth--;
    if (depth === 0 && i < t.length - 1) return false;
  }
  return true;
}

function numericValue(s: string): number | null {
  const t = canonicalString(s).replace(/,/g, '');
  const frac = /^(-?)\\frac\{(-?[0-9.]+)\}\{(-?[0-9.]+)\}$/.exec(t) ?? /^(-?)\\frac([0-9])([0-9])$/.exec(t);
  if (frac) {
    const v = Number(frac[2]) / Number(frac[3]);
    return frac[1] === '-' ? -v : v;
  }
  const slash = /^(-?[0-9.]+)\/(-?[0-9.]+)$/.exec(t);
  if (slash) return Number(slash[1]) / Number(slash[2]);
  if (/^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?$/.test(t)) return Number(t);
  return null;
}

/**
 * Approximate `verify(parse(nsol), parse(gtParseInput))`: 1 (equal), 0 (not equal), or -1 (nothing
 * could be read from the candidate, as `do_verify` returns when parse() yields nothing).
 */
export function mathEquivalent(nsol: string, gtParseInput: string): number {
  const gtText = lastBoxedContent(gtParseInput) ?? gtParseInput;
  let predText = lastBoxedContent(nsol);
  if (predText === null) {
    // math_verify on free text takes the last expression; approximate with the last number.
    const nums = nsol.replace(/<\|[a-z_]+\|>/g, '').match(/-?[0-9][0-9,]*(?:\.[0-9]+)?/g);
    predText = nums ? nums[nums.length - 1]! : null;
    if (predText === null) return -1;
  }
  const a = canonicalString(predText);
  const b = canonicalString(gtText);
  if (a === '' && b !== '') return 0;
  if (a === b) return 1;
  const na = numericValue(predText);
  const nb = numericValue(gtText);
  if (na !== null && nb !== null) {
    const tol = 1e-6 * Math.max(1, Math.abs(nb));
    return Math.abs(na - nb) <= tol ? 1 : 0;
  }
  return 0;
}

/** Pixel Reasoner accuracy for one solution (the assistant text): 1, 0 or -1, like `rule_reward`'s `res`. */
export function prReward(solution: string, gt: unknown): { res: number; matchedBy: string | null; extracted: string | null } {
  const trace = prBoxedTraceOfSolution(solution, gt);
  let res = 0;
  let extracted: string | null = null;
  for (const g of trace.perGt) {
    res = 0;
    let matched: string | null = null;
    for (const c of trace.candidates) {
      res = mathEquivalent(c.nsol, g.gtParseInput);
      extracted ??= lastBoxedContent(c.nsol) ?? (c.indicator === 'fallback' ? null : c.nsol);
      if (res > 0.99) {
        matched = c.indicator;
        break;
      }
    }
    if (res > 0.5) return { res, matchedBy: matched, extracted };
    if (g.multispan?.allFound) return { res: 1.0, matchedBy: 'multispan', extracted };
  }
  return { res, matchedBy: null, extracted };
}

export const prBoxedScorer: Scorer = {
  name: 'pr.boxed',
  version: 'Pixel-Reasoner@a3a6c3a:rule_reward/strings-exact;math_verify-approx/1',
  description: 'Pixel Reasoner rule_reward: \\boxed / <answer> / whole-text candidates, multispan; math_verify approximated',
  score(prediction: string, sample: ScorableSample): ScoreResult {
    const solution = prediction.includes(ASSISTANT) ? prSolution(prediction) : prediction;
    const { res, matchedBy, extracted } = prReward(solution, sample.answer);
    const { valid, errorInfo } = prValidity(solution);
    return { score: res > 0.5 ? 1 : 0, correct: res > 0.5, extracted, detail: { res, matchedBy, valid, errorInfo } };
  },
};

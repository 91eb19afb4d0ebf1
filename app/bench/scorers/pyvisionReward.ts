/**
 * PyVision-RL's accuracy reward (agents-x-project/PyVision-RL@62ca599d, MIT):
 *
 * - `multi_task_verifier.compute_score` (MTV:407-492): a format gate before the judge — equal counts of
 *   `<|vision_start|><|image_pad|>` / `<|image_pad|><|vision_end|>`, equal `<answer>` / `</answer>` counts
 *   after the last `</interpreter>`, the first `<answer>\n\boxed{(.*?)}\n</answer>` (DOTALL, lazy, stripped)
 *   present and free of `<interpreter>`, `<answer>`, `\boxed`. Then the judge; an answer of ≥ 1000 code
 *   points scores 0 but stays "right", so the tool reward is still paid (`naive.py`:111-112).
 * - `rule_match_verify.compute_score_rule_mra` (RMV:4-18,32-41,77-99), for `vsi_numerical`: the first
 *   `[-+]?\d*\.?\d+` anywhere, MRA over θ = 0.5 + 0.05·i with a strict `<`, y = 0 → exact match.
 */
import { pyFloat } from '../../pycompat/float';
import { PY_DIGIT, pyCount, pyLen, pyStrip } from '../../pycompat/str';
import { parseJudgeReply } from './judgePrompts';
import type { PyErrorInfo } from './types';

const BOXED_ANSWER_RE = /<answer>\n\\boxed\{([\s\S]*?)\}\n<\/answer>/u;

/** MTV `extract_answer`: the first `<answer>\n\boxed{…}\n</answer>`, stripped, or null. */
export function pyvisionBoxedAnswer(text: string): string | null {
  const m = BOXED_ANSWER_RE.exec(text);
  return m ? pyStrip(m[1]!) : null;
}

export interface PyVisionGate {
  extracted: string | null;
  /** Whether the reference would call the judge at all. */
  formatOk: boolean;
}

/** The format gate of MTV `compute_score`, everything before the judge call. */
export function pyvisionFormatGate(response: string): PyVisionGate {
  let bad = pyCount(response, '<|vision_start|><|image_pad|>') !== pyCount(response, '<|image_pad|><|vision_end|>');
  const tail = pyStrip(response.split('</interpreter>').at(-1)!);
  if (pyCount(tail, '<answer>') !== pyCount(tail, '</answer>')) bad = true;
  const extracted = pyvisionBoxedAnswer(response);
  if (bad || extracted === null) return { extracted, formatOk: false };
  if (extracted.includes('<interpreter>') || extracted.includes('<answer>') || extracted.includes('\\boxed')) return { extracted, formatOk: false };
  return { extracted, formatOk: true };
}

export interface PyVisionJudged {
  score: number;
  isAnswerRight: boolean;
}

/** The reward once the judge replied (`judgeReply` is ignored when the gate failed). */
export function pyvisionJudgedScore(gate: PyVisionGate, judgeReply: string | null): PyVisionJudged {
  if (!gate.formatOk || judgeReply === null) return { score: 0, isAnswerRight: false };
  const { acc } = parseJudgeReply(judgeReply);
  const isAnswerRight = acc === 1;
  // "Penalize for model trying to predict longer answer to hack llm-as-judge": score only.
  const score = pyLen(gate.extracted!) >= 1000 ? 0 : acc;
  return { score, isAnswerRight };
}

// -------------------------------------------------------------------------------------------------
// vsi_numerical: rule MRA
// -------------------------------------------------------------------------------------------------

const NUM_RE = new RegExp(`[-+]?${PY_DIGIT}*\\.?${PY_DIGIT}+`, 'u');

/** RMV `_parse_number`: numbers pass through as floats; strings give their first number, or null. */
export function pvrlParseNumber(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string') {
    const m = NUM_RE.exec(value);
    if (!m) return null;
    try {
      return pyFloat(m[0]);
    } catch {
      return null;
    }
  }
  return null;
}

export interface PvrlMraResult {
  predNumber: number | null;
  gtNumber: number | null;
  score: number | null;
  isAnswerRight: boolean | null;
  error: PyErrorInfo | null;
}

const pyType = (v: number | null): string => (v === null ? 'NoneType' : 'float');

/** RMV `_compute_mra(y_hat, y_true)`; a None operand raises Python's TypeError as the reference does. */
export function pvrlMra(yHat: number | null, yTrue: number | null): number {
  // `y_true == 0` is False for None, so None falls through to the subtraction.
  if (yTrue === 0) return yHat === 0 ? 1 : 0;
  if (yHat === null || yTrue === null) {
    throw Object.assign(new TypeError(`unsupported operand type(s) for -: '${pyType(yHat)}' and '${pyType(yTrue)}'`), { pyType: 'TypeError' });
  }
  const rel = Math.abs(yHat - yTrue) / Math.abs(yTrue);
  let hits = 0;
  for (let i = 0; i < 10; i++) if (rel < 1.0 - (0.5 + 0.05 * i)) hits++;
  return hits / 10;
}

/** `compute_score_rule_mra(solution_str, ground_truth)`. */
export function pvrlMraScore(response: string, groundTruth: unknown): PvrlMraResult {
  const predNumber = pvrlParseNumber(response);
  const gtNumber = pvrlParseNumber(groundTruth);
  try {
    const acc = pvrlMra(predNumber, gtNumber);
    return { predNumber, gtNumber, score: 1.0 * acc, isAnswerRight: acc >= 0.5, error: null };
  } catch (e) {
    if (e instanceof TypeError) return { predNumber, gtNumber, score: null, isAnswerRight: null, error: { type: 'TypeError', message: e.message } };
    throw e;
  }
}

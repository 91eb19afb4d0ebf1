/**
 * Golden-vector adapters for the PyVision suites of `pyvision-public.json` (`pyvision_code`,
 * `pyvision_obs`, `pyvision_answer`, `pyvision_prompt`, `pyvision_mra`; fields: the vectors README). They
 * call the functions the `pyvision` dialect and the `llm-judge` scorer use, so a pass here is a pass of
 * those.
 */
import { judgePrompt as buildJudgePrompt, JudgeSourceError } from '../bench/scorers/judgePrompts';
import { pvrlMraScore, pyvisionFormatGate, pyvisionJudgedScore } from '../bench/scorers/pyvisionReward';
import {
  pvCodeTurn,
  pvObservation,
  pvReportedSize,
  pvrlCodeTurn,
  pvrlExtractAnswer,
  pvrlObservation,
  pvrlPrompt,
  pvrlRenderedPrompt,
  pvrlUserContent,
  pvUserContent,
} from '../protocol/pyvision';
import { VectorInputError } from './protocolSuites';

function obj(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new VectorInputError(`${what} must be an object`);
  return v as Record<string, unknown>;
}
function str(o: Record<string, unknown>, k: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw new VectorInputError(`input.${k} must be a string, got ${JSON.stringify(v)}`);
  return v;
}
function num(o: Record<string, unknown>, k: string): number {
  const v = o[k];
  if (typeof v !== 'number') throw new VectorInputError(`input.${k} must be a number, got ${JSON.stringify(v)}`);
  return v;
}
function variantOf(o: Record<string, unknown>): 'PV' | 'PVRL' {
  const v = o.variant;
  if (v !== 'PV' && v !== 'PVRL') throw new VectorInputError(`input.variant must be "PV" or "PVRL", got ${JSON.stringify(v)}`);
  return v;
}

function codeSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  const response = str(o, 'response');
  const finish = str(o, 'finishReason');
  return variantOf(o) === 'PV' ? pvCodeTurn(response, finish) : pvrlCodeTurn(response, finish);
}

function obsSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  const undecodable = o.undecodableFigures ?? [];
  if (!Array.isArray(undecodable) || undecodable.some((x) => typeof x !== 'number')) throw new VectorInputError('input.undecodableFigures must be a list of numbers');
  const error = o.error;
  if (error !== null && typeof error !== 'string') throw new VectorInputError('input.error must be a string or null');
  const outcome = { stdout: str(o, 'stdout'), numFigures: num(o, 'numFigures'), undecodableFigures: undecodable as number[], error, timeout: o.timeout === true };
  return variantOf(o) === 'PV' ? pvObservation(outcome, num(o, 'startIndex')) : pvrlObservation(outcome, num(o, 'startIndex'));
}

/** `judgePrompt` is recorded only by the `judgeprompt_*` cases (the README); others carry null. */
function answerSuite(input: unknown, meta?: { name: string }): unknown {
  const o = obj(input, 'input');
  const response = str(o, 'response');
  const gate = pyvisionFormatGate(response);
  const judged = pyvisionJudgedScore(gate, str(o, 'judgeReply'));
  let judgePrompt: string | null = null;
  if (meta?.name.startsWith('judgeprompt_') && gate.formatOk) {
    try {
      judgePrompt = buildJudgePrompt('pyvision-rl/v1', gate.extracted!, String(o.groundTruth), str(o, 'question'), str(o, 'dataSource'));
    } catch (e) {
      if (!(e instanceof JudgeSourceError)) throw e;
    }
  }
  return { extracted: gate.extracted, formatOk: gate.formatOk, ...judged, error: null, toolAnswer: pvrlExtractAnswer(response), judgePrompt };
}

function promptSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  const width = num(o, 'width');
  const height = num(o, 'height');
  const query = str(o, 'query');
  const prompt = pvrlPrompt(width, height, query);
  const content = pvrlUserContent(prompt);
  return {
    pvReportedSize: pvReportedSize(width, height, str(o, 'apiName')),
    pvUserContent: pvUserContent(width, height, query, str(o, 'apiName')),
    pvrlPrompt: prompt,
    pvrlUserContent: content,
    pvrlRendered: pvrlRenderedPrompt(content),
  };
}

function mraSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  return pvrlMraScore(str(o, 'response'), o.groundTruth);
}

export const pyvisionSuites: Record<string, (input: unknown, meta?: { name: string }) => unknown> = {
  pyvision_code: codeSuite,
  pyvision_obs: obsSuite,
  pyvision_answer: answerSuite,
  pyvision_prompt: promptSuite,
  pyvision_mra: mraSuite,
};

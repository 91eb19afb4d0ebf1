/**
 * The DeepEyes dialect (Visual-Agent/DeepEyes@6c5e7967, `visual_toolbox_v2.py`): `<answer>` present →
 * done; otherwise the last `<tool_call>(.*?)</tool_call>` is `json.loads`-ed (after `strip()`);
 * `image_zoom_in_tool{bbox_2d}` crops absolute pixels of the raw first image (clamp, >30 px, aspect
 * ≤ 100). The observation is raw chat text appended after the assistant turn.
 */
import { fromPlainJson, pyJsonLoads, toPlainJson } from '../pycompat/json';
import { asPyError, pyStr, type PyValue } from '../pycompat/repr';
import { pyStrip } from '../pycompat/str';
import { deepEyesCropGeometry } from '../tools/crop';
import { bboxRawOf } from '../tools/crop';
import { pyGetItem } from '../tools/pyops';
import { DEEPEYES_SYSTEM_PROMPT, DEEPEYES_USER_PROMPT, deepEyesUserText } from './prompts';
import { renderQwenChat } from './render';
import type { CallPlan, Dialect, EpisodeState, ParsedCall, ParseResult, RenderPart } from './types';

export const DEEPEYES_TOOL = 'image_zoom_in_tool';

const ANSWER_RE = /<answer>([\s\S]*?)<\/answer>/g;
const CALL_RE = /<tool_call>([\s\S]*?)<\/tool_call>/g;

export function deepEyesAnswer(text: string): string | null {
  const all = [...text.matchAll(ANSWER_RE)];
  return all.length ? all[all.length - 1]![1]! : null;
}

function lastCall(text: string): string | null {
  const all = [...text.matchAll(CALL_RE)];
  return all.length ? all[all.length - 1]![1]! : null;
}

export function deepEyesErrorObservation(message: string): string {
  return `\n<|im_start|>user\nError: ${message}<|im_end|>\n<|im_start|>assistant\n`;
}
export const DEEPEYES_SUCCESS_OBSERVATION = `\n<|im_start|>user\n<tool_response><image>${DEEPEYES_USER_PROMPT}</tool_response><|im_end|>\n<|im_start|>assistant\n`;

function error(type: string, message: string): CallPlan {
  return { kind: 'error', error: { type, message }, observation: deepEyesErrorObservation(message) };
}

export function deepEyesPlan(name: PyValue, args: PyValue, state: EpisodeState): CallPlan {
  try {
    if (name !== DEEPEYES_TOOL) {
      // image_rotate_tool exists in the reference but is not offered in the prompt; rotation is not an
      // ImageOps primitive, so it is reported rather than executed.
      if (name === 'image_rotate_tool') return error('NotImplementedError', 'image_rotate_tool is not supported by Loupe');
      return error('ValueError', `Unknown tool name: ${pyStr(name)}`);
    }
    const bbox = pyGetItem(args, 'bbox_2d');
    const raw = state.rawSizes[0];
    if (!raw) return error('IndexError', 'list index out of range');
    const geo = deepEyesCropGeometry(raw, bbox);
    return {
      kind: 'crop',
      target: { source: 'raw', index: 0, size: [raw[0], raw[1]], list: 'raw', position: 0 },
      bboxMode: 'absolute',
      bboxRaw: bboxRawOf(bbox),
      normalizedBox: geo.normalizedBox!,
      cropBoxFloat: geo.cropBoxFloat!,
      cropBox: geo.cropBox,
      cropSize: geo.cropSize,
      resizedSize: geo.cropSize,
      observation: DEEPEYES_SUCCESS_OBSERVATION,
      imagesAfter: state.originals.length + state.prior.length + 1,
      exceedsMaxImages: false,
    };
  } catch (e) {
    const err = asPyError(e);
    if (!err) throw e;
    return error(err.type, err.message);
  }
}

export const deepEyesDialect: Dialect = {
  id: 'deepeyes',
  label: 'DeepEyes',
  tools: [DEEPEYES_TOOL],
  limits: { maxCalls: 5, maxImages: 6, tokenBudget: 32768, maxTokensPerTurn: 10240 },
  stop: ['<|im_end|>', '<|endoftext|>'],
  systemPrompt: () => DEEPEYES_SYSTEM_PROMPT,
  userText: (question) => deepEyesUserText(question),
  render: renderQwenChat,
  isToolTurn: (response) => deepEyesAnswer(response) === null && lastCall(response) !== null,
  parseCall(_prefix: string, response: string): ParseResult {
    const action = lastCall(response);
    if (action === null) {
      return { ok: false, raw: '', error: { type: 'NoToolCall', message: 'no <tool_call>' }, observation: '', name: null, parsed: null };
    }
    const raw = pyStrip(action);
    let value: PyValue;
    try {
      value = pyJsonLoads(raw);
    } catch (e) {
      const err = asPyError(e) ?? { type: 'Error', message: String(e) };
      const message = `Invalid tool call format: ${raw}. Error: ${err.message}`;
      return { ok: false, raw, error: { type: err.type, message }, observation: deepEyesErrorObservation(message), name: null, parsed: null };
    }
    try {
      const name = pyGetItem(value, 'name');
      const args = pyGetItem(value, 'arguments');
      return {
        ok: true,
        call: { name: typeof name === 'string' ? name : pyStr(name), arguments: toPlainJson(args), raw, py: { name, arguments: args } },
      };
    } catch (e) {
      const err = asPyError(e);
      if (!err) throw e;
      return { ok: false, raw, error: err, observation: deepEyesErrorObservation(err.message), name: null, parsed: null };
    }
  },
  planCall(call: ParsedCall, state: EpisodeState): CallPlan {
    const py = call.py ?? { name: call.name, arguments: fromPlainJson(call.arguments) };
    return deepEyesPlan(py.name, py.arguments, state);
  },
  extractAnswer: deepEyesAnswer,
  observationParts(plan: CallPlan): RenderPart[] {
    if (plan.kind === 'error') return [{ type: 'text', text: `Error: ${plan.error.message}` }];
    return [{ type: 'text', text: '<tool_response>' }, { type: 'image' }, { type: 'text', text: `${DEEPEYES_USER_PROMPT}</tool_response>` }];
  },
  forceFinish: (s) => s.toolCallsSoFar >= 5,
};

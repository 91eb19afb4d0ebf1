/**
 * The Pixel Reasoner dialect (TIGER-AI-Lab/Pixel-Reasoner@a3a6c3a5, `EM` = experience_maker.py):
 * Nous tool prompt, Qwen2.5-VL chat, tool turn iff the response (minus every `<|im_end|>`) ends with
 * `</tool_call>`, the **last** call parsed with Python `json.loads`, `crop_image_normalized` and
 * `select_frames` executed as `execute_tool` does, observations and errors as user turns.
 */
import { fromPlainJson, plainNumber, pyJsonLoads } from '../pycompat/json';
import { asPyError, type PyValue } from '../pycompat/repr';
import { bboxRawOf, prCropGeometry, type CropTrace } from '../tools/crop';
import { pyGetItem } from '../tools/pyops';
import {
  prImageCount,
  prResolveCropTarget,
  prSelectFrames,
  type PrImageList,
  type SelectFramesTrace,
  type SelectionTrace,
  type Size,
} from '../tools/selection';
import { presetFor } from '../tools/smartResize';
import { lastCallText, readCall, TOOL_END } from './callText';
import { prSystemPrompt, prUserText } from './prompts';
import { IM_END, renderQwenChat } from './render';
import type { CallPlan, Dialect, EpisodeState, ParsedCall, ParseResult, RenderPart } from './types';

export const PR_OPERATIONS = ['crop_image_normalized', 'select_frames'] as const;
export const PR_MAX_IMAGES = 16;
export const PR_TOKEN_BUDGET = 12 * 1024 - 200;
export const PR_MAX_TOKENS_PER_TURN = 2048;
/** `num_toolcalls > 3` forces the finish, so at most 4 calls run. */
export const PR_MAX_CALLS = 4;
export const PR_STOP = ['<|im_end|>', '<|eot_id|>', '<|endoftext|>'];

export function prErrorObservation(message: string): string {
  return `\nExecution error:\n${message}\n`;
}
export function prCropObservation(w: number, h: number): string {
  return `\nHere is the cropped image (Image Size: ${w}x${h}):`;
}
export function prFramesObservation(w: number, h: number, imagesBefore: number, k: number): string {
  return `\nHere are the selected frames (Frame Size: ${w}x${h}, Numbered ${imagesBefore} to ${k + imagesBefore - 1}):`;
}

/** PR tool-turn test (EM:2237-2242): every `<|im_end|>` removed, then `endswith('</tool_call>')`. */
export function prIsToolTurn(response: string): boolean {
  return response.split(IM_END).join('').endsWith(TOOL_END);
}

/** One tool turn, step by step, in the golden vectors' field names (a field appears once computed). */
export interface PrTurnTrace extends CropTrace, SelectionTrace, SelectFramesTrace {
  imagesBefore: number;
  observation?: string;
  imagesAfter?: number;
  exceedsMaxImages?: boolean;
  error?: { type: string; message: string };
}

/** `EpisodeState` → the reference's image lists. */
export function prImageList(state: EpisodeState): PrImageList {
  const size = (i: { width: number; height: number }): Size => [i.width, i.height];
  const first = state.videoFrames[0];
  return {
    isVideo: state.isVideo,
    originals: state.originals.map(size),
    video: state.isVideo && first ? { frameSize: size(first), numFrames: state.videoFrames.length } : undefined,
    prior: state.prior.map(size),
  };
}

function indexNumber(i: bigint | number): number {
  const n = plainNumber(i);
  return typeof n === 'number' ? n : Number(n);
}

/**
 * Execute (over sizes) one parsed call as PR's `execute_tool` + observation code would.
 * `name` must already be a bound tool (parse fails otherwise). Never throws for bad arguments: the
 * Python exception becomes an error plan with PR's `Execution error` observation.
 */
export function prPlanTurn(
  name: PyValue,
  args: PyValue,
  imgs: PrImageList,
  mode: 'eval' | 'train',
): { plan: CallPlan; trace: PrTurnTrace } {
  const imagesBefore = prImageCount(imgs);
  const trace: PrTurnTrace = { imagesBefore };
  try {
    if (name === 'select_frames') {
      const r = prSelectFrames(imgs, args, mode, trace);
      const k = r.indices.length;
      const observation = prFramesObservation(r.frameSize[0], r.frameSize[1], imagesBefore, k);
      trace.observation = observation;
      trace.imagesAfter = imagesBefore + k;
      trace.exceedsMaxImages = trace.imagesAfter > PR_MAX_IMAGES;
      return {
        trace,
        plan: {
          kind: 'frames',
          frameIndices: r.indices.map(indexNumber),
          framePositions: r.positions,
          frameSize: r.frameSize,
          observation,
          imagesAfter: trace.imagesAfter,
          exceedsMaxImages: trace.exceedsMaxImages,
        },
      };
    }
    if (name !== 'crop_image_normalized') {
      // Only reachable when a caller skips parsing: the reference looks the tool up first.
      pyGetItem(new Map<string, PyValue>(PR_OPERATIONS.map((o) => [o, null])), name);
    }
    const tgt = pyGetItem(args, 'target_image');
    const target = prResolveCropTarget(imgs, tgt, trace);
    const bbox = pyGetItem(args, 'bbox_2d');
    const geo = prCropGeometry(target.size, bbox, { zoomPreset: presetFor('zoom', mode) }, trace);
    const resized = geo.resizedSize!;
    const observation = prCropObservation(resized[0], resized[1]);
    trace.observation = observation;
    trace.imagesAfter = imagesBefore + 1;
    trace.exceedsMaxImages = trace.imagesAfter > PR_MAX_IMAGES;
    return {
      trace,
      plan: {
        kind: 'crop',
        target: {
          source: target.source,
          index: indexNumber(target.index),
          size: target.size,
          list: target.list,
          position: target.position,
        },
        bboxMode: geo.bboxMode,
        bboxRaw: bboxRawOf(bbox),
        normalizedBox: geo.normalizedBox,
        cropBoxFloat: geo.cropBoxFloat,
        cropBox: geo.cropBox,
        cropSize: geo.cropSize,
        resizedSize: resized,
        observation,
        imagesAfter: trace.imagesAfter,
        exceedsMaxImages: trace.exceedsMaxImages,
      },
    };
  } catch (e) {
    const err = asPyError(e);
    if (!err) throw e;
    trace.error = err;
    trace.observation = prErrorObservation(err.message);
    return { trace, plan: { kind: 'error', error: err, observation: trace.observation } };
  }
}

/** The call's Python values: the parsed ones when present, else re-read from `raw`, else from JSON. */
export function callPyValues(call: ParsedCall): { name: PyValue; arguments: PyValue } {
  if (call.py) return call.py;
  try {
    const v = pyJsonLoads(call.raw);
    if (v instanceof Map && v.get('name') === call.name && v.has('arguments')) {
      return { name: call.name, arguments: v.get('arguments')! };
    }
  } catch {
    // fall through: the raw text is not the call (edited arguments)
  }
  return { name: call.name, arguments: fromPlainJson(call.arguments) };
}

/** The last `\boxed{…}` content with balanced braces, or null. */
export function lastBoxed(text: string): string | null {
  const i = text.lastIndexOf('\\boxed{');
  if (i < 0) return null;
  let depth = 0;
  for (let k = i + 6; k < text.length; k++) {
    const c = text[k];
    if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return text.slice(i + 7, k);
    }
  }
  return null;
}

/** The user turn for a plan: text, then the produced images. */
export function prObservationParts(plan: CallPlan): RenderPart[] {
  const parts: RenderPart[] = [{ type: 'text', text: plan.observation }];
  if (plan.kind === 'crop') parts.push({ type: 'image' });
  if (plan.kind === 'frames') for (let i = 0; i < plan.frameIndices.length; i++) parts.push({ type: 'image' });
  return parts;
}

export const pixelReasonerDialect: Dialect = {
  id: 'pixel-reasoner',
  label: 'Pixel Reasoner',
  tools: [...PR_OPERATIONS],
  limits: {
    maxCalls: PR_MAX_CALLS,
    maxImages: PR_MAX_IMAGES,
    tokenBudget: PR_TOKEN_BUDGET,
    maxTokensPerTurn: PR_MAX_TOKENS_PER_TURN,
  },
  stop: PR_STOP,
  systemPrompt: prSystemPrompt,
  userText: (question, prompt) => prUserText(question, prompt),
  render: renderQwenChat,
  isToolTurn: prIsToolTurn,
  parseCall(prefix: string, response: string): ParseResult {
    const raw = lastCallText(prefix + response);
    const r = readCall(raw, PR_OPERATIONS);
    if (r.error) {
      return {
        ok: false,
        raw,
        error: r.error,
        observation: prErrorObservation(r.error.message),
        name: typeof r.name === 'string' ? r.name : null,
        parsed: r.parsed,
      };
    }
    return {
      ok: true,
      call: {
        name: r.name as string,
        arguments: r.parsed!.arguments,
        raw,
        py: { name: r.name!, arguments: r.arguments! },
      },
    };
  },
  planCall(call: ParsedCall, state: EpisodeState): CallPlan {
    const py = callPyValues(call);
    return prPlanTurn(py.name, py.arguments, prImageList(state), state.mode).plan;
  },
  extractAnswer: lastBoxed,
  observationParts: prObservationParts,
  forceFinish: (s) =>
    s.toolCallsSoFar > PR_MAX_CALLS - 1 || s.imageCount > PR_MAX_IMAGES || s.promptTokens + s.outputTokens > PR_TOKEN_BUDGET,
};

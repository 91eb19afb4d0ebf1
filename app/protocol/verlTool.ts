/**
 * The verl-tool dialect (TIGER-AI-Lab/verl-tool@980962b4, `verl_tool/servers/tools/pixel_reasoner.py`):
 * the same prompt shape as Pixel Reasoner but the crop tool is `crop_image` with other texts; vLLM
 * stops at `</tool_call>` (kept); the **first** call is parsed; names `zoom_in|crop_image_normalized|
 * crop_image` crop and `select_frames` selects; `target_image = int(...)` over
 * `env.images` = the question images at file size + every returned crop/frame; padding
 * `min(0.1, 600/W)`, `int()` box, no 28-px check, results re-fetched with qwen-vl-utils defaults.
 * An unparsable action gives the empty observation.
 */
import { fromPlainJson, pyJsonLoads, toPlainJson } from '../pycompat/json';
import { asPyError, pyStr, type PyValue } from '../pycompat/repr';
import { bboxRawOf, vtCropGeometry } from '../tools/crop';
import { pyCompare, pyIntOrNull } from '../tools/pyops';
import { firstCallText, TOOL_END } from './callText';
import { lastBoxed } from './pixelReasoner';
import { vtSystemPrompt, vtUserText } from './prompts';
import { renderQwenChat } from './render';
import type { CallPlan, Dialect, EpisodeState, ImageSelection, ParsedCall, ParseResult, RenderPart } from './types';

export const VT_CROP_NAMES = ['zoom_in', 'crop_image_normalized', 'crop_image'] as const;
export const VT_TOOL_NAMES = [...VT_CROP_NAMES, 'select_frames'] as const;

/** `env.images` sizes: question images at file size, then returned crops/frames. */
function vtImages(state: EpisodeState): Array<{ size: [number, number]; list: 'raw' | 'prior'; position: number }> {
  return [
    ...state.rawSizes.map((s, i) => ({ size: [s[0], s[1]] as [number, number], list: 'raw' as const, position: i })),
    ...state.prior.map((p, i) => ({ size: [p.width, p.height] as [number, number], list: 'prior' as const, position: i })),
  ];
}

function typeRepr(v: PyValue): string {
  const name = v === null ? 'NoneType' : typeof v === 'boolean' ? 'bool' : typeof v === 'bigint' ? 'int' : typeof v === 'number' ? 'float' : typeof v === 'string' ? 'str' : Array.isArray(v) ? 'list' : 'dict';
  return `<class '${name}'>`;
}

const invalid = (raw: string, message: string): ParseResult => ({
  ok: false,
  raw,
  error: { type: 'InvalidAction', message },
  observation: '',
  name: null,
  parsed: null,
});

/** The observation (an error string) as an error plan: VT reports it and the episode goes on. */
function vtError(message: string): CallPlan {
  return { kind: 'error', error: { type: 'ToolError', message }, observation: message };
}

function vtIsInt(v: PyValue): v is bigint | boolean {
  return typeof v === 'bigint' || typeof v === 'boolean';
}

export function vtPlan(name: string, args: PyValue, state: EpisodeState): CallPlan {
  if (!(args instanceof Map)) return vtError(`'arguments' should be a dictionary of parameters key-value pairs, got ${typeRepr(args)}.`);
  const images = vtImages(state);
  const n = images.length;
  if ((VT_CROP_NAMES as readonly string[]).includes(name)) {
    const missing: string[] = [];
    if (!args.has('bbox_2d')) missing.push('bbox_2d');
    if (!args.has('target_image')) missing.push('target_image');
    let tgt: PyValue = args.get('target_image') ?? null;
    if (args.has('target_image')) {
      const asInt = pyIntOrNull(tgt);
      if (asInt !== null) tgt = asInt;
    }
    if (missing.length) return vtError(`Missing parameters: ${missing.join(', ')}`);
    const bbox = args.get('bbox_2d')!;
    if (!Array.isArray(bbox) || bbox.length !== 4) return vtError('Invalid bbox_2d format. It should be a list of four numbers.');
    if (!vtIsInt(tgt) || pyCompare(tgt, '<=', 0n) || pyCompare(tgt, '>', BigInt(n))) {
      return vtError(`Invalid target_image index. It should be an integer between 1 and the number of previous images (${n}).`);
    }
    const position = Number(typeof tgt === 'boolean' ? 1n : tgt) - 1;
    const img = images[position]!;
    try {
      const geo = vtCropGeometry(img.size, bbox);
      const [w, h] = geo.resizedSize;
      const target: ImageSelection = { source: 'images', index: position, size: img.size, list: img.list, position: img.position };
      return {
        kind: 'crop',
        target,
        bboxMode: geo.bboxMode!,
        bboxRaw: bboxRawOf(bbox),
        normalizedBox: geo.normalizedBox!,
        cropBoxFloat: geo.cropBoxFloat!,
        cropBox: geo.cropBox!,
        cropSize: geo.cropSize!,
        resizedSize: geo.resizedSize,
        observation: `Here is the cropped image. (Image Size: ${w}x${h})\n<image>`,
        imagesAfter: n + 1,
        exceedsMaxImages: false,
      };
    } catch (e) {
      const err = asPyError(e);
      if (!err) throw e;
      return vtError(`Error processing image: ${err.message}`);
    }
  }
  if (name === 'select_frames') {
    if (!args.has('target_frames')) return vtError('Missing parameters: target_frames');
    const frames = args.get('target_frames')!;
    if (!Array.isArray(frames)) return vtError('Invalid target_frames format. It should be a list of integers.');
    const ok = frames.every((f) => vtIsInt(f) && pyCompare(1n, '<=', f) && pyCompare(f, '<=', BigInt(n)));
    if (!ok) {
      return vtError(`Invalid target_frames indices. Each index should be an integer between 1 and the number of previous images (${n}).`);
    }
    try {
      const crops = frames.map((f) => {
        const position = Number(typeof f === 'boolean' ? 1n : (f as bigint)) - 1;
        const img = images[position]!;
        // VT crops every frame with the default bbox (0, 0, 1, 1): "1 < 1" is false, so it is absolute px.
        const geo = vtCropGeometry(img.size, [0n, 0n, 1n, 1n]);
        return {
          target: { source: 'images' as const, index: position, size: img.size, list: img.list, position: img.position },
          cropBox: geo.cropBox!,
          resizedSize: geo.resizedSize,
        };
      });
      if (crops.length === 0) throw new Error('empty selection');
      const [w, h] = crops[0]!.resizedSize;
      return {
        kind: 'frames',
        frameIndices: crops.map((c) => c.target.index),
        framePositions: crops.map((c) => c.target.position),
        frameCrops: crops,
        frameSize: [w, h],
        observation: `Here are the selected frames. (Frame Size: ${w}x${h}, Numbered 1 to ${crops.length}):${'<image>'.repeat(crops.length)}`,
        imagesAfter: n + crops.length,
        exceedsMaxImages: false,
      };
    } catch (e) {
      const err = asPyError(e);
      // An empty list passes VT's checks and fails at `target_frames[0].size` (IndexError).
      return vtError(`Error processing frames: ${err ? err.message : 'list index out of range'}`);
    }
  }
  return vtError('Unknown action name.');
}

export const verlToolDialect: Dialect = {
  id: 'verl-tool',
  label: 'verl-tool (VisualReasoner)',
  tools: ['crop_image', 'select_frames'],
  limits: { maxCalls: 5, maxImages: 25, tokenBudget: 12 * 1024 - 200, maxTokensPerTurn: 4096 },
  stop: ['</tool_call>', '<|im_end|>', '<|endoftext|>'],
  systemPrompt: vtSystemPrompt,
  userText: vtUserText,
  render: renderQwenChat,
  isToolTurn: (response) => response.endsWith(TOOL_END),
  parseCall(_prefix: string, response: string): ParseResult {
    const raw = firstCallText(response);
    if (raw === null) return invalid('', 'No valid tool found for action');
    let call: PyValue;
    try {
      call = pyJsonLoads(raw);
    } catch (e) {
      return invalid(raw, asPyError(e)?.message ?? String(e));
    }
    if (!(call instanceof Map)) return invalid(raw, `'${typeof call}' object has no attribute 'get'`);
    const name = call.has('name') ? call.get('name')! : '';
    if (typeof name !== 'string' || !(VT_TOOL_NAMES as readonly string[]).includes(name)) {
      return invalid(raw, `unknown tool name ${pyStr(name)}`);
    }
    if (!call.has('arguments')) {
      return { ok: false, raw, error: { type: 'ToolError', message: "Missing 'arguments' in the tool call." }, observation: "Missing 'arguments' in the tool call.", name, parsed: null };
    }
    const args = call.get('arguments')!;
    return { ok: true, call: { name, arguments: toPlainJson(args), raw, py: { name, arguments: args } } };
  },
  planCall(call: ParsedCall, state: EpisodeState): CallPlan {
    const args = call.py ? call.py.arguments : fromPlainJson(call.arguments);
    return vtPlan(call.name, args, state);
  },
  extractAnswer: lastBoxed,
  observationParts(plan: CallPlan): RenderPart[] {
    const parts: RenderPart[] = [];
    plan.observation.split('<image>').forEach((t, i) => {
      if (i > 0) parts.push({ type: 'image' });
      if (t) parts.push({ type: 'text', text: t });
    });
    return parts;
  },
  forceFinish: (s) => s.toolCallsSoFar >= 5 || s.promptTokens + s.outputTokens > 12 * 1024 - 200,
};

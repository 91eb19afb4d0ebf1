/**
 * Golden-vector adapters for the protocol suites: `smart_resize`, `crop`, `select_frames`, `toolcall`.
 * Each maps a case's `input` to a value that must deep-equal its `expected` (format: the vectors
 * README). They call the same functions the Pixel Reasoner dialect uses, so a pass here is a pass of
 * the dialect.
 */
import { plainNumber } from '../pycompat/json';
import { asPyError } from '../pycompat/repr';
import { readCall } from '../protocol/callText';
import { PR_OPERATIONS, pixelReasonerDialect, prErrorObservation, prIsToolTurn, prPlanTurn, type PrTurnTrace } from '../protocol/pixelReasoner';
import { prImageCount, type PrImageList, type Size } from '../tools/selection';
import { paddedFrameCount, presetFor, resizeWithPreset, smartResize } from '../tools/smartResize';

/** Bad vector input: names the field and what it should be. */
export class VectorInputError extends Error {}

function obj(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new VectorInputError(`${what} must be an object`);
  return v as Record<string, unknown>;
}
function num(o: Record<string, unknown>, k: string): number {
  const v = o[k];
  if (typeof v !== 'number') throw new VectorInputError(`input.${k} must be a number, got ${JSON.stringify(v)}`);
  return v;
}
function str(o: Record<string, unknown>, k: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw new VectorInputError(`input.${k} must be a string, got ${JSON.stringify(v)}`);
  return v;
}
function size(v: unknown, where: string): Size {
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'number' || typeof v[1] !== 'number') {
    throw new VectorInputError(`${where} must be [width, height], got ${JSON.stringify(v)}`);
  }
  return [v[0], v[1]];
}
function sizes(o: Record<string, unknown>, k: string): Size[] {
  const v = o[k] ?? [];
  if (!Array.isArray(v)) throw new VectorInputError(`input.${k} must be a list of [width, height]`);
  return v.map((s, i) => size(s, `input.${k}[${i}]`));
}

function smartResizeSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  try {
    return smartResize(num(o, 'height'), num(o, 'width'), num(o, 'factor'), num(o, 'minPixels'), num(o, 'maxPixels'));
  } catch (e) {
    const err = asPyError(e);
    if (!err) throw e;
    return { error: err };
  }
}

/** The trace in the vectors' field names (numbers as plain JSON). */
export function traceToExpected(t: PrTurnTrace): Record<string, unknown> {
  const out: Record<string, unknown> = { imagesBefore: t.imagesBefore };
  if (t.selectedImage) {
    const s: Record<string, unknown> = { source: t.selectedImage.source, index: plainNumber(t.selectedImage.index) };
    if (t.selectedImage.size) s.size = t.selectedImage.size;
    out.selectedImage = s;
  }
  for (const k of ['bboxMode', 'normalizedBox', 'cropBoxFloat', 'cropBox', 'cropSize', 'resizedSize', 'frameSize'] as const) {
    if (t[k] !== undefined) out[k] = t[k];
  }
  if (t.selectedFrameIndices) out.selectedFrameIndices = t.selectedFrameIndices.map(plainNumber);
  if (t.observation !== undefined) out.observation = t.observation;
  if (t.imagesAfter !== undefined) out.imagesAfter = t.imagesAfter;
  if (t.exceedsMaxImages !== undefined) out.exceedsMaxImages = t.exceedsMaxImages;
  if (t.error) out.error = t.error;
  return out;
}

/** One `crop` / `select_frames` case: initial sizes → parse → execute → observation. */
function toolTurnSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  const mode = str(o, 'mode');
  if (mode !== 'eval' && mode !== 'train') throw new VectorInputError(`input.mode must be "eval" or "train", got ${JSON.stringify(mode)}`);
  const isVideo = o.isVideo === true;
  const out: Record<string, unknown> = {};
  const imgs: PrImageList = { isVideo, originals: [], prior: sizes(o, 'priorImageSizes') };
  try {
    if (isVideo) {
      const v = obj(o.video, 'input.video');
      const frameSize = resizeWithPreset(size(v.frameSize, 'input.video.frameSize'), 'video_frame');
      const numFrames = paddedFrameCount(num(v, 'numFrames'));
      out.videoFrameSize = frameSize;
      out.videoNumFrames = numFrames;
      imgs.video = { frameSize, numFrames };
    } else {
      const preset = presetFor('initial', mode)!;
      imgs.originals = sizes(o, 'originalImageSizes').map((s) => resizeWithPreset(s, preset));
      out.initialImageSizes = imgs.originals;
    }
  } catch (e) {
    const err = asPyError(e);
    if (!err) throw e;
    out.error = err;
    return out;
  }
  const r = readCall(str(o, 'toolCallJson'), PR_OPERATIONS);
  if (r.error) {
    out.imagesBefore = prImageCount(imgs);
    out.error = r.error;
    out.observation = prErrorObservation(r.error.message);
    return out;
  }
  const { trace } = prPlanTurn(r.name!, r.arguments!, imgs, mode);
  return { ...out, ...traceToExpected(trace) };
}

function toolcallSuite(input: unknown): unknown {
  const o = obj(input, 'input');
  const prefix = str(o, 'prefix');
  const response = str(o, 'response');
  const isToolTurn = prIsToolTurn(response);
  if (!isToolTurn) return { isToolTurn, parsed: null, error: null, observation: null };
  const res = pixelReasonerDialect.parseCall(prefix, response);
  if (res.ok) {
    return { isToolTurn, parsed: { name: res.call.name, arguments: res.call.arguments }, error: null, observation: null };
  }
  return { isToolTurn, parsed: res.parsed ?? null, error: res.error, observation: res.observation };
}

export const protocolSuites: Record<string, (input: unknown) => unknown> = {
  smart_resize: smartResizeSuite,
  crop: toolTurnSuite,
  select_frames: toolTurnSuite,
  toolcall: toolcallSuite,
};

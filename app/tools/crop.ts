/**
 * Crop geometry over sizes (no pixels): the reference's box rule, padding, clamping and integer box,
 * in the reference's own operation order so every double matches.
 *
 * - Pixel Reasoner `crop_image_normalized` (EM:150-167): all four values `< 1` → normalized, else
 *   absolute px divided by the image size; pad 0.1 outward; clamp `min(max(0, v), 1)`; multiply back;
 *   Pillow `Image.crop` with floats (reversed box → ValueError; `int(round(v))` half-to-even);
 *   `assert w > 28 and h > 28`.
 * - verl-tool `crop` (VT servers/tools/pixel_reasoner.py): pad `min(0.1, 600/W)`, `int()` truncation,
 *   no size assertion.
 * - DeepEyes `image_zoom_in_tool`: absolute px on the raw image, clamp, validity rule.
 *
 * Box values are parsed JSON (`PyValue`), because `bbox_2d[0] < 1` and `float(bbox_2d[2])` behave as
 * Python does on whatever the model wrote. Failures throw `PyException`s with CPython's text; the
 * trace holds every value computed before the failure.
 */
import { PyException, type PyValue } from '../pycompat/repr';
import { pyInt, roundHalfEven } from '../pycompat/round';
import { pyCompare, pyGetItem, pyIter, pyToFloat } from './pyops';
import { resizeWithPreset, type ResizePresetName } from './smartResize';

export type Box4 = [number, number, number, number];

/** Everything the crop computed, step by step (a field is set once its step finished). */
export interface CropTrace {
  bboxMode?: 'normalized' | 'absolute';
  /** Box after padding and clamping to [0,1] (the `normalized_*` values). */
  normalizedBox?: Box4;
  /** The box handed to `Image.crop` (floats for PR, ints for VT). */
  cropBoxFloat?: Box4;
  /** The integer pixel box actually cut. */
  cropBox?: Box4;
  cropSize?: [number, number];
  /** Size after the zoom resize. */
  resizedSize?: [number, number];
}

/** The box as the model wrote it, as doubles (a non-number entry or a missing one is NaN). */
export function bboxRawOf(bbox: PyValue): Box4 {
  const at = (i: number): number => {
    if (!Array.isArray(bbox)) return NaN;
    const v = bbox[i];
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'boolean') return v ? 1 : 0;
    return NaN;
  };
  return [at(0), at(1), at(2), at(3)];
}

/** Python `min(max(0, v), 1)` (returns the int 0/1 where Python would, never -0). */
export function clamp01(v: number): number {
  const m = v > 0 ? v : 0; // max(0, v): v only if v > 0 (NaN → 0)
  return 1 < m ? 1 : m; // min(m, 1): 1 only if 1 < m
}

/** Evaluate `b[0] < 1 and b[1] < 1 and b[2] < 1 and b[3] < 1` lazily, as Python does. */
export function allBelowOne(bbox: PyValue): boolean {
  for (let i = 0n; i < 4n; i++) {
    if (!pyCompare(pyGetItem(bbox, i), '<', 1n)) return false;
  }
  return true;
}

/** The padded, clamped normalized box (steps shared by PR and VT). */
function normalizedPadded(bbox: PyValue, w: number, h: number, padX: number, padY: number, trace: CropTrace): Box4 {
  const normalized = allBelowOne(bbox);
  trace.bboxMode = normalized ? 'normalized' : 'absolute';
  const f = (i: bigint): number => pyToFloat(pyGetItem(bbox, i));
  let raw: Box4;
  if (normalized) {
    const a = f(0n) - padX;
    const b = f(1n) - padY;
    const c = f(2n) + padX;
    const d = f(3n) + padY;
    raw = [a, b, c, d];
  } else {
    const a = f(0n) / w - padX;
    const b = f(1n) / h - padY;
    const c = f(2n) / w + padX;
    const d = f(3n) / h + padY;
    raw = [a, b, c, d];
  }
  const box: Box4 = [clamp01(raw[0]), clamp01(raw[1]), clamp01(raw[2]), clamp01(raw[3])];
  trace.normalizedBox = box;
  return box;
}

/** Pillow ≥ 9.1 `Image.crop(box)`: reversed coordinates raise before anything is cut. */
function pillowCropCheck(box: Box4): void {
  if (box[2] < box[0]) throw new PyException('ValueError', "Coordinate 'right' is less than 'left'");
  if (box[3] < box[1]) throw new PyException('ValueError', "Coordinate 'lower' is less than 'upper'");
}

export interface PrCropOptions {
  /** Resize preset for the zoom result (`eval_zoom` or `train_zoom`); null = no resize step. */
  zoomPreset: ResizePresetName | null;
  /** Outward padding in normalized units (reference: 0.1). */
  padding?: number;
}

/**
 * Pixel Reasoner `crop_image_normalized` on an image of `size` = [W, H] (the size the tool sees, i.e.
 * after the initial resize), followed by `resize_cropped`. Fills `trace`; throws `PyException`.
 */
export function prCropGeometry(size: readonly [number, number], bbox: PyValue, opts: PrCropOptions, trace: CropTrace = {}): Required<Pick<CropTrace, 'bboxMode' | 'normalizedBox' | 'cropBoxFloat' | 'cropBox' | 'cropSize'>> & CropTrace {
  const [w, h] = size;
  const padding = opts.padding ?? 0.1;
  const [x1, y1, x2, y2] = normalizedPadded(bbox, w, h, padding, padding, trace);
  const floatBox: Box4 = [x1 * w, y1 * h, x2 * w, y2 * h];
  trace.cropBoxFloat = floatBox;
  pillowCropCheck(floatBox);
  const intBox = floatBox.map(roundHalfEven) as Box4;
  trace.cropBox = intBox;
  const cw = intBox[2] - intBox[0];
  const ch = intBox[3] - intBox[1];
  trace.cropSize = [cw, ch];
  if (!(cw > 28 && ch > 28)) throw new PyException('AssertionError', `Cropped image is too small: ${cw}x${ch}`);
  if (opts.zoomPreset) trace.resizedSize = resizeWithPreset([cw, ch], opts.zoomPreset);
  return trace as ReturnType<typeof prCropGeometry>;
}

/**
 * verl-tool `crop()` then `process_image` (qwen-vl-utils `fetch_image` with its default bounds):
 * padding `min(0.1, 600/W)`, `int()` truncation, no minimum size (a 0-px side fails in the resize).
 */
export function vtCropGeometry(size: readonly [number, number], bbox: PyValue, trace: CropTrace = {}): CropTrace & { resizedSize: [number, number] } {
  const [w, h] = size;
  const padX = Math.min(0.1, 600.0 / w);
  const padY = Math.min(0.1, 600.0 / h);
  const [x1, y1, x2, y2] = normalizedPadded(bbox, w, h, padX, padY, trace);
  const box: Box4 = [pyInt(x1 * w), pyInt(y1 * h), pyInt(x2 * w), pyInt(y2 * h)];
  trace.cropBoxFloat = box;
  pillowCropCheck(box);
  trace.cropBox = box;
  const cw = box[2] - box[0];
  const ch = box[3] - box[1];
  trace.cropSize = [cw, ch];
  trace.resizedSize = resizeWithPreset([cw, ch], 'qwen_default');
  return trace as CropTrace & { resizedSize: [number, number] };
}

/**
 * DeepEyes `image_zoom_in_tool` (DE visual_toolbox_v2.py `maybe_resize_bbox` + `validate_bbox`) on the
 * raw (un-resized) first image: `left = max(0, l)`, `top = max(0, t)`, `right = min(W, r)`,
 * `bottom = min(H, b)`; valid iff left < right, top < bottom, aspect ≤ 100 and min side > 30 (so the
 * 28-px enlargement branch is unreachable), else `ValueError("ZOOM IN ARGUMENTS ARE INVALID")`; then
 * Pillow `crop` (half-to-even rounding). No resize by the tool.
 */
export function deepEyesCropGeometry(size: readonly [number, number], bbox: PyValue, trace: CropTrace = {}): CropTrace & { cropBox: Box4; cropSize: [number, number] } {
  const [w, h] = size;
  trace.bboxMode = 'absolute';
  // maybe_resize_bbox(*bbox): exactly four positional values.
  const items = pyIter(bbox);
  if (items.length !== 4) {
    if (items.length > 4) {
      throw new PyException('TypeError', `VisualToolBoxV2.maybe_resize_bbox() takes 5 positional arguments but ${items.length + 1} were given`);
    }
    const missing = ['left', 'top', 'right', 'bottom'].slice(items.length).map((n) => `'${n}'`);
    const list = missing.length === 1 ? missing[0]! : missing.length === 2 ? missing.join(' and ') : `${missing.slice(0, -1).join(', ')}, and ${missing[missing.length - 1]!}`;
    throw new PyException(
      'TypeError',
      `VisualToolBoxV2.maybe_resize_bbox() missing ${missing.length} required positional argument${missing.length > 1 ? 's' : ''}: ${list}`,
    );
  }
  const [l, t, r, b] = items as [PyValue, PyValue, PyValue, PyValue];
  const left = pyCompare(l, '>', 0n) ? l : 0n; // max(0, left)
  const top = pyCompare(t, '>', 0n) ? t : 0n;
  const right = pyCompare(r, '<', BigInt(w)) ? r : BigInt(w); // min(width, right)
  const bottom = pyCompare(b, '<', BigInt(h)) ? b : BigInt(h);
  const box = [left, top, right, bottom].map((v) => pyToFloat(v)) as Box4;
  const bw = box[2] - box[0];
  const bh = box[3] - box[1];
  const valid = box[0] < box[2] && box[3] > box[1] && Math.max(bh, bw) / Math.min(bh, bw) <= 100 && Math.min(bh, bw) > 30;
  if (!valid) throw new PyException('ValueError', 'ZOOM IN ARGUMENTS ARE INVALID');
  trace.cropBoxFloat = box;
  trace.normalizedBox = [box[0] / w, box[1] / h, box[2] / w, box[3] / h];
  const intBox = box.map(roundHalfEven) as Box4;
  trace.cropBox = intBox;
  trace.cropSize = [intBox[2] - intBox[0], intBox[3] - intBox[1]];
  trace.resizedSize = trace.cropSize;
  return trace as CropTrace & { cropBox: Box4; cropSize: [number, number] };
}

/**
 * `smart_resize` exactly as qwen-vl-utils (QwenLM/Qwen2.5-VL@f0af2996 vision_process.py), plus the
 * pixel bounds Pixel Reasoner uses at each step.
 */
import { pyFloatRepr } from '../pycompat/float';
import { PyException } from '../pycompat/repr';
import { pyCeil, pyFloor, roundHalfEven } from '../pycompat/round';

export const IMAGE_FACTOR = 28;
export const MAX_RATIO = 200;
const PX = 28 * 28;

/** Named pixel bounds (min/max pixels) of the reference. */
export const RESIZE_PRESETS = {
  /** Initial image resize, eval (`eval_minpixel`/`eval_maxpixel`, EM:1951-1962). */
  eval_initial: { minPixels: 256 * PX, maxPixels: 8000 * PX },
  /** Initial image resize, train (`raw_maxsize`). */
  train_initial: { minPixels: 4 * PX, maxPixels: 2000 * PX },
  /** Zoom (crop) result, eval. */
  eval_zoom: { minPixels: 256 * PX, maxPixels: 5120 * PX },
  /** Zoom (crop) result, train (`zoom_maxsize`). */
  train_zoom: { minPixels: 4 * PX, maxPixels: 1000 * PX },
  /** Selected frames, train (`select_maxsize`); eval keeps the frames as they are. */
  train_select: { minPixels: 4 * PX, maxPixels: 400 * PX },
  /** Video frames (`data_processor.py:423`, min = qwen-vl-utils MIN_PIXELS). */
  video_frame: { minPixels: 4 * PX, maxPixels: 512 * PX },
  /** qwen-vl-utils defaults (MIN_PIXELS / MAX_PIXELS). */
  qwen_default: { minPixels: 4 * PX, maxPixels: 16384 * PX },
} as const satisfies Record<string, { minPixels: number; maxPixels: number }>;

export type ResizePresetName = keyof typeof RESIZE_PRESETS;

export interface ResizedSize {
  height: number;
  width: number;
}

/**
 * `smart_resize(height, width, factor, min_pixels, max_pixels)` → `{height, width}`.
 * Throws a `PyException` ValueError `absolute aspect ratio must be smaller than 200, got <float repr>`
 * when the ratio exceeds 200 (and ZeroDivisionError for a zero side, as Python would).
 */
export function smartResize(
  height: number,
  width: number,
  factor: number = IMAGE_FACTOR,
  minPixels: number = RESIZE_PRESETS.qwen_default.minPixels,
  maxPixels: number = RESIZE_PRESETS.qwen_default.maxPixels,
): ResizedSize {
  const lo = Math.min(height, width);
  const hi = Math.max(height, width);
  if (lo === 0) throw new PyException('ZeroDivisionError', 'division by zero');
  const ratio = hi / lo;
  if (ratio > MAX_RATIO) {
    throw new PyException('ValueError', `absolute aspect ratio must be smaller than ${MAX_RATIO}, got ${pyFloatRepr(ratio)}`);
  }
  let hBar = Math.max(factor, roundHalfEven(height / factor) * factor);
  let wBar = Math.max(factor, roundHalfEven(width / factor) * factor);
  if (hBar * wBar > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    hBar = pyFloor(height / beta / factor) * factor;
    wBar = pyFloor(width / beta / factor) * factor;
  } else if (hBar * wBar < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    hBar = pyCeil((height * beta) / factor) * factor;
    wBar = pyCeil((width * beta) / factor) * factor;
  }
  return { height: hBar, width: wBar };
}

/** `smart_resize` with a named preset, on a `[width, height]` pair; returns `[width, height]`. */
export function resizeWithPreset(size: readonly [number, number], preset: ResizePresetName): [number, number] {
  const p = RESIZE_PRESETS[preset];
  const r = smartResize(size[1], size[0], IMAGE_FACTOR, p.minPixels, p.maxPixels);
  return [r.width, r.height];
}

/** Which preset each step uses in eval vs train mode (`null` = no resize). */
export function presetFor(
  step: 'initial' | 'zoom' | 'select' | 'video_frame',
  mode: 'eval' | 'train',
): ResizePresetName | null {
  switch (step) {
    case 'initial':
      return mode === 'eval' ? 'eval_initial' : 'train_initial';
    case 'zoom':
      return mode === 'eval' ? 'eval_zoom' : 'train_zoom';
    case 'select':
      return mode === 'eval' ? null : 'train_select';
    case 'video_frame':
      return 'video_frame';
  }
}

/** Frames of a frame-list video are padded (last frame repeated) to an even count (QVU:326-328). */
export function paddedFrameCount(n: number): number {
  return Math.ceil(n / 2) * 2;
}

import { describe, expect, it } from 'vitest';
import { pyFailure } from '../../tests/support/pyError';
import { paddedFrameCount, presetFor, RESIZE_PRESETS, resizeWithPreset, smartResize } from './smartResize';

const resizeError = (h: number, w: number): unknown => pyFailure(() => smartResize(h, w));

describe('smartResize (qwen-vl-utils)', () => {
  it('has the reference presets in pixels', () => {
    expect(RESIZE_PRESETS.eval_initial).toEqual({ minPixels: 200704, maxPixels: 6272000 });
    expect(RESIZE_PRESETS.train_zoom).toEqual({ minPixels: 3136, maxPixels: 784000 });
    expect(RESIZE_PRESETS.video_frame.maxPixels).toBe(512 * 784);
    expect(presetFor('select', 'eval')).toBeNull();
    expect(presetFor('zoom', 'train')).toBe('train_zoom');
  });

  it('rounds each side to a multiple of 28 half-to-even', () => {
    // 70/28 = 2.5 -> 2 (even), 42/28 = 1.5 -> 2; Math.round would give 84 for 70.
    expect(smartResize(70, 4000, 28, 200704, 4014080)).toEqual({ height: 56, width: 4004 });
    expect(smartResize(42, 42)).toEqual({ height: 56, width: 56 });
    expect(smartResize(2814, 1974, 28, 200704, 6272000)).toEqual({ height: 2800, width: 1960 });
  });

  it('scales down past max_pixels with floor and up below min_pixels with ceil', () => {
    expect(smartResize(8192, 8192, 28, 200704, 6272000)).toEqual({ height: 2492, width: 2492 });
    expect(smartResize(14, 14, 28, 200704, 4014080)).toEqual({ height: 448, width: 448 });
    // 1793x2240 rounds to the same bars as 1792x2240: no downscale although h*w > max.
    expect(smartResize(1793, 2240, 28, 200704, 4014080)).toEqual({ height: 1792, width: 2240 });
  });

  it('raises ValueError with the Python float repr of the ratio', () => {
    expect(resizeError(1, 201)).toEqual({ type: 'ValueError', message: 'absolute aspect ratio must be smaller than 200, got 201.0' });
    expect(resizeError(14, 4000)).toEqual({ type: 'ValueError', message: 'absolute aspect ratio must be smaller than 200, got 285.7142857142857' });
    expect(resizeError(5600, 28)).toBeNull(); // exactly 200 is allowed
    expect(resizeError(0, 10)).toEqual({ type: 'ZeroDivisionError', message: 'division by zero' });
  });

  it('works on [w, h] pairs with presets and pads frame counts to even', () => {
    expect(resizeWithPreset([1280, 720], 'video_frame')).toEqual([840, 448]);
    expect(resizeWithPreset([840, 448], 'train_select')).toEqual([756, 392]);
    expect([1, 2, 15, 16].map(paddedFrameCount)).toEqual([2, 2, 16, 16]);
  });
});

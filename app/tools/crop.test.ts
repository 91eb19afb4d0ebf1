import { describe, expect, it } from 'vitest';
import { pyFailure } from '../../tests/support/pyError';
import { pyJsonLoads } from '../pycompat/json';
import { allBelowOne, clamp01, deepEyesCropGeometry, prCropGeometry, vtCropGeometry, type CropTrace } from './crop';

const j = (s: string) => pyJsonLoads(s);
const failure = pyFailure;

describe('Pixel Reasoner crop geometry', () => {
  it('treats a box as normalized only when all four values are < 1', () => {
    expect(allBelowOne(j('[0.1, 0.2, 0.5, 0.6]'))).toBe(true);
    expect(allBelowOne(j('[0.5, 0.5, 1, 1]'))).toBe(false);
    expect(allBelowOne(j('[-5, -5, 0.5, 0.5]'))).toBe(true);
  });

  it('pads in the reference order and rounds the float box half to even', () => {
    // (0.695 - 0.1) * 700 = 416.5 exactly -> 416
    const t = prCropGeometry([700, 840], j('[0.695, 0.3, 0.95, 0.6]'), { zoomPreset: 'eval_zoom' });
    expect(t.normalizedBox).toEqual([0.595, 0.19999999999999998, 1, 0.7]);
    expect(t.cropBoxFloat).toEqual([416.5, 168, 700, 588]);
    expect(t.cropBox).toEqual([416, 168, 700, 588]);
    expect(t.resizedSize).toEqual([392, 560]);
    // absolute: (70.5/700 - 0.1)*700 is 0.4999999999999963, not 0.5
    const a = prCropGeometry([700, 840], j('[70.5, 100, 370.5, 400]'), { zoomPreset: 'eval_zoom' });
    expect(a.bboxMode).toBe('absolute');
    expect(a.cropBoxFloat[0]).toBe(0.4999999999999963);
    expect(a.cropBox[0]).toBe(0);
  });

  it('clamps like min(max(0, v), 1), NaN included', () => {
    expect([clamp01(-3), clamp01(NaN), clamp01(Infinity), clamp01(0.25)]).toEqual([0, 0, 1, 0.25]);
    const t = prCropGeometry([1008, 812], j('[-100, -100, 5000, 5000]'), { zoomPreset: 'eval_zoom' });
    expect(t.cropBox).toEqual([0, 0, 1008, 812]);
  });

  it('fails as Pillow and the assertion do, keeping the steps done so far', () => {
    const trace: CropTrace = {};
    expect(failure(() => prCropGeometry([1008, 812], j('[0.9, 0.9, 0.1, 0.1]'), { zoomPreset: 'eval_zoom' }, trace))).toEqual({
      type: 'ValueError',
      message: "Coordinate 'right' is less than 'left'",
    });
    expect(trace.cropBoxFloat).toEqual([806.4000000000001, 649.6, 201.60000000000002, 162.4]);
    expect(trace.cropBox).toBeUndefined();
    expect(failure(() => prCropGeometry([140, 140], j('[0.0, 0.0, 0.1, 0.1]'), { zoomPreset: 'train_zoom' }))).toEqual({
      type: 'AssertionError',
      message: 'Cropped image is too small: 28x28',
    });
    expect(failure(() => prCropGeometry([100, 100], j('[0.1, 0.2, 0.5]'), { zoomPreset: null }))).toEqual({ type: 'IndexError', message: 'list index out of range' });
    expect(failure(() => prCropGeometry([100, 100], j('[5, "x", 1, 1]'), { zoomPreset: null }))).toEqual({
      type: 'ValueError',
      message: "could not convert string to float: 'x'",
    });
    expect(failure(() => prCropGeometry([100, 100], j('[0.1, null, 1, 1]'), { zoomPreset: null }))).toEqual({
      type: 'TypeError',
      message: "'<' not supported between instances of 'NoneType' and 'int'",
    });
    expect(failure(() => prCropGeometry([100, 100], j('{"0": 1}'), { zoomPreset: null }))).toEqual({ type: 'KeyError', message: '0' });
  });
});

describe('verl-tool crop geometry', () => {
  it('pads min(0.1, 600/W) and truncates with int()', () => {
    const t = vtCropGeometry([8000, 1000], j('[0.5, 0.5, 0.6, 0.6]'));
    // 600/8000 = 0.075 < 0.1 horizontally, 0.1 vertically; int(0.6749999999999999 * 8000) = 5399
    expect(t.normalizedBox).toEqual([0.425, 0.4, 0.6749999999999999, 0.7]);
    expect(t.cropBox).toEqual([3400, 400, 5399, 700]);
    // (0.2349 - 0.1) * 1000 = 134.9: int() gives 134 where PR's round() gives 135
    expect(vtCropGeometry([1000, 1000], j('[0.2349, 0.2, 0.5, 0.5]')).cropBox![0]).toBe(134);
    expect(prCropGeometry([1000, 1000], j('[0.2349, 0.2, 0.5, 0.5]'), { zoomPreset: null }).cropBox[0]).toBe(135);
  });
});

describe('DeepEyes zoom geometry', () => {
  it('clamps absolute pixels and requires > 30 px and aspect <= 100', () => {
    const t = deepEyesCropGeometry([640, 480], j('[-10, 20, 100.5, 200]'));
    expect(t.cropBox).toEqual([0, 20, 100, 200]);
    expect(failure(() => deepEyesCropGeometry([640, 480], j('[10, 10, 40, 40]')))).toEqual({ type: 'ValueError', message: 'ZOOM IN ARGUMENTS ARE INVALID' });
    expect(failure(() => deepEyesCropGeometry([640, 480], j('[10, 10, 41, 41]')))).toBeNull();
    expect(failure(() => deepEyesCropGeometry([640, 480], j('[1, 2, 3]')))).toEqual({
      type: 'TypeError',
      message: "VisualToolBoxV2.maybe_resize_bbox() missing 1 required positional argument: 'bottom'",
    });
  });
});

import { describe, expect, it } from 'vitest';
import { pyFailure } from '../../tests/support/pyError';
import { pyJsonLoads } from '../pycompat/json';
import { prImageCount, prResolveCropTarget, prSelectFrames, type PrImageList, type SelectionTrace } from './selection';

const j = (s: string) => pyJsonLoads(s);
const failure = pyFailure;
const image: PrImageList = { isVideo: false, originals: [[1008, 812], [644, 476]], prior: [[812, 560]] };
const videoOnly: PrImageList = { isVideo: true, originals: [], video: { frameSize: [644, 364], numFrames: 16 }, prior: [] };
const videoAfter: PrImageList = { ...videoOnly, prior: [[644, 364], [300, 200]] };

describe('crop target resolution', () => {
  it('counts a video as one image', () => {
    expect(prImageCount(image)).toBe(3);
    expect(prImageCount(videoAfter)).toBe(3);
  });

  it('indexes originals first (negative indexes from the raw list), then prior images', () => {
    expect(prResolveCropTarget(image, 1n)).toMatchObject({ source: 'raw', index: 0n, size: [1008, 812] });
    expect(prResolveCropTarget(image, -1n)).toMatchObject({ source: 'raw', index: -2n, size: [1008, 812], position: 0 });
    expect(prResolveCropTarget(image, 3n)).toMatchObject({ source: 'images', index: 2n, size: [812, 560], list: 'prior', position: 0 });
    expect(failure(() => prResolveCropTarget(image, 4n))).toEqual({
      type: 'AssertionError',
      message: 'Execution Error: Incorrect `target_image` argument in `crop_image_normalized` operation. You can only pick an image within [1,3]',
    });
  });

  it('rejects a float index even when it is integral (int-vs-float)', () => {
    const trace: SelectionTrace = {};
    expect(failure(() => prResolveCropTarget(image, j('3.0'), trace))).toEqual({ type: 'TypeError', message: 'list indices must be integers or slices, not float' });
    expect(trace.selectedImage).toEqual({ source: 'images', index: 2 });
    expect(failure(() => prResolveCropTarget(image, '1'))).toEqual({ type: 'TypeError', message: "unsupported operand type(s) for -: 'str' and 'int'" });
  });

  it('picks video frames when only the video exists, later images otherwise', () => {
    expect(prResolveCropTarget(videoOnly, 0n)).toMatchObject({ source: 'videoFrame', index: -1n, list: 'videoFrames', position: 15 });
    expect(failure(() => prResolveCropTarget(videoOnly, 17n))).toEqual({
      type: 'AssertionError',
      message:
        'Execution Error: Incorrect `target_image` argument in `crop_image_normalized` operation. You can only pick an image **from** the video within [1,16], but the current argument `target_image=17`.',
    });
    expect(prResolveCropTarget(videoAfter, 3n)).toMatchObject({ source: 'images', size: [300, 200], list: 'prior', position: 1 });
    expect(failure(() => prResolveCropTarget(videoAfter, 1n))).toEqual({
      type: 'AssertionError',
      message:
        'Execution Error: Incorrect `target_image` argument in `crop_image_normalized` operation. You can only pick an image within range [2,3], but the current argument `target_image=1`.',
    });
  });
});

describe('select_frames', () => {
  it('selects with Python indices and sizes frames per mode', () => {
    const r = prSelectFrames(videoOnly, j('{"target_frames": [9, 3, -3, 2]}'), 'eval');
    expect(r.indices).toEqual([8n, 2n, -4n, 1n]);
    expect(r.positions).toEqual([8, 2, 12, 1]);
    expect(r.frameSize).toEqual([644, 364]);
    expect(prSelectFrames(videoOnly, j('{"target_frames": [1]}'), 'train').frameSize).toEqual([644, 364]);
  });

  it('fails with the reference messages, image check first', () => {
    expect(failure(() => prSelectFrames(image, j('{}'), 'eval'))).toMatchObject({ type: 'AssertionError', message: expect.stringContaining('from **image** not **video**') });
    expect(failure(() => prSelectFrames(videoOnly, j('{"target_frames": [3, 17.0]}'), 'eval'))).toEqual({
      type: 'AssertionError',
      message: 'Execution Error: There are 16 frames numbered in range [1,16]. Your selection `target_frames=[3, 17.0]` is out of range.',
    });
    expect(failure(() => prSelectFrames(videoOnly, j('{"target_frames": [1,2,3,4,5,6,7,8,9]}'), 'eval'))).toMatchObject({ message: expect.stringContaining('You have selected 9 frames') });
    expect(failure(() => prSelectFrames(videoOnly, j('{"target_frames": []}'), 'eval'))).toEqual({ type: 'ValueError', message: 'max() arg is an empty sequence' });
    expect(failure(() => prSelectFrames(videoOnly, j('{"target_frames": [1, "2"]}'), 'eval'))).toEqual({
      type: 'TypeError',
      message: "'>' not supported between instances of 'str' and 'int'",
    });
    expect(failure(() => prSelectFrames(videoOnly, j('{"target_frames": [2.0]}'), 'eval'))).toEqual({ type: 'TypeError', message: 'list indices must be integers or slices, not float' });
  });
});

/**
 * Which image a call reads, and `select_frames`, as Pixel Reasoner's `execute_tool` (EM:1169-1241)
 * decides it, over sizes only.
 *
 * The reference keeps `images` = [original(s)…, crops/frames…] for an image question and
 * `images` = [[video frames], crops/frames…] for a video (the video counts as one entry), plus
 * `rawimages` = the originals. `target_image` is 1-based; Python's negative indexing applies.
 */
import { PyException, pyStr, type PyValue } from '../pycompat/repr';
import { pyCompare, pyGetItem, pyIter, pyLen, pyMax, pyMinusOne, resolveIndex } from './pyops';
import { resizeWithPreset } from './smartResize';

export type Size = [number, number];

/** The episode's images as the reference tool sees them (sizes after the initial resize). */
export interface PrImageList {
  isVideo: boolean;
  /** Question images after the initial resize (image case). */
  originals: Size[];
  /** Video case: frame size after resize and the frame count after padding to even. */
  video?: { frameSize: Size; numFrames: number };
  /** Images appended by earlier calls (crops after zoom resize, selected frames). */
  prior: Size[];
}

/** `len(images)` in the reference (a video counts as one entry). */
export function prImageCount(imgs: PrImageList): number {
  return (imgs.isVideo ? 1 : imgs.originals.length) + imgs.prior.length;
}

/** The Python index the reference used, as a number (ints become doubles). */
export type PyIndex = bigint | number;

export interface SelectionTrace {
  selectedImage?: { source: 'raw' | 'images' | 'videoFrame'; index: PyIndex; size?: Size };
}

/** Where a resolved image lives in the loop's lists (0-based, non-negative). */
export interface ResolvedImage {
  source: 'raw' | 'images' | 'videoFrame';
  index: PyIndex;
  size: Size;
  list: 'originals' | 'prior' | 'videoFrames';
  position: number;
}

const CROP_ERR = 'Execution Error: Incorrect `target_image` argument in `crop_image_normalized` operation.';

/**
 * The crop target for `target_image = tgt` (EM:1206-1236). Fills `trace.selectedImage` as soon as the
 * list and index are known; throws `PyException` (AssertionError/TypeError/IndexError) as Python does.
 */
export function prResolveCropTarget(imgs: PrImageList, tgt: PyValue, trace: SelectionTrace = {}): ResolvedImage {
  const nImages = prImageCount(imgs);
  if (imgs.isVideo) {
    const video = imgs.video;
    if (!video) throw new Error('prResolveCropTarget: video episode without video frames');
    if (imgs.prior.length === 0) {
      const index = pyMinusOne(tgt);
      if (!pyCompare(index, '<', BigInt(video.numFrames))) {
        throw new PyException(
          'AssertionError',
          `${CROP_ERR} You can only pick an image **from** the video within [1,${video.numFrames}], but the current argument \`target_image=${pyStr(tgt)}\`.`,
        );
      }
      trace.selectedImage = { source: 'videoFrame', index };
      const position = resolveIndex(video.numFrames, index);
      trace.selectedImage.size = video.frameSize;
      return { source: 'videoFrame', index, size: video.frameSize, list: 'videoFrames', position };
    }
    const index = pyMinusOne(tgt);
    if (!pyCompare(index, '>=', 1n)) {
      throw new PyException(
        'AssertionError',
        `${CROP_ERR} You can only pick an image within range [2,${nImages}], but the current argument \`target_image=${pyStr(tgt)}\`.`,
      );
    }
    trace.selectedImage = { source: 'images', index };
    const position = resolveIndex(nImages, index);
    // position >= 1 here: entry 0 is the video itself.
    const size = imgs.prior[position - 1]!;
    trace.selectedImage.size = size;
    return { source: 'images', index, size, list: 'prior', position: position - 1 };
  }
  const index = pyMinusOne(tgt);
  if (!pyCompare(index, '<', BigInt(nImages))) {
    throw new PyException('AssertionError', `${CROP_ERR} You can only pick an image within [1,${nImages}]`);
  }
  const nRaw = imgs.originals.length;
  if (pyCompare(index, '<', BigInt(nRaw))) {
    trace.selectedImage = { source: 'raw', index };
    const position = resolveIndex(nRaw, index);
    const size = imgs.originals[position]!;
    trace.selectedImage.size = size;
    return { source: 'raw', index, size, list: 'originals', position };
  }
  trace.selectedImage = { source: 'images', index };
  const position = resolveIndex(nImages, index);
  const size = position < nRaw ? imgs.originals[position]! : imgs.prior[position - nRaw]!;
  trace.selectedImage.size = size;
  return position < nRaw
    ? { source: 'images', index, size, list: 'originals', position }
    : { source: 'images', index, size, list: 'prior', position: position - nRaw };
}

export interface SelectFramesTrace {
  /** The 0-based Python indices (`x - 1`, may be negative). */
  selectedFrameIndices?: PyIndex[];
  frameSize?: Size;
}

export interface SelectFramesResult {
  indices: PyIndex[];
  /** Non-negative positions into the video's frame list. */
  positions: number[];
  frameSize: Size;
}

/**
 * `execute_tool(..., 'select_frames')` then the observation's frame sizing (EM:1170-1205, 2281-2297).
 * Eval keeps the frames at the video frame size; train resizes them with `train_select`.
 */
export function prSelectFrames(
  imgs: PrImageList,
  args: PyValue,
  mode: 'eval' | 'train',
  trace: SelectFramesTrace = {},
): SelectFramesResult {
  if (!imgs.isVideo) {
    throw new PyException(
      'AssertionError',
      'Execution Error: You attempted to `select_frames` from **image** not **video**. You should use `crop_image_normalized` instead for inspecting **image**.',
    );
  }
  const video = imgs.video;
  if (!video) throw new Error('prSelectFrames: video episode without video frames');
  const tgt = pyGetItem(args, 'target_frames');
  const n = pyLen(tgt);
  if (n > 8) {
    throw new PyException(
      'AssertionError',
      `Execution Error: You have selected ${n} frames in total. Think again which frames you need to check in details (no more than 8 frames)`,
    );
  }
  if (pyCompare(pyMax(tgt), '>', BigInt(video.numFrames))) {
    throw new PyException(
      'AssertionError',
      `Execution Error: There are ${video.numFrames} frames numbered in range [1,${video.numFrames}]. Your selection \`target_frames=${pyStr(tgt)}\` is out of range.`,
    );
  }
  const indices = pyIter(tgt).map(pyMinusOne);
  const positions = indices.map((i) => resolveIndex(video.numFrames, i));
  trace.selectedFrameIndices = indices;
  const frameSize = mode === 'eval' ? video.frameSize : resizeWithPreset(video.frameSize, 'train_select');
  trace.frameSize = frameSize;
  return { indices, positions, frameSize };
}

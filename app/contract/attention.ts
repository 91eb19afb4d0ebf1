/**
 * Attention maps as the UI, the HTML export and `loupe attention` read them, and the one geometry that places a map
 * on an image. Plain zod and arithmetic, no Node: the renderer imports this file.
 *
 * A map is a grid of `grid.h` × `grid.w` cells over the image the vision tower saw (the episode image after the
 * engine's smart_resize): cell (r, c) is merged vision token r * grid.w + c and covers 28 × 28 resized pixels,
 * i.e. the normalized rectangle [c / w, (c + 1) / w) × [r / h, (r + 1) / h) of that image (smart_resize scales the
 * whole image, so normalized coordinates survive it). A crop is placed on its parent through the call's `cropBox`
 * (pixels of the parent image, the box the crop tool cut) and the zoom resize, as the tool did it; repeated up to an
 * initial image, then scaled to the original file.
 */
import { z } from 'zod';
import type { Box, Trajectory } from './trajectory';

export const AttentionMapsSchema = z.object({
  /** Which turn and which image (0-based in the episode's image list: initial images, then produced ones). */
  turnIndex: z.number().int().nonnegative(),
  imageIndex: z.number().int().nonnegative(),
  grid: z.object({ h: z.number().int().positive(), w: z.number().int().positive() }),
  /** [width, height] the vision tower saw. */
  imageSize: z.tuple([z.number().int().positive(), z.number().int().positive()]),
  /** One normalized map (sums to 1) per text layer, grid.h * grid.w values each, row-major. */
  layers: z.array(z.array(z.number())),
  /** Attention mass the query tokens gave to this image, per layer. */
  imageMass: z.array(z.number()),
  /** The query tokens (the box the model wrote) as text. */
  queryText: z.string(),
  queryTokens: z.number().int().nonnegative(),
});
export type AttentionMaps = z.infer<typeof AttentionMapsSchema>;

/** Layer choice: an index, or the mean over layers. */
export type LayerChoice = number | 'mean';

/** The map of one layer, or the mean of all layers (each normalized, so the mean sums to 1 too). */
export function layerMap(m: Pick<AttentionMaps, 'layers'>, choice: LayerChoice): number[] {
  if (choice !== 'mean') return m.layers[choice] ?? [];
  const n = m.layers[0]?.length ?? 0;
  const out = new Array<number>(n).fill(0);
  for (const l of m.layers) for (let i = 0; i < n; i++) out[i]! += (l[i] ?? 0) / m.layers.length;
  return out;
}

/** Cell (r, c) as a normalized [x1, y1, x2, y2] of the map's image. */
export function cellNorm(grid: { h: number; w: number }, r: number, c: number): Box {
  return [c / grid.w, r / grid.h, (c + 1) / grid.w, (r + 1) / grid.h];
}

/** An affine map from one image's pixels to another's: x' = ax * x + bx, y' = ay * y + by. */
export interface Affine {
  ax: number;
  bx: number;
  ay: number;
  by: number;
}
const apply = (t: Affine, b: Box): Box => [t.ax * b[0] + t.bx, t.ay * b[1] + t.by, t.ax * b[2] + t.bx, t.ay * b[3] + t.by];
const compose = (outer: Affine, inner: Affine): Affine => ({ ax: outer.ax * inner.ax, bx: outer.ax * inner.bx + outer.bx, ay: outer.ay * inner.ay, by: outer.ay * inner.by + outer.by });

/** Where an episode image sits on an initial image: which one, and the map from its pixels to that image's pixels. */
export interface ImagePlacement {
  /** Index of the initial image (trajectory.media / originals). */
  base: number;
  /** Pixels of the image → pixels of trajectory.media[base]. */
  toBase: Affine;
  /** Size of the episode image. */
  size: [number, number];
}

/**
 * The episode's image list (initial media, then every call's produced media in order) with each image's placement on
 * an initial image; null for an image that is not a crop chain of an initial image (frames, unknown boxes).
 */
export function placements(t: Pick<Trajectory, 'media' | 'turns' | 'isVideo'>): Array<ImagePlacement | null> {
  const out: Array<ImagePlacement | null> = t.media.map((m, i) => (t.isVideo ? null : { base: i, toBase: { ax: 1, bx: 0, ay: 1, by: 0 }, size: [m.width, m.height] }));
  for (const turn of t.turns) {
    const call = turn.call;
    if (!call) continue;
    for (const p of call.produced) {
      const parent = call.targetIndex !== undefined ? out[call.targetIndex] : null;
      const cb = call.cropBox;
      if (!parent || !cb || call.name === 'select_frames' || !p.width || !p.height) {
        out.push(null);
        continue;
      }
      // the crop tool cut cropBox from the parent and resized it to the produced size
      const local: Affine = { ax: (cb[2] - cb[0]) / p.width, bx: cb[0], ay: (cb[3] - cb[1]) / p.height, by: cb[1] };
      out.push({ base: parent.base, toBase: compose(parent.toBase, local), size: [p.width, p.height] });
    }
  }
  return out;
}

/** A normalized box of an episode image → a normalized box of its initial image (which is the original's too). */
export function toBaseNorm(p: ImagePlacement, baseSize: [number, number], b: Box): Box {
  const px = apply(p.toBase, [b[0] * p.size[0], b[1] * p.size[1], b[2] * p.size[0], b[3] * p.size[1]]);
  return [px[0] / baseSize[0], px[1] / baseSize[1], px[2] / baseSize[0], px[3] / baseSize[1]];
}

/** The cells of a map as normalized boxes of the initial image the map's image sits on (for drawing and measuring). */
export function cellsOnBase(m: Pick<AttentionMaps, 'grid'>, p: ImagePlacement, baseSize: [number, number]): Box[] {
  const out: Box[] = [];
  for (let r = 0; r < m.grid.h; r++) for (let c = 0; c < m.grid.w; c++) out.push(toBaseNorm(p, baseSize, cellNorm(m.grid, r, c)));
  return out;
}

const overlap = (a: Box, b: Box): number => Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0])) * Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
const area = (a: Box): number => Math.max(0, a[2] - a[0]) * Math.max(0, a[3] - a[1]);

/** Attention mass inside `box`: each cell's value times the fraction of the cell inside the box (cells and box in one frame). */
export function massInBox(values: readonly number[], cells: readonly Box[], box: Box): number {
  let s = 0;
  for (let i = 0; i < cells.length; i++) {
    const a = area(cells[i]!);
    if (a > 0) s += (values[i] ?? 0) * (overlap(cells[i]!, box) / a);
  }
  return s;
}

/** Index of the largest value (the first on ties). */
export function peakIndex(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/**
 * Whether the peak cell touches `box` (overlaps it with some area): the pointing game at the map's own resolution.
 * A loupe-synth target is often smaller than one 28-px cell, so "the peak cell's centre inside the box" could not hit.
 */
export function peakInBox(values: readonly number[], cells: readonly Box[], box: Box): boolean {
  const c = cells[peakIndex(values)];
  return !!c && overlap(c, box) > 0;
}

/** The chance a peak hits `box` when it falls on a cell at random: the share of cells that touch the box. */
export function peakChance(cells: readonly Box[], box: Box): number {
  return cells.length ? cells.filter((c) => overlap(c, box) > 0).length / cells.length : 0;
}

/** The uniform map's in-box mass: the box's share of the image area (normalized box, clamped to the image). */
export function uniformMass(box: Box): number {
  return area([Math.max(0, box[0]), Math.max(0, box[1]), Math.min(1, box[2]), Math.min(1, box[3])]);
}

/** The colour scale of every map view (magma-like: dark purple → orange → pale yellow), value in [0, 1]. */
export function heatColor(v: number): [number, number, number] {
  const stops: Array<[number, number, number]> = [
    [0, 0, 4],
    [59, 15, 112],
    [140, 41, 129],
    [222, 73, 104],
    [254, 159, 109],
    [252, 253, 191],
  ];
  const x = Math.min(1, Math.max(0, Number.isFinite(v) ? v : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i]!;
  const b = stops[i + 1]!;
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)];
}

/** Where in a turn's text the box of its call is written: the `bbox_2d` array inside the call's raw text, else the call. */
export function boxSpan(turnText: string, raw: string | undefined): [number, number] | null {
  const at = raw ? turnText.indexOf(raw) : -1;
  const base = at >= 0 ? at : 0;
  const scope = at >= 0 ? raw! : turnText;
  const m = /"bbox_2d"\s*:\s*(\[[^\]]*\])/.exec(scope);
  if (m) {
    const s = base + m.index + m[0].length - m[1]!.length;
    return [s, s + m[1]!.length];
  }
  return at >= 0 ? [at, at + raw!.length] : null;
}

/**
 * A model's attention measure as its card shows it (`attention.json` in the model folder, written by
 * `loupe attention --card`): where its map points when it writes a crop box, against the uniform map and a baseline model.
 */
export const AttentionCardSchema = z.object({
  bench: z.string(),
  /** Which scenes, e.g. "loupe-synth seed 81001, 40 held-out image scenes". */
  data: z.string(),
  n: z.number().int().nonnegative(),
  completion: z.string(),
  /** The uniform map's in-box mass (the target boxes' mean area fraction). */
  uniform: z.number(),
  /** How often a peak on a random cell touches the target (the peak hit's chance level). */
  peakChance: z.number(),
  /** The best layer (0-based; 'mean' = mean map) by in-box mass, and the mean map. */
  best: z.object({ layer: z.union([z.number().int().nonnegative(), z.literal('mean')]), inBox: z.number(), peakHit: z.number() }),
  mean: z.object({ inBox: z.number(), peakHit: z.number() }),
  baseline: z.object({ model: z.string(), completion: z.string(), best: z.object({ inBox: z.number(), peakHit: z.number() }), mean: z.object({ inBox: z.number(), peakHit: z.number() }) }).optional(),
});
export type AttentionCard = z.infer<typeof AttentionCardSchema>;

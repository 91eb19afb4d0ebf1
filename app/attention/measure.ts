/**
 * Does a model's attention map mean something? On loupe-synth, for the first crop turn of each image question, the
 * head-averaged attention from the tokens that wrote the box onto the image: the share of its mass inside the
 * scene's target box, and whether its peak cell is inside it, per text layer and for the mean over layers. The
 * uniform map's share (the box's area fraction) is the baseline every number is read against.
 *
 * The turn is the model's own first crop on image 1 when it made one (`own`), else — or always with `reference` —
 * the scene's reference zoom turn (loupe-synth's SFT trajectory text, teacher-forced), so a model that never calls
 * the tool (a random one) is still measured on the same tokens.
 */
import type { Box, Trajectory } from '../contract/trajectory';
import { cellNorm, massInBox, peakChance, peakInBox, uniformMass } from '../contract/attention';
import type { Engine } from '../engines/types';
import type { Dialect } from '../protocol/types';
import type { SynthSample } from '../synth/generate';
import { synthTrajectories } from '../synth/trajectories';
import { attentionRequestFor } from '../agent/attentionRequest';
import type { MediaRef } from '../contract/trajectory';

export type CompletionSource = 'own' | 'reference';

export interface AttentionSampleScore {
  qid: string;
  category: string;
  /** Which text the maps were taken from. */
  source: CompletionSource;
  /** The target box's share of the image (the uniform map's in-box mass). */
  uniform: number;
  /** The share of cells that touch the target (a peak at a random cell hits this often). */
  peakChance: number;
  /** Per layer, then the mean map last. */
  inBox: number[];
  peakHit: boolean[];
  /** Attention mass on the image (before normalizing), per layer. */
  imageMass: number[];
  grid: [number, number];
}

export interface AttentionSummary {
  n: number;
  own: number;
  reference: number;
  uniform: number;
  /** Mean chance of a peak hit for a peak on a random cell. */
  peakChance: number;
  layers: Array<{ layer: number | 'mean'; inBox: number; peakHit: number; imageMass?: number }>;
  best: { layer: number | 'mean'; inBox: number; peakHit: number };
}

/** The reference first crop turn of a sample (loupe-synth's zoom trajectory): its text and raw call. */
export function referenceCropTurn(s: SynthSample): { text: string; raw: string } | null {
  for (const tr of synthTrajectories(s, { mode: 'eval' })) {
    const first = tr.message_list.find((m) => m.role === 'assistant');
    const text = first?.content.map((c) => ('text' in c ? c.text : '')).join('') ?? '';
    const m = /<tool_call>\n?([\s\S]*?)\n?<\/tool_call>/.exec(text);
    if (m && text.includes('crop_image')) return { text, raw: m[1]! };
  }
  return null;
}

/** The first turn of `t` with a crop on image 1 (index 0), or null. */
export function firstCropTurn(t: Trajectory): number | null {
  const i = t.turns.findIndex((u) => u.call && u.call.name !== 'select_frames' && u.call.targetIndex === 0 && u.call.cropBox && !u.call.error);
  return i >= 0 ? i : null;
}

/** Scores one sample's maps (already computed over image 1) against its normalized target box. */
export function scoreMaps(layers: number[][], grid: { h: number; w: number }, target: Box): { inBox: number[]; peakHit: boolean[]; peakChance: number } {
  const cells: Box[] = [];
  for (let r = 0; r < grid.h; r++) for (let c = 0; c < grid.w; c++) cells.push(cellNorm(grid, r, c));
  const n = layers[0]?.length ?? 0;
  const mean = new Array<number>(n).fill(0);
  for (const l of layers) for (let i = 0; i < n; i++) mean[i]! += l[i]! / layers.length;
  const all = [...layers, mean];
  return { inBox: all.map((m) => massInBox(m, cells, target)), peakHit: all.map((m) => peakInBox(m, cells, target)), peakChance: peakChance(cells, target) };
}

export async function scoreSample(o: {
  engine: Engine;
  dialect: Dialect;
  sample: SynthSample;
  /** The model's episode on the sample (for `own`); its media, system prompt and user text are reused for `reference`. */
  trajectory: Trajectory;
  source: CompletionSource;
  pathOf: (m: MediaRef) => string;
}): Promise<AttentionSampleScore> {
  const { engine, sample: s, trajectory } = o;
  if (!engine.attention) throw new Error('this engine does not report attention');
  let t = trajectory;
  let turn = o.source === 'own' ? firstCropTurn(t) : null;
  let source: CompletionSource = 'own';
  if (turn === null) {
    const ref = referenceCropTurn(s);
    if (!ref) throw new Error(`${s.qid}: no reference crop turn (an easy sample?)`);
    source = 'reference';
    t = { ...trajectory, turns: [{ index: 0, text: ref.text, call: { raw: ref.raw, name: 'crop_image_normalized', targetIndex: 0, produced: [] } }] };
    turn = 0;
  }
  const res = await engine.attention(attentionRequestFor(t, turn, o.dialect, o.pathOf));
  const target = s.target.norm as Box;
  const { inBox, peakHit, peakChance: chance } = scoreMaps(res.layers, res.grid, target);
  return { qid: s.qid, category: s.category, source, uniform: uniformMass(target), peakChance: chance, inBox, peakHit, imageMass: res.imageMass, grid: [res.grid.h, res.grid.w] };
}

export function summarizeAttention(rows: AttentionSampleScore[]): AttentionSummary {
  const n = rows.length;
  const L = rows[0]?.inBox.length ?? 0;
  const avg = (f: (r: AttentionSampleScore) => number) => (n ? rows.reduce((a, r) => a + f(r), 0) / n : 0);
  const layers = Array.from({ length: L }, (_, i) => ({
    layer: i === L - 1 ? ('mean' as const) : i,
    inBox: avg((r) => r.inBox[i]!),
    peakHit: avg((r) => (r.peakHit[i] ? 1 : 0)),
    ...(i < L - 1 ? { imageMass: avg((r) => r.imageMass[i] ?? 0) } : {}),
  }));
  const best = layers.reduce((a, b) => (b.inBox > a.inBox ? b : a), layers[0] ?? { layer: 'mean' as const, inBox: 0, peakHit: 0 });
  return {
    n,
    own: rows.filter((r) => r.source === 'own').length,
    reference: rows.filter((r) => r.source === 'reference').length,
    uniform: avg((r) => r.uniform),
    peakChance: avg((r) => r.peakChance),
    layers,
    best: { layer: best.layer, inBox: best.inBox, peakHit: best.peakHit },
  };
}

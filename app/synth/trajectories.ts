/**
 * Synthetic SFT trajectories for loupe-synth samples, in the Pixel Reasoner dialect: global view → short
 * reasoning → `<tool_call>{"name": "crop_image_normalized", …}</tool_call>` → observation → answer in
 * `\boxed{}`. Variants: a direct answer (easy samples), one good crop (`zoom`; for dot counts and left-of a closer
 * second crop on it, `zoom2`), a recovery from a poor first crop, and for video `select_frames` then a crop. Output is Pixel Reasoner's SFT shape
 * (`{"message_list": [Qwen messages]}`) plus the exact crop geometry, so a trainer can cut the crops.
 */
import type { Box } from '../contract/trajectory';
import { fromPlainJson, pyJsonDumps } from '../pycompat/json';
import type { SynthRaster } from './render';
import { prCropObservation, prFramesObservation } from '../protocol/pixelReasoner';
import { PR_GUIDELINES, prSystemPrompt } from '../protocol/prompts';
import { prCropGeometry } from '../tools/crop';
import { presetFor, resizeWithPreset } from '../tools/smartResize';
import type { SynthSample } from './generate';
import { tagSize } from './scene';
import { questionWithOptions } from '../bench/adapters/options';
import { Prng, hashSeed } from './prng';

/** Pixel Reasoner's system text with both tools (the protocol module's, re-exported for trainers). */
export const PR_SYSTEM_PROMPT = prSystemPrompt('vcot');
/** The `vcot` guideline Pixel Reasoner appends to the question (it starts with two newlines). */
export const PR_VCOT = PR_GUIDELINES.vcot;

export type SftKind = 'direct' | 'zoom' | 'zoom2' | 'recover' | 'frames-zoom';

/**
 * The kinds whose detail is finer than the model sees in one crop: a dot grid spans one or two of loupe-tiny's merged
 * tokens in the first crop (the call box is padded by 0.1 of the image), a pair tag's letter less than one. Their
 * trajectories crop again, on the first crop (`target_image` 2): Pixel Reasoner pads that call by 0.1 of the crop and the
 * eval zoom resize brings the result to at least 448² px, so the dots and the letter come out about 2.5 times larger.
 */
export const CLOSER_KINDS: ReadonlySet<string> = new Set(['box-dots', 'left-of']);

export type QwenPart = { type: 'text'; text: string } | { type: 'image'; image: string } | { type: 'video'; video: string[] };
export interface QwenMessage {
  role: 'system' | 'user' | 'assistant';
  content: QwenPart[];
}

/** What a crop call does to which image, computed exactly as Pixel Reasoner's tool would. */
export interface SftCrop {
  /** The `bbox_2d` written in the call (normalized, every value < 1). */
  bbox: Box;
  /** 1-based `target_image`. */
  targetImage: number;
  /** Which source is cropped: the sample's image or a frame file (video), or an earlier crop's placeholder (`crop:<k>`). */
  source: string;
  /** The size the model sees that image at (after the initial resize) — the frame the box refers to. */
  sourceSize: [number, number];
  /** Box after Pixel Reasoner's 0.1 padding and clamping. */
  padded: Box;
  /** Integer pixel box on the resized source (Python round-half-even, as Pillow). */
  cropBox: Box;
  /** The crop after the zoom resize (what the observation reports). */
  resized: [number, number];
  /** Placeholder written in the message list for this crop's image. */
  placeholder: string;
}

export interface SftTrajectory {
  qid: string;
  kind: SftKind;
  answer: string;
  /** Pixel Reasoner SFT record. Crop images appear as `crop:<k>` placeholders, see `crops`. */
  message_list: QwenMessage[];
  crops: SftCrop[];
  /** For video: frames selected (1-based). */
  selectedFrames?: number[];
}

export interface SftOptions {
  /** Resize bounds: 'train' (default) or 'eval', per the reference table. */
  mode?: 'train' | 'eval';
  system?: string;
  guideline?: string;
  /** Seed for wording and box jitter (default: derived from the qid). */
  seed?: number;
}

// ---------- geometry (Pixel Reasoner's reference rules) ----------

/** Pixel Reasoner's crop on the resized source, then the zoom resize of `mode` (shared tool geometry). */
function cropPlan(bbox: Box, size: [number, number], mode: 'train' | 'eval'): Pick<SftCrop, 'padded' | 'cropBox' | 'resized'> {
  const g = prCropGeometry(size, fromPlainJson(bbox), { zoomPreset: presetFor('zoom', mode) });
  const resized = g.resizedSize ?? g.cropSize;
  return { padded: g.normalizedBox, cropBox: g.cropBox, resized: [resized[0], resized[1]] };
}

/** Call-box values carry two decimals (every crop is padded by 0.1 anyway): fewer tokens to generate. */
const r2 = (v: number): number => Math.min(0.99, Math.max(0, Math.round(v * 100) / 100));

/** A normalized call box around `norm`, grown by `grow` of its size on each side, jittered a little. */
function callBox(rng: Prng, norm: Box, grow: number): Box {
  const w = norm[2] - norm[0];
  const h = norm[3] - norm[1];
  const j = (): number => rng.range(-0.15, 0.15);
  return [
    r2(norm[0] - w * (grow + j())),
    r2(norm[1] - h * (grow + j())),
    r2(norm[2] + w * (grow + j())),
    r2(norm[3] + h * (grow + j())),
  ];
}

function where(norm: Box): string {
  const cx = (norm[0] + norm[2]) / 2;
  const cy = (norm[1] + norm[3]) / 2;
  const v = cy < 0.34 ? 'upper' : cy > 0.66 ? 'lower' : 'middle';
  const hz = cx < 0.34 ? 'left' : cx > 0.66 ? 'right' : 'centre';
  return v === 'middle' && hz === 'centre' ? 'near the centre' : v === 'middle' ? `on the ${hz} side` : `in the ${v} ${hz === 'centre' ? 'middle' : hz}`;
}

function toolCall(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${pyJsonDumps({ name, arguments: args })}\n</tool_call>`;
}

/** The sentence that states what the zoomed view shows, ending in the boxed answer. Short: every token is generated. */
function readOut(s: SynthSample): string {
  const f = s.facts;
  switch (s.category) {
    case 'ring-digits':
      return `The ring shows ${[...String(f.digits)].join(', ')}: \\boxed{${s.answer}}`;
    case 'tag-letter':
      return `The tag shows ${f.letter}: \\boxed{${s.answer}}`;
    case 'box-dots':
      // One number per dot ("I count 1, 2, 3: \\boxed{3}"): a small model counts by looking at one more dot per
      // number, and the answer is the last number it reached.
      return `I count ${Array.from({ length: Number(f.count) }, (_, i) => i + 1).join(', ')}: \\boxed{${s.answer}}`;
    case 'left-of': {
      // The left tag's letter, read on the closer crop of that tag. Then option (A)'s letter, copied from the question,
      // ends the turn where it is the letter read, else option (B)'s follows; the boxed letter is the last option
      // written. A letter-to-option lookup in one token was not learned by a 12 M model (the loupe-tiny README's v18
      // section); a copy, a compare and a copy of the nearest option letter are steps such a model does learn.
      const said = `The left tag shows ${f.left}`;
      const o = s.options ?? [];
      if (o.length !== 2) return `${said}: \\boxed{${s.answer}}`;
      return o[0] === f.left ? `${said}; (A) ${o[0]}: \\boxed{${s.answer}}` : `${said}; (A) ${o[0]}, (B) ${o[1]}: \\boxed{${s.answer}}`;
    }
  }
}

/** What the closer crop is drawn around, in the scene's pixels: the green box; for left-of the left tag (scene.ts puts it
 * at the pair region's left edge, one tag wide; its height anywhere in the region). */
function closerTarget(s: SynthSample): Box {
  const t = s.target.px;
  if (s.category !== 'left-of') return t;
  return [t[0], t[1], t[0] + tagSize(Number(s.facts.fontPixel)).w, t[3]];
}

/** The closer call's words before its box: what it looks at, and where in the first crop. */
function closerSays(s: SynthSample, norm: Box): string {
  const what = s.category === 'left-of' ? 'The left tag' : `${s.target.label[0]?.toUpperCase()}${s.target.label.slice(1)}`;
  return `${what} is ${where(norm)} of this crop. Let me zoom in closer.`;
}

/** The closer target's box in the crop `prev` (normalized to it), from the scene's pixels. */
export function closerNorm(s: SynthSample, prev: SftCrop): Box {
  const sx = prev.sourceSize[0] / s.width;
  const sy = prev.sourceSize[1] / s.height;
  const [x0, y0, x1, y1] = prev.cropBox;
  const t = closerTarget(s);
  const c = (v: number): number => Math.min(1, Math.max(0, v));
  return [c((t[0] * sx - x0) / (x1 - x0)), c((t[1] * sy - y0) / (y1 - y0)), c((t[2] * sx - x0) / (x1 - x0)), c((t[3] * sy - y0) / (y1 - y0))];
}

/** 'are' for the plural target label of left-of ('the yellow tags K and R'), else 'is'. */
function verb(s: SynthSample): string {
  return s.category === 'left-of' ? 'are' : 'is';
}

/** The first user text: question (with options) plus the guideline. */
export function userText(s: SynthSample, guideline = PR_VCOT): string {
  return `${questionWithOptions(s.question, s.options)}\n\n${guideline}`;
}

/**
 * Trajectories for one sample. Image samples give `direct` (easy ones) or `zoom` plus `recover`;
 * video samples give `frames-zoom`. All wording and box jitter come from the seed.
 */
export function synthTrajectories(s: SynthSample, opts: SftOptions = {}): SftTrajectory[] {
  const mode = opts.mode ?? 'train';
  const rng = new Prng(opts.seed ?? hashSeed('sft', s.qid));
  const system = opts.system ?? PR_SYSTEM_PROMPT;
  const guide = opts.guideline ?? PR_VCOT;
  const sys: QwenMessage = { role: 'system', content: [{ type: 'text', text: system }] };
  const asst = (text: string): QwenMessage => ({ role: 'assistant', content: [{ type: 'text', text }] });
  const out: SftTrajectory[] = [];

  if (s.isVideo) {
    const frames = s.frames ?? [];
    const tf = s.target.frames ?? [];
    const first = tf[0];
    if (first === undefined || frames.length === 0) throw new Error(`synthTrajectories: video sample ${s.qid} has no target frames`);
    // Frames as the model sees them: the video-frame resize, then (train) the select_frames resize.
    const videoSize = resizeWithPreset([s.width, s.height], 'video_frame');
    const selectPreset = presetFor('select', mode);
    const [fw, fh] = selectPreset ? resizeWithPreset(videoSize, selectPreset) : videoSize;
    // Select the target frames plus a neighbour or two, sorted, at most 8.
    const picks = new Set<number>(tf);
    while (picks.size < Math.min(tf.length + 2, 8)) picks.add(Math.min(16, Math.max(1, (tf[0] as number) + rng.int(-3, 3))));
    const selected = [...picks].sort((a, b) => a - b);
    const idx = selected.indexOf(first); // position among the selected frames
    const targetImage = 2 + idx; // images = [video, selected frames…]
    const bbox = callBox(rng, s.target.norm, rng.range(0.3, 0.8));
    const plan = cropPlan(bbox, [fw, fh], mode);
    const crop: SftCrop = { bbox, targetImage, source: frames[first - 1] as string, sourceSize: [fw, fh], ...plan, placeholder: 'crop:0' };
    const msgs: QwenMessage[] = [
      sys,
      { role: 'user', content: [{ type: 'video', video: frames }, { type: 'text', text: userText(s, guide) }] },
      asst(
        `The question is about ${s.target.label}, which only appears briefly. Let me select frames to find it.\n` +
          toolCall('select_frames', { target_frames: selected }),
      ),
      {
        role: 'user',
        content: [
          // The reference numbers from len(images) before the frames are added (1 here), although the first
          // selected frame is `target_image` 2: we write exactly what the environment says.
          { type: 'text', text: prFramesObservation(fw, fh, 1, selected.length) },
          ...selected.map((f): QwenPart => ({ type: 'image', image: frames[f - 1] as string })),
        ],
      },
      asst(
        `${s.target.label[0]?.toUpperCase()}${s.target.label.slice(1)} ${verb(s)} in image ${targetImage} (frame ${first}), ${where(s.target.norm)}. Let me zoom in.\n` +
          toolCall('crop_image_normalized', { bbox_2d: bbox, target_image: targetImage }),
      ),
      { role: 'user', content: [{ type: 'text', text: prCropObservation(plan.resized[0], plan.resized[1]) }, { type: 'image', image: 'crop:0' }] },
      asst(readOut(s)),
    ];
    out.push({ qid: s.qid, kind: 'frames-zoom', answer: s.answer, message_list: msgs, crops: [crop], selectedFrames: selected });
    return out;
  }

  const image = s.image;
  if (image === undefined) throw new Error(`synthTrajectories: image sample ${s.qid} has no image`);
  const [iw, ih] = resizeWithPreset([s.width, s.height], presetFor('initial', mode) ?? 'eval_initial');
  const first: QwenMessage = { role: 'user', content: [{ type: 'image', image }, { type: 'text', text: userText(s, guide) }] };
  const Label = `${s.target.label[0]?.toUpperCase()}${s.target.label.slice(1)}`;
  const is = verb(s);

  if (!s.needsZoom) {
    out.push({
      qid: s.qid,
      kind: 'direct',
      answer: s.answer,
      message_list: [sys, first, asst(`${Label} ${is} large enough to read. ${readOut(s)}`)],
      crops: [],
    });
    return out;
  }

  const cropMsg = (crop: SftCrop): QwenMessage => ({
    role: 'user',
    content: [{ type: 'text', text: prCropObservation(crop.resized[0], crop.resized[1]) }, { type: 'image', image: crop.placeholder }],
  });
  const mkCrop = (bbox: Box, k: number): SftCrop => ({
    bbox,
    targetImage: 1,
    source: image,
    sourceSize: [iw, ih],
    ...cropPlan(bbox, [iw, ih], mode),
    placeholder: `crop:${k}`,
  });

  // The closer crop `crop:<k>` on crop `prev`, which the model sees as image `prevImage` (the question's image is 1, the
  // k-th crop image k + 2), for the kinds that need it: the turn that asks for it, and the crop.
  const closer = (prev: SftCrop, prevImage: number, k: number): { turn: string; crop: SftCrop } => {
    const n = closerNorm(s, prev);
    const bbox = callBox(rng, n, rng.range(0.3, 0.8));
    const crop: SftCrop = { bbox, targetImage: prevImage, source: prev.placeholder, sourceSize: prev.resized, ...cropPlan(bbox, prev.resized, mode), placeholder: `crop:${k}` };
    return { turn: `${closerSays(s, n)}\n` + toolCall('crop_image_normalized', { bbox_2d: bbox, target_image: prevImage }), crop };
  };
  const twice = CLOSER_KINDS.has(s.category);

  // One good crop (and for the fine kinds a closer one on it).
  const good = mkCrop(callBox(rng, s.target.norm, rng.range(0.3, 0.8)), 0);
  const firstCall =
    asst(`${Label} ${is} ${where(s.target.norm)}. Let me zoom in.\n` + toolCall('crop_image_normalized', { bbox_2d: good.bbox, target_image: 1 }));
  if (twice) {
    const c2 = closer(good, 2, 1);
    out.push({
      qid: s.qid,
      kind: 'zoom2',
      answer: s.answer,
      message_list: [sys, first, firstCall, cropMsg(good), asst(c2.turn), cropMsg(c2.crop), asst(readOut(s))],
      crops: [good, c2.crop],
    });
  } else {
    out.push({
      qid: s.qid,
      kind: 'zoom',
      answer: s.answer,
      message_list: [sys, first, firstCall, cropMsg(good), asst(readOut(s))],
      crops: [good],
    });
  }

  // A poor first crop (on a look-alike, or off to the side) that misses the target, then a recovery.
  const misses = (b: Box): boolean => !boxesOverlap(mkCrop(b, 0).cropBox, scaleBox(s.target.px, iw / s.width, ih / s.height));
  const candidates = rng
    .shuffle(s.decoys)
    .map((d) => ({ d, box: callBox(rng, d.norm, rng.range(0.3, 0.6)) }))
    .filter((c) => misses(c.box));
  let poorBox: Box;
  let poorSays: string;
  const pick = candidates[0];
  if (pick) {
    poorBox = pick.box;
    poorSays = `This crop shows ${pick.d.label}, not ${s.target.label}.`;
  } else {
    // No look-alike far enough away: crop the opposite side of the image.
    const t = s.target.norm;
    const cx = (t[0] + t[2]) / 2 > 0.5 ? 0.05 : 0.7;
    const cy = (t[1] + t[3]) / 2 > 0.5 ? 0.05 : 0.7;
    poorBox = [r2(cx), r2(cy), r2(cx + 0.2), r2(cy + 0.2)];
    poorSays = `This crop does not contain ${s.target.label}.`;
  }
  const poor = mkCrop(poorBox, 0);
  const fixed = mkCrop(callBox(rng, s.target.norm, rng.range(0.3, 0.8)), 1);
  const tail: QwenMessage[] = [];
  const crops = [poor, fixed];
  if (twice) {
    const c3 = closer(fixed, 3, 2);
    tail.push(asst(c3.turn), cropMsg(c3.crop));
    crops.push(c3.crop);
  }
  out.push({
    qid: s.qid,
    kind: 'recover',
    answer: s.answer,
    message_list: [
      sys,
      first,
      asst(`Let me zoom in on the region that looks right.\n` + toolCall('crop_image_normalized', { bbox_2d: poor.bbox, target_image: 1 })),
      cropMsg(poor),
      asst(
        `${poorSays} ${Label} ${is} ${where(s.target.norm)}. Let me crop there.\n` +
          toolCall('crop_image_normalized', { bbox_2d: fixed.bbox, target_image: 1 }),
      ),
      cropMsg(fixed),
      ...tail,
      asst(readOut(s)),
    ],
    crops,
  });
  return out;
}

function boxesOverlap(a: Box, b: Box): boolean {
  return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
}

function scaleBox(b: Box, sx: number, sy: number): Box {
  return [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy];
}

/** Whether a crop (in the resized source's pixels) fully contains the sample's target box. */
export function cropContainsTarget(s: SynthSample, crop: SftCrop): boolean {
  const sx = crop.sourceSize[0] / s.width;
  const sy = crop.sourceSize[1] / s.height;
  const t = s.target.px;
  return crop.cropBox[0] <= t[0] * sx && crop.cropBox[1] <= t[1] * sy && crop.cropBox[2] >= t[2] * sx && crop.cropBox[3] >= t[3] * sy;
}

/** Render a trajectory in Qwen2.5-VL chat text (vision placeholders in place of pixels). */
export function trajectoryText(t: SftTrajectory): string {
  const part = (p: QwenPart): string =>
    p.type === 'text' ? p.text : p.type === 'image' ? '<|vision_start|><|image_pad|><|vision_end|>' : '<|vision_start|><|video_pad|><|vision_end|>';
  return t.message_list.map((m) => `<|im_start|>${m.role}\n${m.content.map(part).join('')}<|im_end|>\n`).join('');
}

/**
 * Cut a trajectory's crops out of the benchmark folder's images, exactly as its geometry says (resize the
 * source to `sourceSize`, crop `cropBox`, resize to `resized`), and write them as JPEGs into `outDir`.
 * Returns placeholder → written file path.
 */
export async function writeTrajectoryCrops(benchDir: string, t: SftTrajectory, outDir: string, raster: SynthRaster): Promise<Record<string, string>> {
  const { join } = await import('node:path');
  const written: Record<string, string> = {};
  for (const [k, c] of t.crops.entries()) {
    const file = join(outDir, `${t.qid}.${t.kind}.crop${k}.jpg`);
    // A closer crop is cut from the earlier crop's file (written above, at the size the model saw it).
    const from = c.source.startsWith('crop:') ? written[c.source] : join(benchDir, c.source);
    if (from === undefined) throw new Error(`writeTrajectoryCrops: ${t.qid}/${t.kind}: crop ${k} is cut from ${c.source}, which comes later`);
    await raster.writeCrop(from, c, file);
    written[c.placeholder] = file;
  }
  return written;
}

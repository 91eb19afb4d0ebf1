/**
 * Video scenes for loupe-synth: 16 frames of a slowly panning cluttered scene where the target shows up in
 * only one or two frames, so a model must pick frames (`select_frames`) before it can zoom and read.
 */
import type { Box } from '../contract/trajectory';
import type { Prng } from './prng';
import {
  DECOY_COLORS,
  TARGET_COLORS,
  type Built,
  type SceneObject,
  type SynthKind,
  at,
  boxWithDots,
  clutterSvg,
  randomDigits,
  ringWithDigits,
  tagWithLetter,
} from './scene';
import { ANSWER_LETTERS } from './glyphs';

export const VIDEO_FRAMES = 16;
export const VIDEO_KINDS = ['ring-digits', 'tag-letter', 'box-dots'] as const satisfies readonly SynthKind[];
export type VideoKind = (typeof VIDEO_KINDS)[number];

export interface VideoScene {
  kind: VideoKind;
  width: number;
  height: number;
  /** One SVG document per frame. */
  frames: string[];
  noiseSeed: number;
  question: string;
  answer: string;
  answerText: string;
  /** The target, with the 1-based frame numbers it is visible in (as `select_frames` counts). */
  target: SceneObject & { frames: number[] };
  /** Look-alikes with the frames they appear in. */
  decoys: Array<SceneObject & { frames: number[] }>;
  detailPx: number;
  facts: Record<string, string | number>;
}

const r2 = (v: number): number => Math.round(v * 100) / 100;

export function buildVideoScene(rng: Prng, kind: VideoKind): VideoScene {
  const [width, height] = rng.fork('size').pick([
    [1280, 720],
    [1024, 768],
    [960, 540],
    [1200, 900],
    [720, 1280],
  ] as Array<[number, number]>);
  const L = Math.max(width, height);
  const lay = rng.fork('layout');
  const qr = rng.fork('question');
  const margin = Math.round(L * 0.05);

  // Which frames show the target: one, or two neighbours.
  const span = lay.int(1, 2);
  const first = lay.int(1, VIDEO_FRAMES - span + 1);
  const targetFrames = Array.from({ length: span }, (_, i) => first + i);

  let built: Built;
  let makeDecoy: (c: { name: string; hex: string }) => Built;
  let question: string;
  let answer: string;
  let detailPx: number;
  let facts: Record<string, string | number>;
  let noun: string;
  if (kind === 'ring-digits') {
    const h = Math.max(12, L * lay.range(0.013, 0.016));
    answer = randomDigits(lay, lay.int(2, 4));
    built = ringWithDigits(answer, h, TARGET_COLORS.ring);
    makeDecoy = (c) => ringWithDigits(randomDigits(lay, lay.int(2, 4)), h, c.hex);
    question = 'A red ring with a number inside appears in only one or two frames of this video. What is the number?';
    detailPx = h;
    facts = { digits: answer, glyphHeight: r2(h) };
    noun = 'ring';
  } else if (kind === 'tag-letter') {
    const p = Math.max(2, L * lay.range(0.0017, 0.0021));
    const letters = lay.sample(ANSWER_LETTERS, 6);
    answer = letters[0] as string;
    built = tagWithLetter(answer, p, TARGET_COLORS.tag, '#ffffff');
    let k = 1;
    makeDecoy = (c) => tagWithLetter(letters[k++ % letters.length] as string, p, c.hex, '#ffffff');
    question = 'A small blue tag is briefly visible in this video. What letter is on it?';
    detailPx = 7 * p;
    facts = { letter: answer, fontPixel: r2(p) };
    noun = 'tag';
  } else {
    const dot = Math.max(5, L * lay.range(0.0045, 0.0055));
    const count = lay.int(1, 9);
    answer = String(count);
    built = boxWithDots(lay, count, dot, TARGET_COLORS.box);
    makeDecoy = (c) => boxWithDots(lay, lay.int(1, 9), dot, c.hex);
    question = 'A green box with dots appears in only one or two frames of this video. How many dots are inside it?';
    detailPx = dot;
    facts = { count, dotDiameter: r2(dot) };
    noun = 'box';
  }

  const tx = lay.range(margin, width - margin - built.w);
  const ty = lay.range(margin, height - margin - built.h);
  const targetBox: Box = [Math.floor(tx), Math.floor(ty), Math.ceil(tx + built.w), Math.ceil(ty + built.h)];

  // Decoys in frames the target is not in, at their own places.
  const others = Array.from({ length: VIDEO_FRAMES }, (_, i) => i + 1).filter((f) => !targetFrames.includes(f));
  const decoys: VideoScene['decoys'] = [];
  const decoySvg: Array<{ svg: string; frames: number[] }> = [];
  for (const c of lay.sample(DECOY_COLORS, lay.int(2, 3))) {
    const b = makeDecoy(c);
    let x = 0;
    let y = 0;
    for (let tries = 0; tries < 200; tries++) {
      x = lay.range(margin, width - margin - b.w);
      y = lay.range(margin, height - margin - b.h);
      const far = Math.abs(x - tx) > built.w * 2 || Math.abs(y - ty) > built.h * 2;
      if (far) break;
    }
    const f0 = lay.pick(others);
    const frames = [f0, f0 + 1].filter((f) => others.includes(f)).slice(0, lay.int(1, 2));
    decoys.push({ label: `the ${c.name} ${noun}`, box: [Math.floor(x), Math.floor(y), Math.ceil(x + b.w), Math.ceil(y + b.h)], frames });
    decoySvg.push({ svg: at(b, x, y), frames });
  }

  // A static scene that pans a little each frame, plus a few shapes drifting on their own.
  const keepOut: Box[] = [targetBox, ...decoys.map((d) => d.box)].map((b) => [b[0] - 12, b[1] - 12, b[2] + 12, b[3] + 12]);
  const clutter = clutterSvg(rng.fork('clutter'), width, height, keepOut);
  const pan = rng.fork('pan');
  const vx = pan.range(-1.2, 1.2);
  const vy = pan.range(-0.8, 0.8);
  const movers = Array.from({ length: pan.int(3, 6) }, () => ({
    x: pan.range(0, width),
    y: pan.range(0, height),
    r: pan.range(0.02, 0.06) * L,
    dx: pan.range(-20, 20),
    dy: pan.range(-12, 12),
    fill: pan.pick(['#9c89b8', '#e9c46a', '#577590', '#b5838d', '#a3a380']),
  }));
  const frames: string[] = [];
  for (let f = 1; f <= VIDEO_FRAMES; f++) {
    const parts = [clutter.back, `<g transform="translate(${r2(vx * f)} ${r2(vy * f)})">${clutter.front}</g>`];
    for (const m of movers) {
      const cx = m.x + m.dx * f;
      const cy = m.y + m.dy * f;
      // Movers never cover the target's frames at the target's place.
      const hides = cx + m.r > targetBox[0] - 10 && cx - m.r < targetBox[2] + 10 && cy + m.r > targetBox[1] - 10 && cy - m.r < targetBox[3] + 10;
      if (!hides) parts.push(`<circle cx="${r2(cx)}" cy="${r2(cy)}" r="${r2(m.r)}" fill="${m.fill}" opacity="0.85"/>`);
    }
    for (const d of decoySvg) if (d.frames.includes(f)) parts.push(d.svg);
    if (targetFrames.includes(f)) parts.push(at(built, tx, ty));
    frames.push(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${parts.join('')}</svg>`,
    );
  }
  const label = kind === 'ring-digits' ? 'the red ring' : kind === 'tag-letter' ? 'the blue tag' : 'the green box';
  return {
    kind,
    width,
    height,
    frames,
    noiseSeed: rng.fork('noise').nextU32(),
    question: qr.pick([question]),
    answer,
    answerText: answer,
    target: { label, box: targetBox, frames: targetFrames },
    decoys,
    detailPx,
    facts,
  };
}

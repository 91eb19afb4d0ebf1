/**
 * The frames of an animated trajectory (WebP/GIF export and presentation mode share the order):
 * the question image, then for each crop the image with its box, then the crop itself, then frames a
 * `select_frames` call picked, and last the answer. Pure data; `main/` draws it with sharp.
 */
import type { Box, MediaRef, Trajectory } from '../contract/trajectory';

export interface StoryFrame {
  /** The image shown. */
  media: MediaRef;
  /** Normalized box to draw (the box as the model gave it, before padding). */
  box?: Box;
  /** Normalized box after padding (what was actually cut). */
  padded?: Box;
  /** 1-based step number drawn next to the box. */
  step?: number;
  /** One line under the image. */
  caption: string;
  delayMs: number;
}

/** Every image of an episode in the loop's combined order: question media first, then produced media. */
export function combinedImages(t: Trajectory): MediaRef[] {
  const out = [...t.media];
  for (const turn of t.turns) for (const m of turn.call?.produced ?? []) out.push(m);
  return out;
}

function oneLine(text: string, max = 90): string {
  const s = text.replace(/<\/?[a-z_]+>/g, ' ').replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export function buildStoryboard(t: Trajectory): StoryFrame[] {
  const images = combinedImages(t);
  const first = t.media[0];
  if (!first) return [];
  const frames: StoryFrame[] = [{ media: first, caption: `Q: ${oneLine(t.question)}`, delayMs: 1400 }];
  let step = 0;
  for (const turn of t.turns) {
    const c = turn.call;
    if (!c) continue;
    step += 1;
    if (c.error !== undefined) {
      frames.push({ media: images[c.targetIndex ?? 0] ?? first, caption: `Step ${step}: error — ${oneLine(c.error, 70)}`, delayMs: 1400 });
      continue;
    }
    if (c.bboxNormalized && c.targetIndex !== undefined) {
      const target = images[c.targetIndex] ?? first;
      frames.push({ media: target, box: c.bboxNormalized, ...(c.bboxPadded ? { padded: c.bboxPadded } : {}), step, caption: `Step ${step}: ${c.name ?? 'crop'} ${c.bboxRaw ? `[${c.bboxRaw.join(', ')}]` : ''}`, delayMs: 1200 });
      for (const p of c.produced) frames.push({ media: p, caption: `Step ${step}: crop ${p.width}×${p.height}`, delayMs: 1200 });
    } else if (c.frameIndices) {
      c.produced.forEach((p, i) => frames.push({ media: p, caption: `Step ${step}: frame ${(c.frameIndices?.[i] ?? i) + 1}`, delayMs: 700 }));
    }
  }
  const answer = t.finalText ?? t.turns.at(-1)?.text ?? '';
  const last = frames.at(-1)!;
  frames.push({ media: last.media, caption: `Answer: ${oneLine(answer)} (${t.stopReason})`, delayMs: 2200 });
  return frames;
}

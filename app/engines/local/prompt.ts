/**
 * Pure prompt helpers for Qwen-VL-style local engines: which images a conversation holds, how the chat template sees
 * it, how each `<|image_pad|>` expands, and how much of a previous turn's KV cache a new prompt may reuse.
 */
import type { ChatMessage, EngineImage } from '../types';
import { EngineError } from '../errors';

export const IMAGE_PAD = '<|image_pad|>';
export const VIDEO_PAD = '<|video_pad|>';
export const VISION_START = '<|vision_start|>';
export const VISION_END = '<|vision_end|>';
const IMAGE_BLOCK = `${VISION_START}${IMAGE_PAD}${VISION_END}`;
const VIDEO_BLOCK = `${VISION_START}${VIDEO_PAD}${VISION_END}`;

/**
 * Every image the model sees, in prompt order. A video is given to the model as its frames, each an image: the
 * transformers.js Qwen processor has no video path, and Pixel Reasoner's `select_frames` hands frames back as images.
 */
export function collectImages(messages: ChatMessage[]): EngineImage[] {
  const out: EngineImage[] = [];
  for (const m of messages) {
    for (const c of m.content) {
      if (c.type === 'image') out.push(c.image);
      else if (c.type === 'video') out.push(...c.frames);
    }
  }
  return out;
}

/** Frame counts of the videos in the conversation, in order. */
export function videoFrameCounts(messages: ChatMessage[]): number[] {
  return messages.flatMap((m) => m.content.flatMap((c) => (c.type === 'video' ? [c.frames.length] : [])));
}

/** Template-ready messages (`{type:'image'}` items, `{type:'text', text}`), with videos as their frames. */
export function toTemplateMessages(messages: ChatMessage[]): Array<{ role: string; content: Array<Record<string, string>> }> {
  return messages.map((m) => ({
    role: m.role,
    content: m.content.flatMap((c): Array<Record<string, string>> => {
      if (c.type === 'text') return [{ type: 'text', text: c.text }];
      if (c.type === 'image') return [{ type: 'image' }];
      return c.frames.map(() => ({ type: 'image' }));
    }),
  }));
}

/** Rewrites each video placeholder block of a pre-rendered prompt as one image block per frame. */
export function videoBlocksToImages(prompt: string, frameCounts: number[]): string {
  const parts = prompt.split(VIDEO_BLOCK);
  if (parts.length === 1) {
    if (prompt.includes(VIDEO_PAD)) {
      throw new EngineError('bad_request', `prompt has ${VIDEO_PAD} outside a ${VIDEO_BLOCK} block; cannot map it to frames`);
    }
    return prompt;
  }
  if (parts.length - 1 !== frameCounts.length) {
    throw new EngineError('bad_request', `prompt has ${parts.length - 1} video placeholder(s) but the messages hold ${frameCounts.length} video(s)`);
  }
  return parts.reduce((acc, p, i) => acc + IMAGE_BLOCK.repeat(frameCounts[i - 1] ?? 0) + p);
}

/** Replaces the i-th `<|image_pad|>` by `counts[i]` copies (the image's merged patch count). */
export function expandImagePads(prompt: string, counts: number[]): string {
  const parts = prompt.split(IMAGE_PAD);
  if (parts.length - 1 !== counts.length) {
    throw new EngineError(
      'bad_request',
      `prompt has ${parts.length - 1} ${IMAGE_PAD} placeholder(s) but the request holds ${counts.length} image(s); every image needs exactly one placeholder`,
    );
  }
  let out = parts[0] ?? '';
  for (let i = 1; i < parts.length; i++) out += IMAGE_PAD.repeat(counts[i - 1] ?? 0) + (parts[i] ?? '');
  return out;
}

/** [start, end) token ranges of each run of image tokens, in order. */
export function imageRuns(ids: readonly number[], imageTokenId: number): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== imageTokenId) continue;
    const s = i;
    while (i + 1 < ids.length && ids[i + 1] === imageTokenId) i++;
    runs.push([s, i + 1]);
  }
  return runs;
}

/**
 * How many leading tokens of `next` can reuse the KV cache computed for `cached`: the longest common prefix, cut back
 * to before any image whose run it would split or whose identity (`keys`) changed, and leaving at least one token to
 * run (the next logits come from it).
 *
 * Only a *continuation* reuses it: `next` must go past the cached request's whole prompt (`cached.promptLength`; the
 * rest of `cached.ids` was generated) into the tokens it generated (the next turn of the same conversation, or a fork of
 * it). Anything else — a new question that shares the system prompt, the same scene run again — starts afresh. The
 * answer must not depend on which request ran before: a prefix computed in another chunk gives slightly different
 * numbers (with dynamically quantized q8 weights, different activation scales), enough to flip a close greedy choice.
 */
export function reusablePrefix(
  cached: { ids: readonly number[]; imageKeys: readonly string[]; promptLength: number },
  next: { ids: readonly number[]; imageKeys: readonly string[] },
  imageTokenId: number,
): number {
  const a = cached.ids;
  const b = next.ids;
  let n = 0;
  const max = Math.min(a.length, b.length);
  while (n < max && a[n] === b[n]) n++;
  if (n <= cached.promptLength) return 0;
  const runs = imageRuns(b, imageTokenId);
  for (let i = 0; i < runs.length; i++) {
    const [s, e] = runs[i]!;
    if (s >= n) break;
    if (e > n || cached.imageKeys[i] === undefined || cached.imageKeys[i] !== next.imageKeys[i]) {
      n = s;
      break;
    }
  }
  if (n >= b.length) n = b.length - 1;
  // never end the reused part inside an image run (possible after the -1 above only if the prompt ends in one)
  for (const [s, e] of runs) if (s < n && n < e) n = s;
  return Math.max(0, n);
}

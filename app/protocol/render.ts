/**
 * The official Qwen2.5-VL chat template, as text: a default system turn when the first turn is not
 * a system turn; each turn `<|im_start|>{role}\n{parts}<|im_end|>\n`; an image part renders as
 * `<|vision_start|><|image_pad|><|vision_end|>`, a video part as `<|vision_start|><|video_pad|><|vision_end|>`;
 * the generation prompt is `<|im_start|>assistant\n`.
 */
import type { RenderPart, RenderTurn } from './types';

export const IM_START = '<|im_start|>';
export const IM_END = '<|im_end|>';
export const VISION_IMAGE = '<|vision_start|><|image_pad|><|vision_end|>';
export const VISION_VIDEO = '<|vision_start|><|video_pad|><|vision_end|>';

export function renderParts(parts: readonly RenderPart[]): string {
  let out = '';
  for (const p of parts) {
    if (p.type === 'text') out += p.text;
    else if (p.type === 'image') out += VISION_IMAGE;
    else out += VISION_VIDEO;
  }
  return out;
}

export function renderQwenChat(turns: readonly RenderTurn[], addGenerationPrompt: boolean): string {
  let out = '';
  if (turns.length === 0 || turns[0]!.role !== 'system') {
    out += `${IM_START}system\nYou are a helpful assistant.${IM_END}\n`;
  }
  for (const t of turns) out += `${IM_START}${t.role}\n${renderParts(t.parts)}${IM_END}\n`;
  if (addGenerationPrompt) out += `${IM_START}assistant\n`;
  return out;
}

/** The prompt text the reference parses against: decoded prompt with image/video pads removed. */
export function stripPads(text: string): string {
  return text.split('<|image_pad|>').join('').split('<|video_pad|>').join('');
}

/** The committed tiny model and its PyTorch parity record (models/tiny-random-qwen25vl/parity.json). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatMessage, GenerateRequest } from '../../../app/engines/types';

export const TINY_DIR = fileURLToPath(new URL('../../../models/tiny-random-qwen25vl', import.meta.url));

export interface ParityCase {
  messages: Array<{ role: ChatMessage['role']; content: string | Array<{ type: 'text'; text: string } | { type: 'image'; file: string }> }>;
  images: string[];
  prompt: string;
  input_ids: number[];
  image_grid_thw: number[][];
  max_new_tokens: number;
  generated: number[];
}

export const parity = JSON.parse(readFileSync(path.join(TINY_DIR, 'parity.json'), 'utf8')) as {
  cases: Record<'single_image' | 'multi_image', ParityCase>;
  eos_token_id: number[];
};

export function image(file: string) {
  return { id: file, width: 0, height: 0, path: path.join(TINY_DIR, file) };
}

export function toMessages(c: ParityCase): ChatMessage[] {
  return c.messages.map((m) => ({
    role: m.role,
    content:
      typeof m.content === 'string'
        ? [{ type: 'text' as const, text: m.content }]
        : m.content.map((x) => (x.type === 'image' ? { type: 'image' as const, image: image(x.file) } : x)),
  }));
}

export function greedy(c: ParityCase, over: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: toMessages(c), maxTokens: c.max_new_tokens, temperature: 0, topP: 1, topK: -1, stop: [], ...over };
}

/**
 * A judge that answers from the recorded transcript in tests/fixtures/judge (replies written for Loupe's
 * tests, labelled so in the file), looked up by the SHA-256 of the judge prompt. It is an Engine, so Loupe's
 * own OpenAI-compatible server can serve it over loopback and the judge is reached through real HTTP.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Engine, GenerateRequest, GenerateResult } from '../../../app/engines/types';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const DEEPEYES_TRANSCRIPT = path.join(root, 'tests/fixtures/judge/deepeyes-vstar-judge-transcript.json');

export class TranscriptJudgeEngine implements Engine {
  readonly replies: Map<string, string>;
  readonly seen: GenerateRequest[] = [];
  constructor(file = DEEPEYES_TRANSCRIPT) {
    const t = JSON.parse(readFileSync(file, 'utf8')) as { entries: Array<{ promptSha256: string; reply: string }> };
    this.replies = new Map(t.entries.map((e) => [e.promptSha256, e.reply]));
  }
  info() {
    return { id: 'transcript', kind: 'scripted' as const, model: 'judge' };
  }
  async generate(req: GenerateRequest): Promise<GenerateResult> {
    this.seen.push(req);
    const user = req.messages.find((m) => m.role === 'user')!.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    const reply = this.replies.get(createHash('sha256').update(user).digest('hex'));
    if (reply === undefined) throw new Error('no recorded judge reply for this prompt');
    req.onToken?.(reply);
    return { text: reply, promptTokens: 1, completionTokens: 1, finishReason: 'stop', latencyMs: 0 };
  }
  async dispose() {}
}

/**
 * An Engine that replays recorded model text, one entry per turn — for tests, demos and replaying
 * imported trajectories through the real loop. It streams each reply as token-sized deltas, honours
 * the abort signal, and records every request it got.
 */
import type { Engine, EngineInfo, GenerateRequest, GenerateResult } from '../engines/types';
import { sleep } from '../sleep';

export interface ScriptedTurn {
  text: string;
  /** Default 'stop'. */
  finishReason?: GenerateResult['finishReason'];
  /** Default: an estimate from the prompt (chars / 4 plus images). */
  promptTokens?: number;
  /** Default: an estimate (chars / 4). */
  completionTokens?: number;
  /** Wait this long before answering (to exercise timeouts and cancel). */
  delayMs?: number;
  /** Fail this turn with this message instead of answering. */
  error?: string;
}

export interface ScriptedEngineOptions {
  id?: string;
  model?: string;
  /** Characters per streamed delta (default 8). */
  chunkSize?: number;
}

/** Rough token estimate for scripted runs: ~4 characters per token, ~256 tokens per image. */
export function estimateTokens(text: string, images = 0): number {
  return Math.ceil(text.length / 4) + images * 256;
}

function countImages(req: GenerateRequest): number {
  let n = 0;
  for (const m of req.messages) for (const c of m.content) n += c.type === 'image' ? 1 : c.type === 'video' ? c.frames.length : 0;
  return n;
}

export class ScriptedEngine implements Engine {
  private next = 0;
  readonly requests: GenerateRequest[] = [];
  private readonly turns: ScriptedTurn[];

  constructor(
    turns: Array<string | ScriptedTurn>,
    private readonly opts: ScriptedEngineOptions = {},
  ) {
    this.turns = turns.map((t) => (typeof t === 'string' ? { text: t } : t));
  }

  info(): EngineInfo {
    return { id: this.opts.id ?? 'scripted', kind: 'scripted', model: this.opts.model ?? 'scripted' };
  }

  /** How many scripted turns were consumed. */
  get used(): number {
    return this.next;
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    const started = Date.now();
    this.requests.push(req);
    const turn = this.turns[this.next];
    if (!turn) throw new Error(`scripted engine: no recorded reply for turn ${this.next + 1} (the script has ${this.turns.length})`);
    this.next += 1;
    if (turn.delayMs) await sleep(turn.delayMs, req.signal);
    if (req.signal?.aborted) throw req.signal.reason ?? new Error('aborted');
    if (turn.error) throw new Error(turn.error);
    const size = Math.max(1, this.opts.chunkSize ?? 8);
    for (let i = 0; i < turn.text.length; i += size) {
      req.onToken?.(turn.text.slice(i, i + size));
      if (req.signal?.aborted) throw req.signal.reason ?? new Error('aborted');
    }
    return {
      text: turn.text,
      promptTokens: turn.promptTokens ?? estimateTokens(req.prompt ?? '', countImages(req)),
      completionTokens: turn.completionTokens ?? estimateTokens(turn.text),
      finishReason: turn.finishReason ?? 'stop',
      latencyMs: Date.now() - started,
    };
  }

  async dispose(): Promise<void> {
    // nothing to release
  }
}

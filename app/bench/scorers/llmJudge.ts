/**
 * `llm-judge`: accuracy by an LLM judge on any OpenAI-compatible server, the way DeepEyes and
 * PyVision-RL score (prompts and reply parsing in `judgePrompts.ts`), with each reference's rules first:
 *
 * - `deepeyes-eval/v1` (DeepEyes `eval/judge_result.py`, how its V* accuracy is computed): `\boxed{}` is
 *   unwrapped, then rules (one letter; two characters with a `.`; the `A. `-prefixed answer contained),
 *   then the judge at temperature 0.
 * - `deepeyes/v1` (DeepEyes training reward `vl_agent.compute_score`): the last `<answer>…</answer>`,
 *   the judge at 0.3; an answer of ≥ 1000 characters scores 0.
 * - `pyvision-rl/v1` (PyVision-RL `multi_task_verifier`): the format gate, then the judge at 0.3
 *   (`vsi_numerical` is scored by its MRA rule instead, as the reference routes it).
 *
 * The judge's calls go through an `Engine` (in practice `OpenAIEngine`), so concurrency, retries and
 * timeouts are the OpenAI engine's. Every reply is cached by (judge model, prompt version, temperature,
 * prompt): re-scoring a run costs nothing, and a cached reply is reported as such. Each result carries
 * the judge model, prompt version, temperature and raw reply.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Engine } from '../../engines/types';
import { pyLen, pyStrip } from '../../pycompat/str';
import { JsonlAppender, readJsonl } from '../../workspace/jsonl';
import { JUDGE_SYSTEM_PROMPT, JUDGE_TEMPERATURES, judgePrompt, parseJudgeReply, type JudgePromptVersion } from './judgePrompts';
import { pvrlMraScore, pyvisionFormatGate } from './pyvisionReward';
import type { ScoreResult } from './types';

/** Asks the judge one question. */
export interface JudgeClient {
  readonly model: string;
  ask(system: string, user: string, temperature: number, signal?: AbortSignal): Promise<string>;
}

/** A judge client over an engine (an `OpenAIEngine` for a served judge). */
export function engineJudgeClient(engine: Engine, opts: { maxTokens?: number } = {}): JudgeClient {
  return {
    model: engine.info().model,
    async ask(system, user, temperature, signal) {
      const r = await engine.generate({
        messages: [
          { role: 'system', content: [{ type: 'text', text: system }] },
          { role: 'user', content: [{ type: 'text', text: user }] },
        ],
        maxTokens: opts.maxTokens ?? 256,
        temperature,
        topP: 1,
        topK: -1,
        stop: [],
        signal,
      });
      return r.text;
    },
  };
}

export interface JudgeCacheEntry {
  key: string;
  model: string;
  promptVersion: string;
  temperature: number;
  reply: string;
  at: string;
}

/** Judge replies by key, kept in a JSONL file (append-only, through the workspace's one JSONL reader and appender). */
export class JudgeCache {
  private readonly map = new Map<string, JudgeCacheEntry>();
  /** Appends from this process, one at a time (each opens the file, repairing a torn tail first). */
  private chain: Promise<void> = Promise.resolve();
  private constructor(readonly file: string | null) {}

  static memory(): JudgeCache {
    return new JudgeCache(null);
  }

  static async open(file: string): Promise<JudgeCache> {
    const c = new JudgeCache(path.resolve(file));
    // The workspace's tolerant JSONL reader: a torn last line from an interrupted write (or a bad line) is skipped,
    // and that reply is simply asked again.
    const read = await readJsonl<JudgeCacheEntry>(c.file!, (v) => {
      const e = v as Partial<JudgeCacheEntry> | null;
      return e && typeof e.key === 'string' && typeof e.reply === 'string' ? { ok: true, value: e as JudgeCacheEntry } : { ok: false, message: 'not a judge reply' };
    }).catch((e: Error) => {
      throw new Error(`cannot read the judge cache ${file}: ${e.message}`);
    });
    for (const e of read.records) c.map.set(e.key, e);
    return c;
  }

  static key(model: string, promptVersion: string, temperature: number, system: string, prompt: string): string {
    return createHash('sha256').update(JSON.stringify([model, promptVersion, temperature, system, prompt])).digest('hex');
  }

  get size(): number {
    return this.map.size;
  }

  get(key: string): JudgeCacheEntry | undefined {
    return this.map.get(key);
  }

  async set(entry: JudgeCacheEntry): Promise<void> {
    this.map.set(entry.key, entry);
    if (this.file) {
      const file = this.file;
      const write = this.chain.then(async () => {
        await fsp.mkdir(path.dirname(file), { recursive: true });
        const out = await JsonlAppender.open(file, (v) => typeof (v as JudgeCacheEntry | null)?.key === 'string');
        try {
          await out.append(entry);
        } finally {
          await out.close();
        }
      });
      this.chain = write.catch(() => undefined);
      await write;
    }
  }
}

export interface JudgeInput {
  /** DeepEyes eval: the extracted `pred_ans`; the others: the model's whole response text. */
  prediction: string;
  answer: unknown;
  question: string;
  /** PyVision-RL routes prompts (and `vsi_numerical`) by data source; default `deepeyes`. */
  dataSource?: string;
}

export interface LlmJudgeOptions {
  client: JudgeClient;
  promptVersion: JudgePromptVersion;
  /** Default: the reference's own temperature for that prompt version. */
  temperature?: number;
  cache?: JudgeCache;
}

/** What each judged sample records (`ScoreResult.detail`). */
export interface JudgeDetail {
  judgeModel: string;
  promptVersion: JudgePromptVersion;
  temperature: number;
  /** Who decided: a rule, the judge, or the format gate (PyVision-RL). */
  decidedBy: 'rule' | 'judge' | 'format' | 'mra';
  rule?: string;
  rawReply?: string;
  verdict?: '1' | '0' | 'unparsed';
  cached?: boolean;
  /** PyVision-RL: the answer is right but scores 0 (≥ 1000 characters), so the tool reward is still paid. */
  isAnswerRight?: boolean;
}

export class LlmJudgeScorer {
  readonly name = 'llm-judge';
  readonly version: string;
  readonly description = 'LLM-as-judge accuracy (DeepEyes / PyVision-RL templates, reference rules first), through an OpenAI-compatible server';
  readonly temperature: number;
  private readonly cache: JudgeCache;
  /** Judge calls made (cache misses) since this scorer was created. */
  calls = 0;

  constructor(private readonly opts: LlmJudgeOptions) {
    this.temperature = opts.temperature ?? JUDGE_TEMPERATURES[opts.promptVersion];
    this.version = `${opts.promptVersion}@${opts.client.model}/t${this.temperature}`;
    this.cache = opts.cache ?? JudgeCache.memory();
  }

  private detail(decidedBy: JudgeDetail['decidedBy'], extra: Partial<JudgeDetail> = {}): JudgeDetail {
    return { judgeModel: this.opts.client.model, promptVersion: this.opts.promptVersion, temperature: this.temperature, decidedBy, ...extra };
  }

  private async ask(prompt: string, signal?: AbortSignal): Promise<{ reply: string; cached: boolean }> {
    const { client, promptVersion } = this.opts;
    const key = JudgeCache.key(client.model, promptVersion, this.temperature, JUDGE_SYSTEM_PROMPT, prompt);
    const hit = this.cache.get(key);
    if (hit) return { reply: hit.reply, cached: true };
    this.calls++;
    const reply = await client.ask(JUDGE_SYSTEM_PROMPT, prompt, this.temperature, signal);
    await this.cache.set({ key, model: client.model, promptVersion, temperature: this.temperature, reply, at: new Date().toISOString() });
    return { reply, cached: false };
  }

  private result(acc: number, extracted: string | null, detail: JudgeDetail): ScoreResult {
    return { score: acc, correct: detail.isAnswerRight ?? acc > 0.5, extracted, detail: { ...detail } };
  }

  async judge(input: JudgeInput, signal?: AbortSignal): Promise<ScoreResult> {
    const v = this.opts.promptVersion;
    const gt = typeof input.answer === 'string' ? input.answer : JSON.stringify(input.answer);
    if (v === 'deepeyes-eval/v1') {
      let pred = input.prediction;
      const answer = `A. ${gt}`;
      if (pred.includes('\\boxed')) {
        const parts = pred.split('\\boxed{');
        // The reference indexes [1] and crashes when `\boxed` has no `{`: that sample gets no score there.
        if (parts.length < 2) return this.result(0, pred, this.detail('rule', { rule: 'unparseable \\boxed (the reference raises IndexError)' }));
        pred = parts[1]!.split('}')[0]!;
      }
      if (pyLen(pred) === 1) return this.result(pred === 'A' ? 1 : 0, pred, this.detail('rule', { rule: 'one letter' }));
      if (pyLen(pred) === 2 && pred.includes('.')) return this.result(pred.includes('A') ? 1 : 0, pred, this.detail('rule', { rule: 'letter and dot' }));
      if (pred.includes(answer)) return this.result(1, pred, this.detail('rule', { rule: 'answer contained' }));
      const { reply, cached } = await this.ask(judgePrompt(v, pred, answer, input.question), signal);
      const p = parseJudgeReply(reply);
      return this.result(p.acc, pred, this.detail('judge', { rawReply: reply, verdict: p.verdict, cached }));
    }
    if (v === 'deepeyes/v1') {
      const answerText = pyStrip(input.prediction.split('<answer>').at(-1)!.split('</answer>')[0]!);
      const { reply, cached } = await this.ask(judgePrompt(v, answerText, gt, input.question), signal);
      const p = parseJudgeReply(reply);
      const acc = pyLen(answerText) >= 1000 ? 0 : p.acc;
      return this.result(acc, answerText, this.detail('judge', { rawReply: reply, verdict: p.verdict, cached }));
    }
    // pyvision-rl/v1
    const source = input.dataSource ?? 'deepeyes';
    if (source === 'vsi_numerical' || source.endsWith('_rule_verifiable')) {
      const m = pvrlMraScore(input.prediction, input.answer);
      return { score: m.score ?? 0, correct: m.isAnswerRight ?? false, extracted: m.predNumber, detail: { ...this.detail('mra'), ...(m.error ? { error: m.error } : {}) } };
    }
    const gate = pyvisionFormatGate(input.prediction);
    if (!gate.formatOk) return this.result(0, gate.extracted, this.detail('format', { isAnswerRight: false }));
    const { reply, cached } = await this.ask(judgePrompt(v, gate.extracted!, gt, input.question, source), signal);
    const p = parseJudgeReply(reply);
    const right = p.acc === 1;
    const score = pyLen(gate.extracted!) >= 1000 ? 0 : p.acc;
    return this.result(score, gate.extracted, this.detail('judge', { rawReply: reply, verdict: p.verdict, cached, isAnswerRight: right }));
  }
}

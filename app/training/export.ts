/**
 * Training data out of Loupe runs:
 *  - RL rows for verl/verl-tool (the parquet row shape of verl-tool's pixel_reasoner prepare_train.py, as JSON),
 *    Pixel Reasoner (OpenRLHF parquet columns) and ms-swift (messages + images/videos + solution);
 *  - SFT traces from successful trajectories (SampleRecord.trajectory), as Qwen chat messages
 *    (Pixel Reasoner `message_list` shape) or ms-swift `messages` + `images`.
 * Rows are plain JSON; write them with `writeJsonl`. Convert to parquet where a trainer needs it
 * (`python -c "import pandas as pd; pd.read_json('x.jsonl', lines=True).to_parquet('x.parquet')"`).
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { SampleRecord, Trajectory } from '../contract/trajectory';

/** One RL prompt: a question about images (or video frames) with a reference answer. */
export interface RlItem {
  qid: string;
  question: string;
  /** Absolute paths of the images (or the video file(s) when isVideo). */
  media: string[];
  isVideo?: boolean;
  answer: string | string[];
  /** Extra columns (e.g. VSI-Bench question_type, options). */
  extra?: Record<string, unknown>;
}

export class ExportError extends Error {
  constructor(where: string, message: string) {
    super(`${where}: ${message}`);
    this.name = 'ExportError';
  }
}

function checkItem(it: RlItem, where: string): void {
  if (!it.qid) throw new ExportError(where, 'qid is empty');
  if (!it.question.trim()) throw new ExportError(`${where} (${it.qid})`, 'question is empty');
  if (!it.media.length) throw new ExportError(`${where} (${it.qid})`, 'no media paths');
  for (const m of it.media) if (!path.isAbsolute(m)) throw new ExportError(`${where} (${it.qid})`, `media path ${JSON.stringify(m)} must be absolute (trainers resolve from their own cwd)`);
  if ((Array.isArray(it.answer) ? it.answer : [it.answer]).every((a) => String(a).trim() === '')) throw new ExportError(`${where} (${it.qid})`, 'answer is empty');
}

export interface VerlRowOptions {
  /** System prompt text (the verl-tool pixel_reasoner tool prompt; the protocol module owns it). */
  system: string;
  /** Text appended after the question, separated by a blank line (verl-tool's guideline). */
  guideline?: string;
  dataSource?: string;
  split?: string;
  imageToken?: string;
}

/** The verl/verl-tool parquet row (data_source, prompt[system,user], images, ability, reward_model, extra_info). */
export function toVerlRow(it: RlItem, index: number, o: VerlRowOptions): Record<string, unknown> {
  checkItem(it, 'verl row');
  const tok = o.imageToken ?? '<image>';
  const question = o.guideline ? `${it.question}\n\n${o.guideline}` : it.question;
  const answers = Array.isArray(it.answer) ? it.answer : [it.answer];
  return {
    data_source: o.dataSource ?? 'loupe',
    prompt: [
      { role: 'system', content: o.system },
      { role: 'user', content: tok.repeat(it.media.length) + question },
    ],
    images: it.media.map((image) => ({ image })),
    ability: 'visual_reasoning',
    reward_model: { style: 'rule', ground_truth: answers[0] },
    extra_info: { split: o.split ?? 'train', index, qid: it.qid, is_video: !!it.isVideo, images: it.media, ...(it.extra ?? {}) },
  };
}

/** Pixel Reasoner (OpenRLHF) columns: question, image (list), is_video, answer (list), qid. The benchmark is qid's prefix before '-'. */
export function toPixelReasonerRow(it: RlItem): Record<string, unknown> {
  checkItem(it, 'pixel-reasoner row');
  if (!/^[^-]+-/.test(it.qid)) throw new ExportError(`pixel-reasoner row (${it.qid})`, 'qid must look like "<bench>-<id>" (Pixel Reasoner reads the benchmark from the prefix)');
  return { question: it.question, image: it.media, is_video: !!it.isVideo, answer: Array.isArray(it.answer) ? it.answer : [it.answer], qid: it.qid };
}

/** ms-swift GRPO row: messages (with <image>/<video> tokens), images|videos, solution (+ extra columns for the ORM). */
export function toMsSwiftRow(it: RlItem, o: { prefix?: string; suffix?: string } = {}): Record<string, unknown> {
  checkItem(it, 'ms-swift row');
  const tok = it.isVideo ? '<video>' : '<image>';
  const content = `${tok.repeat(it.media.length)}${o.prefix ?? ''}${it.question}${o.suffix ?? ''}`;
  const answers = Array.isArray(it.answer) ? it.answer : [it.answer];
  return {
    messages: [{ role: 'user', content }],
    [it.isVideo ? 'videos' : 'images']: it.media,
    solution: answers[0],
    qid: it.qid,
    ...(it.extra ?? {}),
  };
}

export interface SftOptions {
  /** Resolve a workspace media id (`<sha256>.<ext>`) to an absolute path. */
  mediaPath: (id: string) => string;
  /** Appended to tool-turn text when the recorded text lacks it (the engine strips the stop string). Default `</tool_call>`. */
  toolStop?: string;
  /** Keep only records with `correct === true` (default true). */
  onlyCorrect?: boolean;
  /** Drop trajectories that contain tool errors (default true). */
  dropToolErrors?: boolean;
}

type QwenPart = { type: 'image'; image: string } | { type: 'text'; text: string };
export interface QwenMessage {
  role: 'system' | 'user' | 'assistant';
  content: QwenPart[];
}

export interface SftTrace {
  qid: string;
  bench: string;
  /** Pixel Reasoner SFT shape. */
  message_list: QwenMessage[];
}

/** Why a record was not exported (kept for the export report). */
export interface SftSkip {
  qid: string;
  reason: string;
}

function turnsToMessages(t: Trajectory, o: SftOptions): QwenMessage[] {
  const stop = o.toolStop ?? '</tool_call>';
  const msgs: QwenMessage[] = [];
  if (t.system) msgs.push({ role: 'system', content: [{ type: 'text', text: t.system }] });
  msgs.push({
    role: 'user',
    content: [...t.media.map((m) => ({ type: 'image' as const, image: o.mediaPath(m.id) })), { type: 'text', text: t.userText ?? t.question }],
  });
  for (const turn of t.turns) {
    const text = turn.call && !turn.text.endsWith(stop) ? `${turn.text}${stop}` : turn.text;
    msgs.push({ role: 'assistant', content: [{ type: 'text', text }] });
    if (turn.call) {
      const parts: QwenPart[] = [];
      if (turn.observation) parts.push({ type: 'text', text: turn.observation });
      for (const m of turn.call.produced) parts.push({ type: 'image', image: o.mediaPath(m.id) });
      if (parts.length) msgs.push({ role: 'user', content: parts });
    }
  }
  return msgs;
}

/** SFT traces from successful trajectories; returns the traces and why others were skipped. */
export function exportSftTraces(records: Iterable<SampleRecord>, o: SftOptions): { traces: SftTrace[]; skipped: SftSkip[] } {
  const traces: SftTrace[] = [];
  const skipped: SftSkip[] = [];
  for (const r of records) {
    const t = r.trajectory;
    if (!t) skipped.push({ qid: r.qid, reason: 'no trajectory stored' });
    else if ((o.onlyCorrect ?? true) && !r.correct) skipped.push({ qid: r.qid, reason: `not correct (score ${r.score})` });
    else if (t.stopReason !== 'answer') skipped.push({ qid: r.qid, reason: `stopped by ${t.stopReason}, not a final answer` });
    else if ((o.dropToolErrors ?? true) && t.turns.some((x) => x.call?.error)) skipped.push({ qid: r.qid, reason: 'has a tool error' });
    else if (!t.turns.length) skipped.push({ qid: r.qid, reason: 'no turns' });
    else traces.push({ qid: r.qid, bench: r.bench, message_list: turnsToMessages(t, o) });
  }
  return { traces, skipped };
}

/** ms-swift SFT row from a trace: string contents with <image> tokens, images in order. */
export function sftTraceToMsSwift(trace: SftTrace): { messages: Array<{ role: string; content: string }>; images: string[] } {
  const images: string[] = [];
  const messages = trace.message_list.map((m) => ({
    role: m.role,
    content: m.content
      .map((p) => {
        if (p.type === 'image') {
          images.push(p.image);
          return '<image>';
        }
        return p.text;
      })
      .join(''),
  }));
  return { messages, images };
}

/** Write rows as JSONL (creates folders). Resolves with the row count. */
export async function writeJsonl(file: string, rows: Iterable<unknown>): Promise<number> {
  await mkdir(path.dirname(file), { recursive: true });
  const ws = createWriteStream(file, { encoding: 'utf8' });
  let n = 0;
  await new Promise<void>((resolve, reject) => {
    ws.on('error', reject);
    for (const r of rows) {
      ws.write(`${JSON.stringify(r)}\n`);
      n += 1;
    }
    ws.end(() => resolve());
  });
  return n;
}

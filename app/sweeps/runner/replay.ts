/**
 * Replay engines: recorded model text per qid, played back through the real agent loop (real tool calls on
 * real pixels, real scoring). `--model replay:<file>` in the CLI. Deterministic and instant, so they serve
 * tests, benchmarks of the runner itself, and re-scoring recorded outputs under a new scorer.
 *
 * File: JSONL, one object per line, either
 *   `{"qid": "...", "turns": ["model text of turn 1", {"text": "...", "delayMs": 50}, ...]}` or
 *   `{"qid": "...", "message_list": [...]}` (Pixel Reasoner SFT shape, e.g. `loupe synth --sft` output:
 *   the assistant messages' text become the turns). The first line for a qid wins.
 */
import { promises as fsp } from 'node:fs';
import { ScriptedEngine, type ScriptedTurn } from '../../agent/scriptedEngine';

export interface ReplayBook {
  file: string;
  byQid: Map<string, ScriptedTurn[]>;
}

function turnsOf(value: unknown, where: string): ScriptedTurn[] {
  if (typeof value !== 'object' || value === null) throw new Error(`${where}: expected an object with "qid" and "turns" or "message_list"`);
  const v = value as Record<string, unknown>;
  if (Array.isArray(v['turns'])) {
    return v['turns'].map((t, i) => {
      if (typeof t === 'string') return { text: t };
      if (typeof t === 'object' && t !== null && typeof (t as { text?: unknown }).text === 'string') return t as ScriptedTurn;
      throw new Error(`${where}: turns[${i}] must be a string or {"text": ...}`);
    });
  }
  if (Array.isArray(v['message_list'])) {
    const out: ScriptedTurn[] = [];
    for (const m of v['message_list'] as Array<{ role?: unknown; content?: unknown }>) {
      if (m?.role !== 'assistant') continue;
      const c = m.content;
      const text = typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { type?: string; text?: string }) => (p?.type === 'text' ? p.text ?? '' : '')).join('') : '';
      out.push({ text });
    }
    return out;
  }
  throw new Error(`${where}: expected "turns" (array) or "message_list" (array)`);
}

/** Read a replay file; errors name the file and line. */
export async function loadReplay(file: string): Promise<ReplayBook> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`replay file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const byQid = new Map<string, ScriptedTurn[]>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    const where = `${file}:${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new Error(`${where}: not valid JSON (${(err as Error).message})`);
    }
    const qid = (v as { qid?: unknown } | null)?.qid;
    if (typeof qid !== 'string') throw new Error(`${where}: missing string field "qid"`);
    if (!byQid.has(qid)) byQid.set(qid, turnsOf(v, where));
  }
  if (byQid.size === 0) throw new Error(`replay file ${file} has no records`);
  return { file, byQid };
}

/** A fresh scripted engine replaying the turns recorded for `qid` (an engine with no turns when unknown). */
export function replayEngine(book: ReplayBook, qid: string, opts: { model?: string; delayMs?: number } = {}): ScriptedEngine {
  const turns = book.byQid.get(qid) ?? [];
  const withDelay = opts.delayMs ? turns.map((t) => ({ ...t, delayMs: t.delayMs ?? opts.delayMs })) : turns;
  return new ScriptedEngine(withDelay, { id: 'replay', model: opts.model ?? 'replay' });
}

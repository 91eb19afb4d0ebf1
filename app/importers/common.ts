/** Shared reading helpers for importers: JSONL with line numbers, media refs, multi-turn text splitting. */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { MediaRef, StopReason, ToolCallRecord, Turn } from '../contract/trajectory';
import type { Dialect, ParseResult } from '../protocol/types';
import { readImageSize } from '../tools/imageSize';
import { ImportError, type ImportIssue, type ImportedMedia } from './types';

export interface JsonlRow {
  line: number;
  value: unknown;
}

/** Read a JSONL file; bad JSON lines become issues (file + line), blank lines are skipped. */
export async function readJsonlRows(file: string, shown: string, issues: ImportIssue[]): Promise<{ rows: JsonlRow[]; nonBlank: number }> {
  const text = await fsp.readFile(file, 'utf8');
  const rows: JsonlRow[] = [];
  let nonBlank = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] as string).replace(/\r$/, '');
    if (raw.trim() === '') continue;
    nonBlank++;
    try {
      rows.push({ line: i + 1, value: JSON.parse(raw) });
    } catch (e) {
      const torn = i === lines.length - 1 && !text.endsWith('\n');
      issues.push({
        severity: 'error',
        file: shown,
        line: i + 1,
        message: `not valid JSON (${(e as Error).message})${torn ? '; the last line looks cut off' : ''}`,
      });
    }
  }
  return { rows, nonBlank };
}

export async function readJsonFile(file: string, shown: string): Promise<unknown> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    throw new ImportError(`${shown}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ImportError(`${shown}: not valid JSON (${(e as Error).message})`);
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Thrown inside a record conversion; the importer turns it into an error issue for that record. */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

export function reqString(rec: Record<string, unknown>, field: string): string {
  const v = rec[field];
  if (typeof v !== 'string') throw new FieldError(field, v === undefined ? 'missing (expected a string)' : `expected a string, got ${typeName(v)}`);
  return v;
}

export function optString(rec: Record<string, unknown>, field: string): string | undefined {
  const v = rec[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new FieldError(field, `expected a string, got ${typeName(v)}`);
  return v;
}

export function optNumber(rec: Record<string, unknown>, field: string): number | undefined {
  const v = rec[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new FieldError(field, `expected a number, got ${typeName(v)}`);
  return v;
}

export function reqArray(rec: Record<string, unknown>, field: string): unknown[] {
  const v = rec[field];
  if (!Array.isArray(v)) throw new FieldError(field, v === undefined ? 'missing (expected a list)' : `expected a list, got ${typeName(v)}`);
  return v;
}

/** Content-address a file the way the workspace MediaStore does (`<sha256>.<ext>`), with its size. */
export async function mediaFromFile(file: string): Promise<ImportedMedia> {
  const bytes = await fsp.readFile(file);
  const ext = (path.extname(file).slice(1).toLowerCase() || 'bin').replace('jpeg', 'jpg');
  const id = `${createHash('sha256').update(bytes).digest('hex')}.${ext}`;
  // Not an image whose header we know: keep it with unknown size.
  const { width, height } = readImageSize(bytes) ?? { width: 0, height: 0 };
  const mime = ext === 'jpg' ? 'image/jpeg' : ext === 'png' ? 'image/png' : undefined;
  const ref: MediaRef = { id, width, height, ...(mime ? { mime } : {}) };
  return { ref, path: file };
}

export async function isFile(p: string): Promise<boolean> {
  try {
    return (await fsp.stat(p)).isFile();
  } catch {
    return false;
  }
}

export async function isDir(p: string): Promise<boolean> {
  try {
    return (await fsp.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

const VISION_RE = /<\|vision_start\|>(?:<\|image_pad\|>|<\|video_pad\|>)*(?:\*\d+)?<\|vision_end\|>/g;

/** Count and strip Qwen vision placeholders (with or without their pads). */
export function stripVision(text: string): { text: string; images: number } {
  let images = 0;
  const out = text.replace(VISION_RE, () => {
    images++;
    return '';
  });
  return { text: out.replace(/<\|image_pad\|>|<\|video_pad\|>/g, ''), images };
}

/**
 * Split a multi-turn response as Pixel Reasoner (`solutions`) and verl-tool (`response`) log it:
 * assistant text, then `[<|im_end|>][\n]<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n`,
 * then the next assistant text, and so on. Returns the assistant texts and the observations between them.
 */
export function splitChatResponse(text: string): { assistant: string[]; observations: Array<{ text: string; images: number }> } {
  return splitByObservations(text, /(?:<\|im_end\|>)?\n?<\|im_start\|>user\n([\s\S]*?)<\|im_end\|>\n?<\|im_start\|>assistant\n/g);
}

/** Split a multi-turn response at each observation `re` matches (group 1 = the observation text). */
export function splitByObservations(text: string, re: RegExp): { assistant: string[]; observations: Array<{ text: string; images: number }> } {
  const assistant: string[] = [];
  const observations: Array<{ text: string; images: number }> = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    assistant.push(text.slice(last, m.index));
    observations.push(stripVision(m[1] as string));
    last = (m.index as number) + m[0].length;
  }
  assistant.push(text.slice(last));
  return { assistant: assistant.map(cleanAssistant), observations };
}

/** Drop end-of-turn tokens a decoder left in an assistant text. */
export function cleanAssistant(t: string): string {
  return t.replace(/(?:<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>)+\s*$/g, '');
}

/** The user text of a Qwen chat prompt (first user message), vision placeholders removed. */
export function userTextOfPrompt(prompt: string): string | null {
  const i = prompt.indexOf('<|im_start|>user\n');
  if (i < 0) return null;
  const rest = prompt.slice(i + '<|im_start|>user\n'.length);
  const j = rest.indexOf('<|im_end|>');
  return stripVision(j < 0 ? rest : rest.slice(0, j)).text;
}

/** The system text of a Qwen chat prompt, or null. */
export function systemTextOfPrompt(prompt: string): string | null {
  const i = prompt.indexOf('<|im_start|>system\n');
  if (i < 0) return null;
  const rest = prompt.slice(i + '<|im_start|>system\n'.length);
  const j = rest.indexOf('<|im_end|>');
  return j < 0 ? rest : rest.slice(0, j);
}

/** Build a ToolCallRecord from a dialect parse of one assistant turn. */
export function callRecordFrom(parse: ParseResult): ToolCallRecord {
  if (!parse.ok) {
    return { raw: parse.raw, name: parse.name ?? null, produced: [], error: parse.error.message };
  }
  const { name, arguments: args, raw } = parse.call;
  const rec: ToolCallRecord = { raw, name, arguments: args, produced: [] };
  if (isRecord(args)) {
    const bbox = args.bbox_2d;
    if (Array.isArray(bbox) && bbox.length === 4 && bbox.every((v) => typeof v === 'number')) {
      rec.bboxRaw = bbox as [number, number, number, number];
      rec.bboxMode = (bbox as number[]).every((v) => v < 1) ? 'normalized' : 'absolute';
    }
    const t = args.target_image;
    if (typeof t === 'number' && Number.isInteger(t)) rec.targetIndex = t - 1;
    const f = args.target_frames;
    if (Array.isArray(f) && f.every((v) => typeof v === 'number' && Number.isInteger(v))) rec.frameIndices = (f as number[]).map((v) => v - 1);
  }
  return rec;
}

/**
 * Turns from assistant texts and the observations that followed them. A turn is a tool turn when the
 * dialect says so, or when an observation followed it (the source executed something).
 */
export function buildTurns(
  dialect: Dialect,
  assistant: string[],
  observations: Array<{ text: string; images: number } | undefined>,
  errorOf: (obs: string) => string | undefined,
): Turn[] {
  const turns: Turn[] = [];
  assistant.forEach((text, index) => {
    const obs = observations[index];
    const turn: Turn = { index, text };
    if (dialect.isToolTurn(text) || obs !== undefined) {
      const call = callRecordFrom(dialect.parseCall('', text));
      if (obs !== undefined) {
        const err = errorOf(obs.text);
        if (err !== undefined) call.error = err;
      }
      turn.call = call;
    }
    if (obs !== undefined) turn.observation = obs.text;
    turns.push(turn);
  });
  return turns;
}

/** Stop reason for an imported episode, when the source does not record one. */
export function inferStopReason(turns: Turn[], hasFinalAnswer: boolean, maxCalls: number): StopReason {
  const last = turns[turns.length - 1];
  if (!last) return 'error';
  if (hasFinalAnswer && !last.call) return 'answer';
  const calls = turns.filter((t) => t.call).length;
  if (last.call && calls >= maxCalls) return 'max_calls';
  if (!last.call) return 'answer';
  return 'max_calls';
}

/** `baseName` unless taken; then `baseName#2`, `#3`… (repeated samples of one question). */
export function uniqueQid(seen: Map<string, number>, qid: string): string {
  const n = (seen.get(qid) ?? 0) + 1;
  seen.set(qid, n);
  return n === 1 ? qid : `${qid}#${n}`;
}

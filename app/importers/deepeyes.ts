/**
 * DeepEyes eval results (`eval/eval_vstar.py` + `eval/judge_result.py` of Visual-Agent/DeepEyes): JSONL
 * records `{image, question, answer, pred_ans, pred_output: [chat messages], status, acc?}`.
 *
 * Facts of the real files (tests/fixtures/importers/deepeyes/README.md):
 * - assistant texts stop *before* `</tool_call>` (it was a stop string), so a call reads
 *   `<tool_call>\n{...}\n` with no closing tag; we restore the tag to parse it;
 * - images are stripped (`data:image/jpeg;base64,` with no payload): observations keep their text only;
 * - a conversation may end on a user turn (no final answer), one record has `status: "error"`;
 * - an assistant turn can hold both `<answer>` and a `<tool_call>` that was executed anyway.
 */
import path from 'node:path';
import { promises as fsp } from 'node:fs';
import type { SampleRecord, StopReason, Turn } from '../contract/trajectory';
import { APP_VERSION } from '../version';
import { deepEyesAnswer, deepEyesDialect } from '../protocol/deepEyes';
import { callRecordFrom, FieldError, isDir, isRecord, optNumber, readJsonlRows, reqArray, reqString, uniqueQid } from './common';
import { ImportError, type ImportedRun, type ImportIssue, type ImportOptions } from './types';

const VSTAR_CATEGORIES = new Set(['direct_attributes', 'relative_position']);

/** `result_<category>[_tmp]_acc.jsonl` / `result_<category>.jsonl` → category. */
export function deepEyesCategory(file: string): string {
  const base = path.basename(file).replace(/\.jsonl$/, '');
  return base.replace(/^result_/, '').replace(/(?:_tmp)?_acc$/, '');
}

/** Files to import from a path: the file itself, or a folder's judged files (`*_acc.jsonl`), else all `*.jsonl`. */
async function inputFiles(p: string): Promise<string[]> {
  if (!(await isDir(p))) return [p];
  const all = (await fsp.readdir(p)).filter((f) => f.endsWith('.jsonl')).sort();
  const judged = all.filter((f) => /_acc\.jsonl$/.test(f));
  // Prefer the final `_acc` over `_tmp_acc` when both exist for a category.
  const cats = new Map<string, string>();
  for (const f of judged) {
    const c = deepEyesCategory(f);
    const prev = cats.get(c);
    if (!prev || (prev.includes('_tmp_acc') && !f.includes('_tmp_acc'))) cats.set(c, f);
  }
  const chosen = judged.length > 0 ? [...cats.values()].sort() : all;
  if (chosen.length === 0) throw new ImportError(`${p}: no DeepEyes result files (*.jsonl) in this folder`);
  return chosen.map((f) => path.join(p, f));
}

function contentText(content: unknown): { text: string; images: number } {
  if (typeof content === 'string') return { text: content, images: 0 };
  if (!Array.isArray(content)) return { text: '', images: 0 };
  let text = '';
  let images = 0;
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string') text += part.text;
    else if (part.type === 'image_url' || part.type === 'image') images++;
  }
  return { text, images };
}

/** "Question: …\nOptions: \nA. x\nB. y\n\n…" → option texts. */
export function deepEyesOptions(userText: string): string[] | undefined {
  const i = userText.indexOf('\nOptions:');
  if (i < 0) return undefined;
  const opts: string[] = [];
  for (const line of userText.slice(i + '\nOptions:'.length).split('\n')) {
    const m = /^([A-Z])\. (.*)$/.exec(line);
    if (m) opts.push(m[2] as string);
    else if (opts.length > 0 && line.trim() === '') break;
  }
  return opts.length >= 2 ? opts : undefined;
}

/** The call text of a turn, with the `</tool_call>` the stop string removed put back. */
function withClosedCall(text: string): string {
  const open = text.lastIndexOf('<tool_call>');
  if (open < 0 || text.indexOf('</tool_call>', open) >= 0) return text;
  return `${text.trimEnd()}\n</tool_call>`;
}

export function convertDeepEyesRecord(rec: Record<string, unknown>, category: string, fileShown: string): SampleRecord {
  const image = reqString(rec, 'image');
  const question = reqString(rec, 'question');
  const answer = reqString(rec, 'answer');
  const predAns = typeof rec.pred_ans === 'string' ? rec.pred_ans : '';
  const messages = reqArray(rec, 'pred_output');
  const status = typeof rec.status === 'string' ? rec.status : undefined;
  const acc = optNumber(rec, 'acc');

  let system: string | undefined;
  let userText: string | undefined;
  const assistant: string[] = [];
  const obs: Array<{ text: string; images: number } | undefined> = [];
  messages.forEach((m, i) => {
    if (!isRecord(m) || typeof m.role !== 'string') throw new FieldError(`pred_output[${i}]`, 'expected a chat message {role, content}');
    const c = contentText(m.content);
    if (m.role === 'system') system = c.text;
    else if (m.role === 'user' && assistant.length === 0) userText = c.text;
    else if (m.role === 'assistant') assistant.push(c.text);
    else if (m.role === 'user') obs[assistant.length - 1] = c;
  });
  if (userText === undefined) throw new FieldError('pred_output', 'no user message with the question');

  const turns: Turn[] = assistant.map((text, index) => {
    const turn: Turn = { index, text };
    const o = obs[index];
    // An executed call is one followed by an observation, even when the turn also has an <answer>.
    if (deepEyesDialect.isToolTurn(withClosedCall(text)) || o !== undefined) {
      const call = callRecordFrom(deepEyesDialect.parseCall('', withClosedCall(text)));
      if (o && /^\s*Error:/.test(o.text)) call.error = o.text.trim().replace(/^Error:\s*/, '');
      turn.call = call;
    }
    if (o !== undefined) turn.observation = o.text;
    return turn;
  });
  const calls = turns.filter((t) => t.call).length;
  const lastMsg = messages[messages.length - 1];
  const endsOnUser = isRecord(lastMsg) && lastMsg.role === 'user';
  const lastText = assistant[assistant.length - 1] ?? '';
  const finalAnswer = deepEyesAnswer(lastText);
  let stop: StopReason;
  let error: string | undefined;
  if (status === 'error') {
    stop = 'error';
    error = `DeepEyes status "error" after ${calls} tool call(s)${endsOnUser ? '; the conversation ends on a user turn' : ''}`;
  } else if (endsOnUser) {
    stop = calls >= deepEyesDialect.limits.maxCalls ? 'max_calls' : 'error';
    if (stop === 'error') error = 'the conversation ends on a user turn (no final assistant turn)';
  } else {
    stop = finalAnswer !== null ? 'answer' : turns[turns.length - 1]?.call ? 'max_calls' : 'answer';
  }
  const options = deepEyesOptions(userText);
  const answerLetter = options ? options.indexOf(answer) : -1;
  const bench = VSTAR_CATEGORIES.has(category) ? 'vstar' : category || 'deepeyes';
  return {
    qid: `${category}/${image}`,
    bench,
    category,
    question,
    ...(options ? { options } : {}),
    answer,
    prediction: predAns,
    extracted: finalAnswer ?? predAns,
    score: acc ?? 0,
    correct: (acc ?? 0) > 0.5,
    stop_reason: stop,
    calls,
    tool_errors: turns.filter((t) => t.call?.error !== undefined).length,
    ...(error ? { error } : {}),
    trajectory: {
      dialect: 'deepeyes',
      prompt: 'deepeyes-v2',
      media: [],
      originals: [],
      isVideo: false,
      question,
      ...(system !== undefined ? { system } : {}),
      userText,
      turns,
      stopReason: stop,
      ...(error ? { error } : {}),
      finalText: lastText,
    },
    source: fileShown,
    extra: {
      image,
      ...(status !== undefined ? { status } : {}),
      ...(acc === undefined ? { unjudged: true } : { acc }),
      ...(answerLetter >= 0 ? { answerLetter: String.fromCharCode(65 + answerLetter) } : {}),
      // The crops were stripped from the file (empty base64 data URLs).
      imagesStripped: true,
    },
  };
}

export async function importDeepEyes(input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  const files = await inputFiles(input);
  const issues: ImportIssue[] = [];
  const samples: SampleRecord[] = [];
  const seen = new Map<string, number>();
  let records = 0;
  for (const file of files) {
    const shown = files.length === 1 && file === input ? input : path.basename(file);
    const category = deepEyesCategory(file);
    const { rows, nonBlank } = await readJsonlRows(file, shown, issues);
    records += nonBlank;
    for (const row of rows) {
      try {
        if (!isRecord(row.value)) throw new FieldError('(record)', 'expected a JSON object');
        const s = convertDeepEyesRecord(row.value, category, `${shown}:${row.line}`);
        s.qid = uniqueQid(seen, s.qid);
        if ((s.extra as Record<string, unknown>).unjudged) {
          issues.push({ severity: 'warning', file: shown, line: row.line, field: 'acc', message: 'missing: not judged yet (score 0); import the *_acc.jsonl file for scores' });
        }
        samples.push(s);
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        issues.push({ severity: 'error', file: shown, line: row.line, field: e.field, message: e.message });
      }
    }
  }
  const cats = [...new Set(samples.map((s) => s.category ?? ''))];
  const benches = [...new Set(samples.map((s) => s.bench))];
  return {
    manifest: {
      name: opts.name ?? `deepeyes-${benches.join('+') || 'import'}`,
      kind: 'import',
      appVersion: APP_VERSION,
      model: { id: opts.model ?? 'deepeyes' },
      engine: 'import',
      dialect: 'deepeyes',
      prompt: 'deepeyes-v2',
      bench: { id: benches.length === 1 ? (benches[0] as string) : benches.join('+') || 'deepeyes', n: samples.length },
      scorers: { acc: 'deepeyes judge (rule + LLM), as recorded' },
      extra: { importedFrom: 'deepeyes', files: files.map((f) => path.basename(f)), categories: cats },
    },
    samples,
    media: [],
    issues,
    stats: { files: files.length, records, imported: samples.length, skipped: records - samples.length },
  };
}

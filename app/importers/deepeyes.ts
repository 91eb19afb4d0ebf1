/**
 * DeepEyes eval results (`eval/eval_vstar.py`, `eval/eval_hrbench.py` + `eval/judge_result*.py` of
 * Visual-Agent/DeepEyes): `<save_path>/<model_name>/result_{test_type}_{model_name}[_acc].jsonl`, records
 * `{image?, question, answer, pred_ans, pred_output: [chat messages], status, acc?}` (HR-Bench: no image,
 * `answer` is a letter, plus `answer_str` and `category`).
 *
 * The test type gives the bench (direct_attributes / relative_position → `vstar`, hr_bench_4k/8k →
 * `hrbench4k/8k`) and V* qids are `vstar-<category>.<image stem>`, as Loupe's V* adapter names the same
 * questions, so imported and native runs compare. Images are attached later (`attach.ts`).
 *
 * Facts of the real files (tests/fixtures/importers/README.md, deepeyes_replication/SOURCE):
 * - assistant texts stop *before* `</tool_call>` (it was a stop string), so a call reads
 *   `<tool_call>\n{...}\n` with no closing tag; we restore the tag to parse it;
 * - images are stripped (`data:image/jpeg;base64,` with no payload): observations keep their text only;
 * - one record has `status: "error"`;
 * - an assistant turn can hold both `<answer>` and a `<tool_call>`: the eval loop (`while '</answer>' not
 *   in response`) executes the call, appends the user turn, then stops, so the record ends on a user
 *   turn; the episode ended with that answer (`pred_ans` is the eval's extraction of it).
 */
import path from 'node:path';
import { promises as fsp } from 'node:fs';
import type { SampleRecord, StopReason, Turn } from '../contract/trajectory';
import { APP_VERSION } from '../version';
import { deepEyesAnswer, deepEyesDialect } from '../protocol/deepEyes';
import { callRecordFrom, FieldError, isDir, isRecord, optNumber, optString, readJsonlRows, reqArray, reqString, uniqueQid } from './common';
import { ImportError, type ImportedRun, type ImportIssue, type ImportOptions } from './types';

/** DeepEyes test types (`eval_vstar.py`, `eval_hrbench*.py`) → Loupe's bench ids (app/bench/adapters). */
const TEST_TYPES: Record<string, string> = {
  direct_attributes: 'vstar',
  relative_position: 'vstar',
  hr_bench_4k: 'hrbench4k',
  hr_bench_8k: 'hrbench8k',
};

export interface DeepEyesFileName {
  /** The eval's `test_type` (a V* category, or `hr_bench_4k`…). */
  testType: string;
  /** The `--model_name` suffix, when the name has one. */
  model?: string;
  /** Written by `judge_result.py` (`_acc`) or its interim dump (`_tmp_acc`). */
  judged: boolean;
}

/**
 * `result_{test_type}_{model_name}[_tmp]_acc.jsonl` / `result_{test_type}[_{model_name}].jsonl` → parts.
 * The eval scripts save into `<save_path>/<model_name>/`, so the folder name is the model suffix when
 * the test type is not one DeepEyes ships.
 */
export function parseDeepEyesFileName(file: string): DeepEyesFileName {
  let base = path.basename(file).replace(/\.jsonl$/, '').replace(/^result_/, '');
  const judged = /_acc$/.test(base);
  base = base.replace(/(?:_tmp)?_acc$/, '');
  for (const t of Object.keys(TEST_TYPES).sort((a, b) => b.length - a.length)) {
    if (base === t) return { testType: t, judged };
    if (base.startsWith(`${t}_`)) return { testType: t, model: base.slice(t.length + 1), judged };
  }
  const dir = path.basename(path.dirname(file));
  if (dir && base.endsWith(`_${dir}`) && base.length > dir.length + 1) return { testType: base.slice(0, -(dir.length + 1)), model: dir, judged };
  return { testType: base, judged };
}

/** The V* category / test type of a result file name. */
export function deepEyesCategory(file: string): string {
  return parseDeepEyesFileName(file).testType;
}

/**
 * Files to import from a path: the file itself, or per test type of a folder its judged file (`_acc`
 * over `_tmp_acc` over unjudged). A folder with several models' results (`…_repeat1`, `…_bbox_only`)
 * needs `model` to say which; otherwise the runs would mix.
 */
async function inputFiles(p: string, model?: string): Promise<string[]> {
  if (!(await isDir(p))) return [p];
  const all = (await fsp.readdir(p)).filter((f) => f.endsWith('.jsonl') && f.startsWith('result_')).sort();
  const models = new Set(all.map((f) => parseDeepEyesFileName(path.join(p, f)).model ?? ''));
  let pick = all;
  if (models.size > 1) {
    if (model === undefined || !models.has(model)) {
      const names = [...models].map((m) => m || '(none)').join(', ');
      throw new ImportError(`${p}: results of ${models.size} models in this folder (${names}); pass --model NAME to pick one, or import one file`);
    }
    pick = all.filter((f) => (parseDeepEyesFileName(path.join(p, f)).model ?? '') === model);
  }
  const rank = (f: string) => (/_tmp_acc\.jsonl$/.test(f) ? 1 : /_acc\.jsonl$/.test(f) ? 2 : 0);
  const byType = new Map<string, string>();
  for (const f of pick) {
    const t = parseDeepEyesFileName(path.join(p, f)).testType;
    const prev = byType.get(t);
    if (prev === undefined || rank(f) > rank(prev)) byType.set(t, f);
  }
  const chosen = [...byType.values()].sort();
  if (chosen.length === 0) throw new ImportError(`${p}: no DeepEyes result files (result_*.jsonl) in this folder`);
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

/** The sample id: the one Loupe's own adapters give the same question, so runs compare. */
function qidOf(bench: string, testType: string, image: string | undefined, line: number): string {
  const stem = image?.replace(/\.[^.]+$/, '');
  if (bench === 'vstar') return `vstar-${testType}.${stem ?? `line${line}`}`;
  // HR-Bench results name no image and no index: the line stands in until the images are attached.
  return stem ? `${bench}-${stem}` : `${bench}-line${line}`;
}

export function convertDeepEyesRecord(rec: Record<string, unknown>, testType: string, fileShown: string, line = 0): SampleRecord {
  // Not every eval script writes `image` (HR-Bench's, and some V* forks): the image is attached later by name or question.
  const image = optString(rec, 'image');
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
  } else if (finalAnswer !== null) {
    // The eval loop runs `while '</answer>' not in response`: a reply holding both a call and an answer
    // has its call executed (so the record ends on a user turn), then the episode ends with that answer.
    stop = 'answer';
  } else if (endsOnUser) {
    stop = calls >= deepEyesDialect.limits.maxCalls ? 'max_calls' : 'error';
    if (stop === 'error') error = 'the conversation ends on a user turn (no final assistant turn)';
  } else {
    stop = turns[turns.length - 1]?.call ? 'max_calls' : 'answer';
  }
  const options = deepEyesOptions(userText);
  // V* records hold the correct option's text; HR-Bench records its letter (and the text in `answer_str`).
  const answerLetter = /^[A-Z]$/.test(answer) ? answer.charCodeAt(0) - 65 : options ? options.indexOf(answer) : -1;
  const bench = TEST_TYPES[testType] ?? (testType || 'deepeyes');
  const recCategory = typeof rec.category === 'string' ? rec.category : undefined;
  const category = bench === 'vstar' ? testType : (recCategory ?? testType);
  return {
    qid: qidOf(bench, testType, image, line),
    bench,
    category,
    question,
    ...(options ? { options } : {}),
    answer,
    prediction: predAns,
    // `pred_ans` is the eval's own extraction (the first <answer> of the last reply, else the whole reply).
    extracted: typeof rec.pred_ans === 'string' ? rec.pred_ans : (finalAnswer ?? ''),
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
      ...(image !== undefined ? { image } : {}),
      ...(typeof rec.answer_str === 'string' ? { answer_str: rec.answer_str } : {}),
      ...(status !== undefined ? { status } : {}),
      ...(acc === undefined ? { unjudged: true } : { acc }),
      ...(answerLetter >= 0 ? { answerLetter: String.fromCharCode(65 + answerLetter) } : {}),
      // The images were stripped from the file (empty base64 data URLs): attach a folder to see them.
      imagesStripped: true,
    },
  };
}

export async function importDeepEyes(input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  const files = await inputFiles(input, opts.model);
  const issues: ImportIssue[] = [];
  const samples: SampleRecord[] = [];
  const seen = new Map<string, number>();
  let records = 0;
  const models = new Set<string>();
  for (const file of files) {
    const shown = files.length === 1 && file === input ? input : path.basename(file);
    const name = parseDeepEyesFileName(file);
    if (name.model) models.add(name.model);
    const { rows, nonBlank } = await readJsonlRows(file, shown, issues);
    records += nonBlank;
    for (const row of rows) {
      try {
        if (!isRecord(row.value)) throw new FieldError('(record)', 'expected a JSON object');
        const s = convertDeepEyesRecord(row.value, name.testType, `${shown}:${row.line}`, row.line);
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
      // The `--model_name` of the eval (the file-name suffix) when all files agree on one.
      model: { id: opts.model ?? (models.size === 1 ? [...models][0]! : 'deepeyes') },
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

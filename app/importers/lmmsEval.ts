/**
 * lmms-eval `--log_samples` output: `<date>_samples_<task>.jsonl` (one record per doc) plus
 * `<date>_results.json`. Any subset of the documented keys is accepted (`doc_id`, `target`,
 * `filtered_resps`, `resps`, `doc_hash`, `input`, `doc`, `arguments`, per-sample metrics …).
 */
import path from 'node:path';
import { promises as fsp } from 'node:fs';
import type { SampleRecord, Turn } from '../contract/trajectory';
import { parseLetteredOptions } from '../bench/adapters/options';
import { getDialect } from '../protocol';
import { APP_VERSION } from '../version';
import { buildTurns, FieldError, isDir, isRecord, readJsonFile, readJsonlRows, uniqueQid } from './common';
import { ImportError, type ImportedRun, type ImportIssue, type ImportOptions } from './types';

/** Keys of a samples line that are not per-sample metrics. */
const NON_METRIC = new Set(['doc_id', 'target', 'filtered_resps', 'resps', 'doc_hash', 'input', 'doc', 'arguments', 'filter', 'metrics', 'prompt_hash', 'target_hash']);

const SAMPLES_RE = /^(?:(\d{8}_\d{6})_)?samples_(.+?)(?:\.head\d+)?\.jsonl$/;

async function inputFiles(p: string): Promise<{ samples: string[]; results: string[] }> {
  if (!(await isDir(p))) {
    const dir = path.dirname(p);
    const m = SAMPLES_RE.exec(path.basename(p));
    const results = m?.[1] ? [path.join(dir, `${m[1]}_results.json`)] : [];
    const present: string[] = [];
    for (const r of results) if (await fsp.stat(r).then((s) => s.isFile(), () => false)) present.push(r);
    return { samples: [p], results: present };
  }
  const all = (await fsp.readdir(p)).sort();
  const samples = all.filter((f) => SAMPLES_RE.test(f)).map((f) => path.join(p, f));
  if (samples.length === 0) throw new ImportError(`${p}: no lmms-eval samples files (*_samples_<task>.jsonl) in this folder`);
  return { samples, results: all.filter((f) => /_results\.json$/.test(f)).map((f) => path.join(p, f)) };
}

function flatStrings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap(flatStrings);
  return [];
}

export function convertLmmsRecord(rec: Record<string, unknown>, task: string, primaryMetric: string | undefined, shown: string): SampleRecord {
  const docId = rec.doc_id;
  if (typeof docId !== 'number' && typeof docId !== 'string') throw new FieldError('doc_id', docId === undefined ? 'missing (expected an integer)' : 'expected an integer');
  const filtered = flatStrings(rec.filtered_resps);
  const raw = flatStrings(rec.resps);
  if (rec.filtered_resps === undefined && rec.resps === undefined) throw new FieldError('filtered_resps', 'missing (neither filtered_resps nor resps is present)');
  const prediction = filtered[0] ?? raw[0] ?? '';
  const input = typeof rec.input === 'string' ? rec.input : flatStrings((rec.arguments as unknown[] | undefined)?.[0])[0] ?? '';
  const scores: Record<string, number> = {};
  for (const [k, v] of Object.entries(rec)) {
    if (NON_METRIC.has(k)) continue;
    if (typeof v === 'number' && Number.isFinite(v)) scores[k] = v;
    else if (typeof v === 'boolean') scores[k] = v ? 1 : 0;
  }
  const metric = primaryMetric && primaryMetric in scores ? primaryMetric : Object.keys(scores)[0];
  const score = metric !== undefined ? (scores[metric] as number) : 0;
  const parsed = parseLetteredOptions(input);
  // Model text: the raw response when logged, else the filtered one. Tool calls in it (a pixel-reasoning
  // model run through lmms-eval) become a call record on the single turn.
  const text = raw[0] ?? prediction;
  const dialect = getDialect('pixel-reasoner');
  const turns: Turn[] = buildTurns(dialect, [text], [], () => undefined);
  return {
    qid: `${task}/${docId}`,
    bench: task,
    question: parsed ? parsed.question : input,
    ...(parsed ? { options: parsed.options } : {}),
    answer: rec.target ?? null,
    prediction,
    extracted: prediction,
    score,
    ...(Object.keys(scores).length > 0 ? { scores } : {}),
    correct: score >= 0.5,
    stop_reason: 'answer',
    calls: turns.filter((t) => t.call).length,
    tool_errors: turns.filter((t) => t.call?.error !== undefined).length,
    trajectory: {
      dialect: 'lmms-eval',
      prompt: 'lmms-eval',
      media: [],
      originals: [],
      isVideo: false,
      question: parsed ? parsed.question : input,
      userText: input,
      turns,
      stopReason: 'answer',
      finalText: text,
    },
    source: shown,
    extra: {
      doc_id: docId,
      ...(typeof rec.doc_hash === 'string' ? { doc_hash: rec.doc_hash } : {}),
      ...(metric !== undefined ? { metric } : { unscored: true }),
      ...(raw.length > 0 && raw[0] !== prediction ? { resps: raw } : {}),
    },
  };
}

export async function importLmmsEval(input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  const { samples: files, results } = await inputFiles(input);
  const issues: ImportIssue[] = [];
  const resultsJson: Record<string, unknown>[] = [];
  for (const r of results) {
    const v = await readJsonFile(r, path.basename(r));
    if (isRecord(v)) resultsJson.push(v);
    else issues.push({ severity: 'warning', file: path.basename(r), message: 'expected a JSON object; ignored' });
  }
  const res = resultsJson[0];
  const samples: SampleRecord[] = [];
  const seen = new Map<string, number>();
  let records = 0;
  const tasks: string[] = [];
  for (const file of files) {
    const shown = path.basename(file);
    const task = SAMPLES_RE.exec(shown)?.[2] ?? shown.replace(/\.jsonl$/, '');
    tasks.push(task);
    // The task's first metric in results.json ("exact_match,none" → exact_match) is the sample score.
    const taskRes = isRecord(res?.results) && isRecord(res.results[task]) ? (res.results[task] as Record<string, unknown>) : undefined;
    const primary = taskRes ? Object.keys(taskRes).find((k) => k.includes(',') && !k.includes('_stderr'))?.split(',')[0] : undefined;
    const { rows, nonBlank } = await readJsonlRows(file, shown, issues);
    records += nonBlank;
    for (const row of rows) {
      try {
        if (!isRecord(row.value)) throw new FieldError('(record)', 'expected a JSON object');
        const s = convertLmmsRecord(row.value, task, primary, `${shown}:${row.line}`);
        s.qid = uniqueQid(seen, s.qid);
        samples.push(s);
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        issues.push({ severity: 'error', file: shown, line: row.line, field: e.field, message: e.message });
      }
    }
  }
  const modelId = typeof res?.model_name === 'string' ? res.model_name : (opts.model ?? 'lmms-eval');
  const cfg = isRecord(res?.config) ? res.config : undefined;
  return {
    manifest: {
      name: opts.name ?? `lmms-eval-${tasks.join('+')}`,
      kind: 'import',
      appVersion: APP_VERSION,
      model: { id: modelId, ...(typeof cfg?.model === 'string' ? { backend: cfg.model } : {}), ...(typeof cfg?.model_args === 'string' ? { args: cfg.model_args } : {}) },
      engine: 'import',
      dialect: 'lmms-eval',
      prompt: 'lmms-eval',
      bench: { id: tasks.join('+'), n: samples.length },
      extra: {
        importedFrom: 'lmms-eval',
        files: [...files, ...results].map((f) => path.basename(f)),
        ...(res ? { results: res.results, git_hash: res.git_hash, date: res.date, n_samples: res['n-samples'] } : {}),
      },
    },
    samples,
    media: [],
    issues,
    stats: { files: files.length + results.length, records, imported: samples.length, skipped: records - samples.length },
  };
}

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
const NON_METRIC = new Set(['doc_id', 'target', 'filtered_resps', 'resps', 'doc_hash', 'input', 'doc', 'arguments', 'filter', 'metrics', 'prompt_hash', 'target_hash', 'token_counts', 'input_media']);

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

/**
 * Per-sample metrics that lmms-eval tasks log as dicts (the value their `process_results` returned, for
 * the task's own aggregation to read): MME `{question_id, category, score}` under
 * `mme_perception_score`/`mme_cognition_score` (tasks/mme/utils.py), V* `{question_id, category, score,
 * prediction, ground_truth}` under `vstar_<category>_acc` and `vstar_overall_acc` (tasks/vstar_bench/utils.py),
 * HR-Bench `{index, cycle_category, gpt_score}` under its category (`single`/`cross`) and `average`
 * (tasks/hrbench/utils.py), all of EvolvingLMMs-Lab/lmms-eval @ 75571cfe.
 */
export interface DictMetric {
  key: string;
  score: number;
  category?: string;
  questionId?: string | number;
  index?: string | number;
  cycleCategory?: string;
}

export function dictMetrics(rec: Record<string, unknown>): DictMetric[] {
  const out: DictMetric[] = [];
  for (const [key, v] of Object.entries(rec)) {
    if (NON_METRIC.has(key) || !isRecord(v)) continue;
    const score = typeof v.score === 'number' ? v.score : typeof v.gpt_score === 'number' ? v.gpt_score : typeof v.score === 'boolean' ? Number(v.score) : undefined;
    if (score === undefined || !Number.isFinite(score)) continue;
    const id = (x: unknown) => (typeof x === 'string' || typeof x === 'number' ? x : undefined);
    const m: DictMetric = { key, score };
    if (typeof v.category === 'string') m.category = v.category;
    const q = id(v.question_id);
    if (q !== undefined) m.questionId = q;
    const ix = id(v.index);
    if (ix !== undefined) m.index = ix;
    if (typeof v.cycle_category === 'string') m.cycleCategory = v.cycle_category;
    out.push(m);
  }
  return out;
}

function imageNames(rec: Record<string, unknown>, dm: DictMetric | undefined): { images?: string[] } {
  const media = Array.isArray(rec.input_media) ? rec.input_media.filter((x): x is string => typeof x === 'string' && !x.startsWith('data:')) : [];
  if (media.length) return { images: media };
  if (typeof dm?.questionId === 'string' && /\.(?:jpe?g|png|webp)$/i.test(dm.questionId)) return { images: [dm.questionId] };
  return {};
}

/** Tasks whose samples are the questions of a Loupe bench: its id and qids, so runs compare. */
function benchOf(task: string, dm: DictMetric | undefined, docId: string | number): { bench: string; qid: string; category?: string } {
  if (/^vstar_bench/.test(task)) {
    // Loupe's V* adapter reads the same HF set (`question_id`) and names samples `vstar-<question_id>`.
    return { bench: 'vstar', qid: dm?.questionId !== undefined ? `vstar-${dm.questionId}` : `vstar-doc${docId}`, ...(dm?.category ? { category: dm.category } : {}) };
  }
  const hr = /^hrbench(4k|8k)$/.exec(task);
  if (hr) {
    // HR-Bench logs the verdict under its category key (`single`/`cross`) besides `average`.
    const cat = dm && dm.key !== 'average' ? dm.key : undefined;
    return { bench: task, qid: dm?.index !== undefined ? `${task}-${dm.index}` : `${task}/${docId}`, ...(cat ? { category: cat } : {}) };
  }
  return { bench: task, qid: `${task}/${docId}`, ...(dm?.category ? { category: dm.category } : {}) };
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
  const dms = dictMetrics(rec);
  // HR-Bench's category key (single/cross) names the sample's category; prefer it over `average`.
  const dm = dms.find((d) => d.key === primaryMetric) ?? dms.find((d) => d.key !== 'average' && d.key !== 'vstar_overall_acc') ?? dms[0];
  for (const d of dms) scores[d.key] = d.score;
  const metric = primaryMetric && primaryMetric in scores ? primaryMetric : dm ? dm.key : Object.keys(scores)[0];
  const score = metric !== undefined ? (scores[metric] as number) : 0;
  const { bench, qid, category } = benchOf(task, dm, docId);
  const parsed = parseLetteredOptions(input);
  // Model text: the raw response when logged, else the filtered one. Tool calls in it (a pixel-reasoning
  // model run through lmms-eval) become a call record on the single turn.
  const text = raw[0] ?? prediction;
  const dialect = getDialect('pixel-reasoner');
  const turns: Turn[] = buildTurns(dialect, [text], [], () => undefined);
  return {
    qid,
    bench,
    ...(category !== undefined ? { category } : {}),
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
      // Image names to attach originals by: the media lmms-eval logged, else MME's question_id (the image path).
      ...imageNames(rec, dm),
      ...(metric !== undefined ? { metric } : { unscored: true }),
      ...(dm ? { metricDetail: { ...dm } } : {}),
      ...(dms.find((d) => d.cycleCategory !== undefined) ? { cycle_category: dms.find((d) => d.cycleCategory !== undefined)!.cycleCategory } : {}),
      ...(raw.length > 0 && raw[0] !== prediction ? { resps: raw } : {}),
    },
  };
}

const MME_PERCEPTION = new Set(['existence', 'count', 'position', 'color', 'posters', 'celebrity', 'scene', 'landmark', 'artwork', 'OCR']);

/**
 * A task's score as its own aggregation computes it from the per-sample dicts: MME's per-category
 * acc + acc+ (both questions of an image right) summed over perception / cognition categories; V*'s
 * accuracy in % per category and overall; HR-Bench's accuracy averaged within each option cycle, then
 * over cycles, for `single`, `cross` and `average`. Null for tasks without dict metrics.
 */
export function aggregateTask(task: string, samples: SampleRecord[]): Record<string, number> | null {
  const ex = (s: SampleRecord) => (isRecord(s.extra) ? s.extra : {});
  const detail = (s: SampleRecord): DictMetric | undefined => (isRecord(ex(s).metricDetail) ? (ex(s).metricDetail as unknown as DictMetric) : undefined);
  if (!samples.some((s) => detail(s))) return null;
  if (task === 'mme') {
    const byCat = new Map<string, Map<string, number[]>>();
    for (const s of samples) {
      const d = detail(s);
      if (!d?.category || d.questionId === undefined) continue;
      const q = byCat.get(d.category) ?? new Map<string, number[]>();
      byCat.set(d.category, q);
      q.set(String(d.questionId), [...(q.get(String(d.questionId)) ?? []), d.score]);
    }
    const out: Record<string, number> = { mme_perception_score: 0, mme_cognition_score: 0 };
    for (const [cat, qs] of byCat) {
      let total = 0;
      for (const sc of qs.values()) total += (sc.reduce((a, b) => a + b, 0) / sc.length) * 100 + (sc.every((x) => x === 1) ? 100 : 0);
      const v = total / qs.size;
      out[cat] = v;
      out[MME_PERCEPTION.has(cat) ? 'mme_perception_score' : 'mme_cognition_score']! += v;
    }
    return out;
  }
  if (/^hrbench(4k|8k)$/.test(task)) {
    const out: Record<string, number> = {};
    for (const key of ['single', 'cross', 'average']) {
      const byCycle = new Map<string, number[]>();
      for (const s of samples) {
        const v = s.scores?.[key];
        if (v === undefined) continue;
        const c = String(ex(s).cycle_category ?? '');
        byCycle.set(c, [...(byCycle.get(c) ?? []), v]);
      }
      if (byCycle.size) out[key] = [...byCycle.values()].reduce((a, xs) => a + xs.reduce((p, q) => p + q, 0) / xs.length, 0) / byCycle.size;
    }
    return out;
  }
  // Accuracy (V* and any task whose dicts carry a 0/1 score), in % as vstar_aggregate_results prints it.
  const out: Record<string, number> = {};
  const pct = (xs: SampleRecord[]) => (100 * xs.reduce((a, s) => a + s.score, 0)) / xs.length;
  out.overall = pct(samples);
  for (const c of new Set(samples.map((s) => s.category).filter((x): x is string => !!x))) out[c] = pct(samples.filter((s) => s.category === c));
  return out;
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
  const taskScores: Record<string, Record<string, number>> = {};
  for (const file of files) {
    const shown = path.basename(file);
    const task = SAMPLES_RE.exec(shown)?.[2] ?? shown.replace(/\.jsonl$/, '');
    tasks.push(task);
    // The task's first metric in results.json ("exact_match,none" → exact_match) is the sample score.
    const taskRes = isRecord(res?.results) && isRecord(res.results[task]) ? (res.results[task] as Record<string, unknown>) : undefined;
    const primary = taskRes ? Object.keys(taskRes).find((k) => k.includes(',') && !k.includes('_stderr'))?.split(',')[0] : undefined;
    const { rows, nonBlank } = await readJsonlRows(file, shown, issues);
    records += nonBlank;
    const before = samples.length;
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
    const mine = samples.slice(before);
    const unscored = mine.filter((s) => isRecord(s.extra) && s.extra.unscored).length;
    if (unscored > 0) {
      issues.push({ severity: 'warning', file: shown, message: `${unscored} sample(s) carry no per-sample metric (a number, or a dict with score/gpt_score): imported unscored` });
    }
    const agg = aggregateTask(task, mine);
    if (agg) taskScores[task] = agg;
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
      // The Loupe bench id where the task is one (vstar_bench → vstar), so the run compares with native runs.
      bench: { id: [...new Set(samples.map((x) => x.bench))].join('+') || tasks.join('+'), n: samples.length },
      extra: {
        importedFrom: 'lmms-eval',
        files: [...files, ...results].map((f) => path.basename(f)),
        ...(res ? { results: res.results, git_hash: res.git_hash, date: res.date, n_samples: res['n-samples'] } : {}),
        // Scores recomputed with each task's own aggregation from the per-sample dicts.
        ...(Object.keys(taskScores).length ? { taskScores } : {}),
      },
    },
    samples,
    media: [],
    issues,
    stats: { files: files.length + results.length, records, imported: samples.length, skipped: records - samples.length },
  };
}

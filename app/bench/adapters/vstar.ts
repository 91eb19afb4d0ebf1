/**
 * V* Bench (191 questions: 115 direct_attributes + 76 relative_position).
 *
 * Recognised layouts under `dataDir` (first match wins; `dataDir` may also be one of these files):
 * 1. `test_questions.jsonl` (HF `craigwu/vstar_bench`): `{image, text, category, question_id, label}`;
 *    `text` holds the question and "(A) …" option lines in the **official shuffled order**; used as is.
 * 2. `*.parquet` (lmms-eval mirror `lmms-lab-encoder/vstar-bench`): same fields, `image` = `{bytes, path}`.
 * 3. `*.tsv` (VLMEvalKit `VStarBench`): see `vlmevalTsv.ts`; option order as in the file.
 * 4. `direct_attributes/*.json` + `relative_position/*.json` raw annotations (`{target_object, bbox,
 *    question, options}`, image = same stem). **`options[0]` is always correct** there, so options are
 *    shuffled with a seeded permutation per question (seed `opts.seed`, default 0) and the permutation is
 *    recorded in `extra.optionPermutation`. Never shown in source order (DeepEyes#66).
 * 5. DeepEyes V* result files `result_*.jsonl` (`{image, question, answer, pred_output, …}`): the options
 *    are read from the first user turn ("A. …" lines, correct first) and shuffled as in 4.
 * Scorer: `mc.vstar` (lmms-eval letter cascade).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, cacheImageBytes, describe, displayPath, mediaCacheDir, readJsonFile, readJsonl, readParquet, RecordReader, resolveMedia } from './io';
import { splitRoot } from './common';
import { parseLetteredOptions, shuffleOptions } from './options';
import { mcqSample, readMcqTsv } from './vlmevalTsv';

const BENCH = 'vstar';
const SCORER = 'mc.vstar';
const CATEGORIES = ['direct_attributes', 'relative_position'];
const IMAGE_EXTS = ['.jpg', '.jpeg', '.png', '.JPG', '.JPEG', '.PNG', '.webp'];


function seedOf(opts?: LoadOptions): number {
  const s = opts?.seed ?? 0;
  if (typeof s !== 'number' || !Number.isInteger(s)) throw new Error(`seed must be an integer, got ${String(s)}`);
  return s;
}

function fromTestQuestionRecord(r: RecordReader, imagePath: string): BenchSample {
  const text = r.string('text');
  const parsed = parseLetteredOptions(text);
  if (!parsed || parsed.options.length < 2) r.fail('text', 'no "(A) …" option lines found in the question text');
  const label = r.string('label').trim().toUpperCase();
  if (!/^[A-Z]$/.test(label) || label.charCodeAt(0) - 65 >= parsed.options.length) r.fail('label', `expected an option letter, got ${JSON.stringify(label)}`);
  const qidRaw = r.id('question_id');
  return {
    qid: `${BENCH}-${qidRaw}`,
    bench: BENCH,
    category: r.optString('category'),
    question: parsed.question,
    options: parsed.options,
    answer: label,
    media: { images: [imagePath] },
    isVideo: false,
    scorer: SCORER,
    extra: { question_id: qidRaw, text },
  };
}

async function loadTestQuestions(file: string, root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const disp = displayPath(file, root);
  return readJsonl(file, root).map(({ line, value }) => {
    const r = new RecordReader(disp, `line ${line}`, value);
    const img = resolveMedia(r.string('image'), [root], { file: disp, record: `line ${line}`, field: 'image', skipCheck: opts?.skipMediaCheck });
    return fromTestQuestionRecord(r, img);
  });
}

async function loadParquet(file: string, root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const disp = displayPath(file, root);
  const cache = path.join(mediaCacheDir(root, opts), 'vstar');
  const rows = await readParquet(file, root);
  return rows.map((row, i) => {
    const r = new RecordReader(disp, `row ${i + 1}`, row);
    const img = row.image as { bytes?: unknown; path?: unknown } | undefined;
    let imagePath: string;
    if (img && img.bytes instanceof Uint8Array && img.bytes.length > 0) imagePath = cacheImageBytes(img.bytes, cache);
    else if (typeof row.image === 'string') imagePath = resolveMedia(row.image, [root], { file: disp, record: `row ${i + 1}`, field: 'image', skipCheck: opts?.skipMediaCheck });
    else return r.fail('image', `expected image bytes or a path, got ${describe(row.image)}`);
    return fromTestQuestionRecord(r, imagePath);
  });
}

function findImage(dir: string, stem: string): string | undefined {
  for (const ext of IMAGE_EXTS) {
    const p = path.join(dir, stem + ext);
    if (existsSync(p)) return p;
  }
  return undefined;
}

async function loadRaw(root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const seed = seedOf(opts);
  const out: BenchSample[] = [];
  for (const cat of CATEGORIES) {
    const dir = path.join(root, cat);
    if (!existsSync(dir)) continue;
    const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
    for (const f of files) {
      const file = path.join(dir, f);
      const disp = displayPath(file, root);
      const r = new RecordReader(disp, 'the annotation', readJsonFile(file, root));
      const options = r.stringArray('options', { nonEmpty: true });
      if (options.length < 2) r.fail('options', 'needs at least two options');
      const stem = f.slice(0, -'.json'.length);
      const img = findImage(dir, stem);
      if (!img && !opts?.skipMediaCheck) r.fail(undefined, `no image ${stem}.{jpg,png,…} next to the annotation`);
      const qid = `${BENCH}-${cat}.${stem}`;
      const sh = shuffleOptions(options, 0, seed, qid);
      out.push({
        qid,
        bench: BENCH,
        category: cat,
        question: r.string('question'),
        options: sh.options,
        answer: sh.answer,
        media: { images: [img ?? path.join(dir, stem + '.jpg')] },
        isVideo: false,
        scorer: SCORER,
        extra: { optionPermutation: sh.permutation, target_object: r.raw('target_object'), bbox: r.raw('bbox') },
      });
    }
  }
  return out;
}

/** The options listed in a DeepEyes first-user prompt: "Options: \nA. …\nB. …". */
function deepEyesOptions(r: RecordReader): string[] {
  const msgs = r.raw('pred_output');
  if (!Array.isArray(msgs)) r.fail('pred_output', `expected a list of chat messages, got ${describe(msgs)}`);
  const user = msgs.find((m) => m && typeof m === 'object' && (m as { role?: unknown }).role === 'user') as { content?: unknown } | undefined;
  if (!user) r.fail('pred_output', 'no user message');
  const parts = Array.isArray(user.content) ? user.content : [{ type: 'text', text: user.content }];
  const text = parts.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('\n');
  const at = text.indexOf('Options:');
  if (at < 0) r.fail('pred_output', 'the first user turn has no "Options:" block');
  const parsed = parseLetteredOptions(text.slice(at + 'Options:'.length).replace(/^[ \t]*\n/, ''));
  if (!parsed || parsed.options.length < 2) r.fail('pred_output', 'no "A. …" option lines after "Options:"');
  return parsed.options;
}

async function loadDeepEyes(files: string[], root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const seed = seedOf(opts);
  const out: BenchSample[] = [];
  for (const file of files) {
    const disp = displayPath(file, root);
    const base = path.basename(file);
    const category = CATEGORIES.find((c) => base.includes(c));
    for (const { line, value } of readJsonl(file, root)) {
      const rec = `line ${line}`;
      const r = new RecordReader(disp, rec, value);
      const image = r.string('image');
      const answerText = r.string('answer');
      const options = deepEyesOptions(r);
      const correct = options.indexOf(answerText);
      if (correct < 0) r.fail('answer', `${JSON.stringify(answerText)} is not one of the listed options`);
      const stem = image.replace(/\.[^.]+$/, '');
      const qid = `${BENCH}-${category ?? 'unknown'}.${stem}`;
      const sh = shuffleOptions(options, correct, seed, qid);
      const imagePath = resolveMedia(image, [path.join(root, category ?? ''), root, path.join(root, 'images')], { file: disp, record: rec, field: 'image', skipCheck: opts?.skipMediaCheck });
      out.push({
        qid,
        bench: BENCH,
        category,
        question: r.string('question'),
        options: sh.options,
        answer: sh.answer,
        media: { images: [imagePath] },
        isVideo: false,
        scorer: SCORER,
        extra: { optionPermutation: sh.permutation, sourceCorrectIndex: correct, source: 'deepeyes' },
      });
    }
  }
  return out;
}

export const vstarAdapter: BenchmarkAdapter = {
  id: 'vstar',
  title: 'V* Bench',
  formats: ['test_questions.jsonl', '*.parquet (lmms-eval mirror)', '*.tsv (VLMEvalKit)', 'direct_attributes/*.json + relative_position/*.json (raw)', 'result_*.jsonl (DeepEyes outputs)'],
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const list = file ? [path.basename(file)] : readdirSync(root).sort();
    const pick = (pred: (n: string) => boolean) => list.filter(pred).map((n) => path.join(root, n));
    const seed = seedOf(opts);
    let samples: BenchSample[];
    let info: LoadResult['info'];
    const tq = pick((n) => n === 'test_questions.jsonl');
    const pq = pick((n) => n.endsWith('.parquet'));
    const tsv = pick((n) => n.endsWith('.tsv'));
    const de = pick((n) => /^result_.*\.jsonl$/.test(n));
    if (tq.length) {
      samples = await loadTestQuestions(tq[0]!, root, opts);
      info = { files: ['test_questions.jsonl'], format: 'vstar.test_questions.jsonl', optionOrder: 'official' };
    } else if (pq.length) {
      samples = (await Promise.all(pq.map((f) => loadParquet(f, root, opts)))).flat();
      info = { files: pq.map((f) => displayPath(f, root)), format: 'vstar.lmms-eval.parquet', optionOrder: 'official' };
    } else if (tsv.length) {
      samples = (await readMcqTsv(tsv[0]!, root, opts)).map((r) => mcqSample(BENCH, r, SCORER));
      info = { files: [displayPath(tsv[0]!, root)], format: 'vstar.vlmevalkit.tsv', optionOrder: 'as-in-file' };
    } else if (!file && CATEGORIES.some((c) => existsSync(path.join(root, c)))) {
      samples = await loadRaw(root, opts);
      info = { files: CATEGORIES.map((c) => `${c}/*.json`), format: 'vstar.raw-annotations', optionOrder: `seeded-shuffle:${seed}` };
    } else if (de.length) {
      samples = await loadDeepEyes(de, root, opts);
      info = { files: de.map((f) => displayPath(f, root)), format: 'vstar.deepeyes-results.jsonl', optionOrder: `seeded-shuffle:${seed}` };
    } else {
      throw new BenchDataError({ file: displayPath(file ?? root, root) || '.', problem: `no V* data found; expected one of: ${vstarAdapter.formats.join('; ')}` });
    }
    return { samples: applyLimit(samples, opts?.limit), info };
  },
};

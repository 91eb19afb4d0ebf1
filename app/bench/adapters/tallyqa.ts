/**
 * TallyQA (counting; answers 0–15 in practice, scorer reads 0–20).
 * Layouts:
 * 1. Official `test.json` / `train.json` (manoja328/TallyQA_dataset): a JSON array of
 *    `{answer:int, data_source, image, image_id, issimple:bool, question, question_id}`; `image` is relative to
 *    the image root (`dataDir`, or `dataDir/images`). `opts.subset`: `all` (default) | `simple` | `complex`;
 *    `opts.split`: `test` (default) | `train`. Category = `simple` / `complex`.
 * 2. VLMEvalKit `tallyqa_data.tsv`: `index, image (base64), question, answer`.
 * Scorer `tallyqa.count` (VLMEvalKit rule). The Pixel Reasoner parquet (`tallyqa_mini3200.parquet`) is read by
 * the `pixel-reasoner` adapter, scored with `pr.boxed` as the paper does.
 */
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, cacheImageBytes, decodeBase64Image, displayPath, mediaCacheDir, readJsonFile, readTsv, RecordReader, resolveMedia } from './io';
import { choice, noData, pickFiles, splitRoot } from './common';

const BENCH = 'tallyqa';
const SCORER = 'tallyqa.count';
const FORMATS = ['test.json / train.json (official)', 'tallyqa_data.tsv (VLMEvalKit)'];

async function loadOfficial(file: string, root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const disp = displayPath(file, root);
  const data = readJsonFile(file, root);
  if (!Array.isArray(data)) throw new BenchDataError({ file: disp, problem: 'expected a JSON array of question records' });
  const subset = choice(opts, 'subset', ['all', 'simple', 'complex'] as const, 'all');
  const out: BenchSample[] = [];
  data.forEach((value, i) => {
    const rec = `record ${i}`;
    const r = new RecordReader(disp, rec, value);
    const issimple = r.bool('issimple');
    if (subset === 'simple' && !issimple) return;
    if (subset === 'complex' && issimple) return;
    const answer = r.int('answer');
    if (answer < 0) r.fail('answer', `a count cannot be negative (${answer})`);
    const image = resolveMedia(r.string('image'), [root, path.join(root, 'images')], { file: disp, record: rec, field: 'image', skipCheck: opts?.skipMediaCheck });
    out.push({
      qid: `${BENCH}-${r.id('question_id')}`,
      bench: BENCH,
      category: issimple ? 'simple' : 'complex',
      question: r.string('question'),
      answer,
      media: { images: [image] },
      isVideo: false,
      scorer: SCORER,
      extra: { issimple, data_source: r.raw('data_source'), image_id: r.raw('image_id') },
    });
  });
  return out;
}

async function loadTsv(file: string, root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const disp = displayPath(file, root);
  const cache = path.join(mediaCacheDir(root, opts), 'tallyqa');
  const byIndex = new Map<string, string>();
  const out: BenchSample[] = [];
  for await (const { row, line, record } of readTsv(file, root)) {
    const rec = `row ${row} (line ${line})`;
    const get = (f: string): string => {
      const v = record[f];
      if (v === undefined || v === '') throw new BenchDataError({ file: disp, record: rec, field: f, problem: v === undefined ? 'column missing from the header' : 'is empty' });
      return v;
    };
    const index = get('index');
    const answerText = get('answer').trim();
    if (!/^\d+(?:\.0+)?$/.test(answerText)) throw new BenchDataError({ file: disp, record: rec, field: 'answer', problem: `expected a count, got ${JSON.stringify(answerText)}` });
    const cell = get('image');
    let img = cell.length <= 64 ? byIndex.get(cell) : undefined;
    if (!img) {
      try {
        img = cacheImageBytes(decodeBase64Image(cell), cache);
      } catch (e) {
        throw new BenchDataError({ file: disp, record: rec, field: 'image', problem: (e as Error).message });
      }
    }
    byIndex.set(index, img);
    out.push({
      qid: `${BENCH}-${index}`,
      bench: BENCH,
      question: get('question'),
      answer: Number.parseInt(answerText, 10),
      media: { images: [img] },
      isVideo: false,
      scorer: SCORER,
      extra: { index },
    });
  }
  return out;
}

export const tallyqaAdapter: BenchmarkAdapter = {
  id: 'tallyqa',
  title: 'TallyQA',
  formats: FORMATS,
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const split = choice(opts, 'split', ['test', 'train'] as const, 'test');
    const json = pickFiles(root, file, (n) => (file ? n.endsWith('.json') : n === `${split}.json`));
    const tsv = pickFiles(root, file, (n) => n.endsWith('.tsv'));
    let samples: BenchSample[];
    let format: string;
    let files: string[];
    if (json.length) {
      samples = await loadOfficial(json[0]!, root, opts);
      format = 'tallyqa.official.json';
      files = [displayPath(json[0]!, root)];
    } else if (tsv.length) {
      samples = await loadTsv(tsv[0]!, root, opts);
      format = 'tallyqa.vlmevalkit.tsv';
      files = [displayPath(tsv[0]!, root)];
    } else noData('TallyQA', root, FORMATS);
    return { samples: applyLimit(samples, opts?.limit), info: { files, format } };
  },
};

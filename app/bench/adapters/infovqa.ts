/**
 * InfographicsVQA (ANLS).
 * Layouts:
 * 1. Official RRC/DocVQA JSON (`infographicsVQA_val_v1.0_withQT.json` or any `*.json` with a `data` array):
 *    `{dataset_name, dataset_split, data: [{questionId, question, image_local_name, answers[], answer_type?,
 *    evidence?, operation/reasoning?}]}`; images in `infographicsvqa_images/`, `images/` or `dataDir`.
 *    Records without `answers` (test split) are rejected: they cannot be scored locally.
 * 2. lmms-eval `lmms-lab/DocVQA` config `InfographicVQA` parquet: `questionId, question, answers, image{bytes}`.
 * Scorer `anls` (τ=0.5). Pixel Reasoner's own InfoVQA parquet goes through the `pixel-reasoner` adapter.
 */
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, cacheImageBytes, describe, displayPath, mediaCacheDir, readJsonFile, readParquet, RecordReader, resolveMedia } from './io';
import { noData, pickFiles, splitRoot } from './common';

const BENCH = 'infovqa';
const SCORER = 'anls';
const FORMATS = ['infographicsVQA_*.json (official, with answers)', '*.parquet (lmms-lab/DocVQA InfographicVQA)'];

function sampleOf(r: RecordReader, image: string): BenchSample {
  const answers = r.stringArray('answers', { nonEmpty: true });
  return {
    qid: `${BENCH}-${r.id('questionId')}`,
    bench: BENCH,
    category: Array.isArray(r.raw('answer_type')) ? String((r.raw('answer_type') as unknown[])[0]) : undefined,
    question: r.string('question'),
    answer: answers,
    media: { images: [image] },
    isVideo: false,
    scorer: SCORER,
    extra: { answer_type: r.raw('answer_type'), evidence: r.raw('evidence'), operation: r.raw('operation/reasoning') },
  };
}

async function loadJson(file: string, root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const disp = displayPath(file, root);
  const top = readJsonFile(file, root) as { data?: unknown };
  if (!top || typeof top !== 'object' || !Array.isArray(top.data)) throw new BenchDataError({ file: disp, field: 'data', problem: `expected an object with a "data" array, got ${describe(top)}` });
  const bases = [path.join(root, 'infographicsvqa_images'), path.join(root, 'images'), root];
  return top.data.map((value, i) => {
    const rec = `data[${i}]`;
    const r = new RecordReader(disp, rec, value);
    if (!r.has('answers')) r.fail('answers', 'missing (a test-split file has no answers; score it by submitting to the RRC server)');
    const image = resolveMedia(r.string('image_local_name'), bases, { file: disp, record: rec, field: 'image_local_name', skipCheck: opts?.skipMediaCheck });
    return sampleOf(r, image);
  });
}

async function loadParquetFile(file: string, root: string, opts?: LoadOptions): Promise<BenchSample[]> {
  const disp = displayPath(file, root);
  const cache = path.join(mediaCacheDir(root, opts), 'infovqa');
  return (await readParquet(file, root)).map((row, i) => {
    const r = new RecordReader(disp, `row ${i + 1}`, row);
    const bytes = (row.image as { bytes?: unknown } | undefined)?.bytes;
    if (!(bytes instanceof Uint8Array) || bytes.length === 0) return r.fail('image', `expected {bytes}, got ${describe(row.image)}`);
    return sampleOf(r, cacheImageBytes(bytes, cache));
  });
}

export const infovqaAdapter: BenchmarkAdapter = {
  id: 'infovqa',
  title: 'InfographicsVQA',
  formats: FORMATS,
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const json = pickFiles(root, file, (n) => n.endsWith('.json') && (!!file || /info/i.test(n)));
    const pq = pickFiles(root, file, (n) => n.endsWith('.parquet'));
    let samples: BenchSample[];
    let format: string;
    let files: string[];
    if (json.length) {
      samples = await loadJson(json[0]!, root, opts);
      format = 'infovqa.official.json';
      files = [displayPath(json[0]!, root)];
    } else if (pq.length) {
      samples = (await Promise.all(pq.map((f) => loadParquetFile(f, root, opts)))).flat();
      format = 'infovqa.lmms-eval.parquet';
      files = pq.map((f) => displayPath(f, root));
    } else noData('InfographicsVQA', root, FORMATS);
    return { samples: applyLimit(samples, opts?.limit), info: { files, format } };
  },
};

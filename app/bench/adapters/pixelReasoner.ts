/**
 * Pixel Reasoner eval data (HF `JasperHaozhe/{VStar,InfoVQA,TallyQA,MVBench}-EvalData-PixelReasoner`,
 * prepared by `onestep_evaluation/prepare.sh`): one parquet per benchmark plus an unzipped `images/`.
 * Columns: `qid` (`{bench}-{n}`), `question` (prompt text), `image` (list of image paths; the frames of a
 * video when `is_video`), `answer` (str or list of str), optional `is_video`.
 * The same records are accepted as `*.json` (array) or `*.jsonl`.
 * Image paths are tried as written (absolute), relative to the data folder, with the
 * `rename_imagepath.py` prefix `<parquet stem>_`, and as the last two path components under the folder.
 * Bench = `qid.split('-')[0]` (the reference evaluator's rule). Scorer `pr.boxed` (as the paper scores).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, describe, displayPath, readJsonFile, readJsonl, readParquet, RecordReader } from './io';
import { noData, pickFiles, splitRoot } from './common';

function resolveImage(p: string, root: string, stem: string): string[] {
  const cands: string[] = [];
  if (path.isAbsolute(p)) {
    cands.push(p);
    const parts = p.split(/[\\/]/).filter(Boolean);
    cands.push(path.join(root, ...parts.slice(-2)));
  } else {
    cands.push(path.resolve(root, p), path.resolve(root, `${stem}_${p}`));
  }
  return cands;
}

function sampleOf(r: RecordReader, root: string, stem: string, opts?: LoadOptions): BenchSample {
  const qid = r.id('qid');
  const bench = qid.split('-')[0]!;
  const raw = r.raw('image');
  const images = raw === undefined || raw === null ? [] : r.stringArray('image');
  if (images.length === 0) r.fail('image', 'no image paths');
  const resolved = images.map((p, i) => {
    const cands = resolveImage(p, root, stem);
    const hit = cands.find((c) => existsSync(c));
    if (!hit && !opts?.skipMediaCheck) r.fail(`image[${i}]`, `media file ${JSON.stringify(p)} not found (looked in: ${cands.join(', ')})`);
    return hit ?? cands[0]!;
  });
  const ansRaw = r.raw('answer');
  let answer: string | string[];
  if (typeof ansRaw === 'string') answer = ansRaw;
  else if (typeof ansRaw === 'number' || typeof ansRaw === 'bigint') answer = String(ansRaw);
  else if (Array.isArray(ansRaw)) answer = r.stringArray('answer', { nonEmpty: true });
  else return r.fail('answer', `expected a string or a list of strings, got ${describe(ansRaw)}`);
  const isVideo = r.has('is_video') ? r.bool('is_video') : false;
  return {
    qid,
    bench,
    category: bench,
    question: r.string('question'),
    answer,
    media: isVideo ? { frames: resolved } : { images: resolved },
    isVideo,
    scorer: 'pr.boxed',
    extra: { imagePaths: images },
  };
}

export const pixelReasonerAdapter: BenchmarkAdapter = {
  id: 'pixel-reasoner',
  title: 'Pixel Reasoner eval data',
  formats: ['*.parquet (qid, question, image[], answer, is_video?)', '*.jsonl / *.json with the same fields'],
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const pq = pickFiles(root, file, (n) => n.endsWith('.parquet'));
    const jl = pickFiles(root, file, (n) => n.endsWith('.jsonl'));
    const js = pickFiles(root, file, (n) => n.endsWith('.json'));
    const samples: BenchSample[] = [];
    let files: string[];
    let format: string;
    if (pq.length) {
      for (const f of pq) {
        const stem = path.basename(f, '.parquet');
        (await readParquet(f, root)).forEach((row, i) => samples.push(sampleOf(new RecordReader(displayPath(f, root), `row ${i + 1}`, row), root, stem, opts)));
      }
      files = pq.map((f) => displayPath(f, root));
      format = 'pixel-reasoner.parquet';
    } else if (jl.length) {
      for (const f of jl) {
        const stem = path.basename(f, '.jsonl');
        for (const { line, value } of readJsonl(f, root)) samples.push(sampleOf(new RecordReader(displayPath(f, root), `line ${line}`, value), root, stem, opts));
      }
      files = jl.map((f) => displayPath(f, root));
      format = 'pixel-reasoner.jsonl';
    } else if (js.length) {
      for (const f of js) {
        const data = readJsonFile(f, root);
        if (!Array.isArray(data)) throw new BenchDataError({ file: displayPath(f, root), problem: 'expected a JSON array of records' });
        data.forEach((value, i) => samples.push(sampleOf(new RecordReader(displayPath(f, root), `record ${i}`, value), root, path.basename(f, '.json'), opts)));
      }
      files = js.map((f) => displayPath(f, root));
      format = 'pixel-reasoner.json';
    } else noData('Pixel Reasoner', root, pixelReasonerAdapter.formats);
    const seen = new Set<string>();
    for (const s of samples) {
      if (seen.has(s.qid)) throw new BenchDataError({ file: files.join(', '), field: 'qid', problem: `duplicate qid ${JSON.stringify(s.qid)} (per-benchmark accuracy is averaged per qid)` });
      seen.add(s.qid);
    }
    return { samples: applyLimit(samples, opts?.limit), info: { files, format } };
  },
};

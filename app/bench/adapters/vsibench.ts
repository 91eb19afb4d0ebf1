/**
 * VSI-Bench (nyu-visionx/VSI-Bench, 5,130 questions on 288 indoor videos).
 * Records `{id, dataset, scene_name, question_type, question, ground_truth, options?}` from `test.jsonl`,
 * any `*.jsonl`/`*.json` array, or `*.parquet` (HF). Video: `<dataset>/<scene_name>.mp4` (also under
 * `videos/`); frames: `frames/<dataset>/<scene_name>/*.jpg` when present.
 * Multiple-choice types (object_rel_direction_*, object_rel_distance, route_planning, obj_appearance_order)
 * → scorer `mc.vsi`, gold = the letter; numerical types (object_abs_distance, object_counting,
 * object_size_estimation, room_size_estimation) → `mra.tis` (original) or `mra.lmmsEval` (`opts.mra`).
 * `options` strings carry their own "A. " prefixes in the data; the prefixes are removed here.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, displayPath, readJsonFile, readJsonl, readParquet, RecordReader } from './io';
import { choice, noData, pickFiles, splitRoot } from './common';
import { listFrames } from './frames';

const BENCH = 'vsibench';
export const VSI_MCA_TYPES = ['object_rel_direction_easy', 'object_rel_direction_medium', 'object_rel_direction_hard', 'object_rel_distance', 'route_planning', 'obj_appearance_order'];
export const VSI_NA_TYPES = ['object_abs_distance', 'object_counting', 'object_size_estimation', 'room_size_estimation'];

function sampleOf(r: RecordReader, index: number, root: string, opts: LoadOptions | undefined, mra: string): BenchSample {
  const qtype = r.string('question_type');
  const isMca = VSI_MCA_TYPES.includes(qtype);
  if (!isMca && !VSI_NA_TYPES.includes(qtype)) r.fail('question_type', `unknown question type ${JSON.stringify(qtype)}`);
  const dataset = r.string('dataset');
  const scene = r.id('scene_name');
  const gtRaw = r.raw('ground_truth');
  const gt = typeof gtRaw === 'number' ? String(gtRaw) : r.string('ground_truth');
  let options: string[] | undefined;
  if (isMca) {
    const raw = r.stringArray('options', { nonEmpty: true });
    options = raw.map((o) => o.replace(/^[A-Z]\.\s*/, ''));
    if (!/^[A-Z]$/.test(gt.trim())) r.fail('ground_truth', `expected an option letter for ${qtype}, got ${JSON.stringify(gt)}`);
  }
  const videoCands = [path.join(root, dataset, `${scene}.mp4`), path.join(root, 'videos', dataset, `${scene}.mp4`)];
  const video = videoCands.find((p) => existsSync(p));
  const frames = listFrames(path.join(root, 'frames', dataset, scene));
  if (!video && !frames.length && !opts?.skipMediaCheck) r.fail('scene_name', `no video ${dataset}/${scene}.mp4 and no frames/${dataset}/${scene}/ folder`);
  const id = r.has('id') ? r.id('id') : String(index);
  return {
    qid: `${BENCH}-${id}`,
    bench: BENCH,
    category: qtype,
    question: r.string('question'),
    ...(options ? { options } : {}),
    answer: isMca ? gt.trim() : gt,
    media: { ...(video ? { video } : {}), ...(frames.length ? { frames } : {}) },
    isVideo: true,
    scorer: isMca ? 'mc.vsi' : `mra.${mra}`,
    extra: { dataset, scene_name: scene, question_type: qtype, ...(isMca ? { rawOptions: r.raw('options') } : {}) },
  };
}

export const vsibenchAdapter: BenchmarkAdapter = {
  id: 'vsibench',
  title: 'VSI-Bench',
  formats: ['test.jsonl / *.jsonl / *.json (records)', '*.parquet (HF nyu-visionx/VSI-Bench)'],
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const mra = choice(opts, 'mra', ['tis', 'lmmsEval'] as const, 'tis');
    const jsonl = pickFiles(root, file, (n) => n.endsWith('.jsonl'));
    const json = pickFiles(root, file, (n) => n.endsWith('.json'));
    const pq = pickFiles(root, file, (n) => n.endsWith('.parquet'));
    const records: Array<{ disp: string; rec: string; value: unknown }> = [];
    let files: string[] = [];
    let format: string;
    if (jsonl.length) {
      const f = jsonl.find((p) => path.basename(p) === 'test.jsonl') ?? jsonl[0]!;
      files = [displayPath(f, root)];
      for (const { line, value } of readJsonl(f, root)) records.push({ disp: files[0]!, rec: `line ${line}`, value });
      format = 'vsibench.jsonl';
    } else if (json.length) {
      files = [displayPath(json[0]!, root)];
      const data = readJsonFile(json[0]!, root);
      if (!Array.isArray(data)) throw new BenchDataError({ file: files[0]!, problem: 'expected a JSON array of question records' });
      data.forEach((value, i) => records.push({ disp: files[0]!, rec: `record ${i}`, value }));
      format = 'vsibench.json';
    } else if (pq.length) {
      files = pq.map((f) => displayPath(f, root));
      for (const f of pq) (await readParquet(f, root)).forEach((value, i) => records.push({ disp: displayPath(f, root), rec: `row ${i + 1}`, value }));
      format = 'vsibench.parquet';
    } else noData('VSI-Bench', root, vsibenchAdapter.formats);
    const samples = records.map(({ disp, rec, value }, i) => sampleOf(new RecordReader(disp, rec, value), i, root, opts, mra));
    return { samples: applyLimit(samples, opts?.limit), info: { files, format, optionOrder: 'official' } };
  },
};

/**
 * VLMEvalKit multiple-choice TSV (HR-Bench `hr_bench_{4k,8k}.tsv`, VLMEvalKit `VStarBench`, …):
 * header `index, image, question, A, B, C, D[, E…], answer, category[, cycle_category, l2-category…]`.
 * `image` is base64 image data, or — VLMEvalKit's de-duplication — the `index` of an earlier row whose
 * image is the same; `image_path` may be given instead. Option columns are the single upper-case letters
 * present and non-empty ("nan" counts as empty, as pandas would read it).
 */
import path from 'node:path';
import { BenchDataError, type BenchSample, type LoadOptions } from '../types';
import { cacheImageBytes, decodeBase64Image, displayPath, mediaCacheDir, resolveMedia, readTsv } from './io';
import { LETTERS } from './options';

export interface McqTsvRow {
  row: number;
  index: string;
  question: string;
  options: string[];
  answer: string;
  category?: string;
  imagePath: string;
  fields: Record<string, string>;
}

export async function readMcqTsv(file: string, root: string, opts: LoadOptions | undefined): Promise<McqTsvRow[]> {
  const disp = displayPath(file, root);
  const cache = path.join(mediaCacheDir(root, opts), path.basename(file).replace(/\.tsv$/i, ''));
  const imageByIndex = new Map<string, string>();
  const out: McqTsvRow[] = [];
  for await (const { row, line, record } of readTsv(file, root)) {
    const rec = `row ${row} (line ${line})`;
    const need = (f: string): string => {
      const v = record[f];
      if (v === undefined) throw new BenchDataError({ file: disp, record: rec, field: f, problem: 'column missing from the header' });
      if (v === '') throw new BenchDataError({ file: disp, record: rec, field: f, problem: 'is empty' });
      return v;
    };
    const index = need('index');
    const question = need('question');
    const answer = need('answer').trim();
    const options: string[] = [];
    for (const l of LETTERS) {
      const v = record[l];
      if (v === undefined || v === '' || v === 'nan') break;
      options.push(v);
    }
    if (options.length < 2) throw new BenchDataError({ file: disp, record: rec, field: 'A', problem: 'fewer than two option columns (A, B, …) are filled' });
    if (!/^[A-Z]$/.test(answer) || LETTERS.indexOf(answer) >= options.length) {
      throw new BenchDataError({ file: disp, record: rec, field: 'answer', problem: `expected one of the option letters A–${LETTERS[options.length - 1]}, got ${JSON.stringify(answer)}` });
    }
    let imagePath: string;
    if (record.image !== undefined && record.image !== '') {
      const cell = record.image;
      if (cell.length <= 64 && imageByIndex.has(cell)) imagePath = imageByIndex.get(cell)!;
      else {
        try {
          imagePath = cacheImageBytes(decodeBase64Image(cell), cache);
        } catch (e) {
          throw new BenchDataError({ file: disp, record: rec, field: 'image', problem: `${(e as Error).message} (nor the index of another row)` });
        }
      }
    } else if (record.image_path !== undefined && record.image_path !== '') {
      imagePath = resolveMedia(record.image_path, [root, path.join(root, 'images')], { file: disp, record: rec, field: 'image_path', skipCheck: opts?.skipMediaCheck });
    } else throw new BenchDataError({ file: disp, record: rec, field: 'image', problem: 'no image (neither image nor image_path is filled)' });
    imageByIndex.set(index, imagePath);
    out.push({ row, index, question, options, answer, category: record.category || undefined, imagePath, fields: record });
  }
  return out;
}

/** Common sample fields for an MCQ TSV row. */
export function mcqSample(bench: string, r: McqTsvRow, scorer: string, extra: Record<string, unknown> = {}): BenchSample {
  return {
    qid: `${bench}-${r.index}`,
    bench,
    category: r.category,
    question: r.question,
    options: r.options,
    answer: r.answer,
    media: { images: [r.imagePath] },
    isVideo: false,
    scorer,
    extra: { index: r.index, ...extra },
  };
}

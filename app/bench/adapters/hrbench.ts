/**
 * HR-Bench 4K / 8K (DreamMr/HR-Bench `hr_bench_4k.tsv`, `hr_bench_8k.tsv`): VLMEvalKit MCQ TSV with
 * base64 images, `category` (single = FSP, cross = FCP) and `cycle_category` (the option rotation; the
 * official score averages accuracy within each cycle, then over cycles). Bench id `hrbench4k`/`hrbench8k`
 * from the file name (`opts.version` to force). Scorer `mc.vstar` (letter extraction; the reference uses an
 * LLM judge to map free text to an option, which Loupe does not reproduce).
 */
import path from 'node:path';
import type { BenchmarkAdapter, BenchSample, LoadOptions, LoadResult } from '../types';
import { applyLimit, displayPath } from './io';
import { choice, noData, pickFiles, splitRoot } from './common';
import { mcqSample, readMcqTsv } from './vlmevalTsv';

export const hrbenchAdapter: BenchmarkAdapter = {
  id: 'hrbench',
  title: 'HR-Bench 4K/8K',
  formats: ['hr_bench_4k.tsv / hr_bench_8k.tsv (VLMEvalKit TSV)'],
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const version = choice(opts, 'version', ['auto', '4k', '8k'] as const, 'auto');
    const tsv = pickFiles(root, file, (n) => n.endsWith('.tsv') && (version === 'auto' || n.toLowerCase().includes(version)));
    if (!tsv.length) noData('HR-Bench', root, hrbenchAdapter.formats);
    const samples: BenchSample[] = [];
    for (const f of tsv) {
      const name = path.basename(f).toLowerCase();
      const v = version !== 'auto' ? version : name.includes('8k') ? '8k' : '4k';
      const bench = `hrbench${v}`;
      for (const r of await readMcqTsv(f, root, opts)) samples.push(mcqSample(bench, r, 'mc.vstar', { cycle_category: r.fields.cycle_category }));
    }
    return { samples: applyLimit(samples, opts?.limit), info: { files: tsv.map((f) => displayPath(f, root)), format: 'hrbench.vlmevalkit.tsv', optionOrder: 'as-in-file (cycled)' } };
  },
};

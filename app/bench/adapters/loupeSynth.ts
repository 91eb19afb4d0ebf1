/** Adapter for Loupe-format benchmark folders (see `loupeFormat.ts`), e.g. generated loupe-synth sets. */
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, readJsonFile, readJsonl, resolveMedia } from './io';
import { splitRoot } from './common';
import { LOUPE_BENCHMARK_FILE, LOUPE_DEFAULT_SCORER, LOUPE_SAMPLE_KEYS, LOUPE_SAMPLES_FILE, LoupeBenchmarkSchema, LoupeSampleSchema } from './loupeFormat';
import { scorers } from '../scorers';

function zodProblem(file: string, record: string | undefined, error: { issues: Array<{ path: PropertyKey[]; message: string }> }): BenchDataError {
  const issue = error.issues[0]!;
  const field = issue.path.map(String).join('.') || undefined;
  return new BenchDataError({ file, record, field, problem: issue.message });
}

export async function loadLoupeFolder(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
  const { root: r0, file } = splitRoot(dataDir);
  const root = file ? path.dirname(file) : r0;
  const meta = LoupeBenchmarkSchema.safeParse(readJsonFile(path.join(root, LOUPE_BENCHMARK_FILE), root));
  if (!meta.success) throw zodProblem(LOUPE_BENCHMARK_FILE, undefined, meta.error);
  const bm = meta.data;
  const defaultScorer = bm.scorer ?? LOUPE_DEFAULT_SCORER;
  if (!scorers[defaultScorer]) throw new BenchDataError({ file: LOUPE_BENCHMARK_FILE, field: 'scorer', problem: `unknown scorer ${JSON.stringify(defaultScorer)}` });
  const seen = new Set<string>();
  const samples: BenchSample[] = [];
  for (const { line, value } of readJsonl(path.join(root, LOUPE_SAMPLES_FILE), root)) {
    const rec = `line ${line}`;
    const parsed = LoupeSampleSchema.safeParse(value);
    if (!parsed.success) throw zodProblem(LOUPE_SAMPLES_FILE, rec, parsed.error);
    const s = parsed.data;
    if (seen.has(s.qid)) throw new BenchDataError({ file: LOUPE_SAMPLES_FILE, record: rec, field: 'qid', problem: `duplicate qid ${JSON.stringify(s.qid)}` });
    seen.add(s.qid);
    const scorer = s.scorer ?? defaultScorer;
    if (!scorers[scorer]) throw new BenchDataError({ file: LOUPE_SAMPLES_FILE, record: rec, field: 'scorer', problem: `unknown scorer ${JSON.stringify(scorer)}` });
    const res = (p: string, field: string) => resolveMedia(p, [root], { file: LOUPE_SAMPLES_FILE, record: rec, field, skipCheck: opts?.skipMediaCheck });
    const media: BenchSample['media'] = {};
    const imgs = s.images ?? (s.image !== undefined ? [s.image] : undefined);
    if (imgs) media.images = imgs.map((p, i) => res(p, s.images ? `images[${i}]` : 'image'));
    if (s.frames) media.frames = s.frames.map((p, i) => res(p, `frames[${i}]`));
    if (s.video) media.video = res(s.video, 'video');
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s)) if (!LOUPE_SAMPLE_KEYS.has(k)) extra[k] = v;
    samples.push({
      qid: s.qid,
      bench: s.bench ?? bm.id,
      ...(s.category !== undefined ? { category: s.category } : {}),
      question: s.question,
      ...(s.options ? { options: s.options } : {}),
      answer: s.answer,
      media,
      isVideo: s.isVideo ?? (s.frames !== undefined || s.video !== undefined),
      scorer,
      extra,
    });
  }
  return {
    samples: applyLimit(samples, opts?.limit),
    info: { files: [LOUPE_BENCHMARK_FILE, LOUPE_SAMPLES_FILE], format: `loupe-bench${bm.version !== undefined ? `@${bm.version}` : ''}`, optionOrder: 'as-in-file' },
  };
}

export const loupeSynthAdapter: BenchmarkAdapter = {
  id: 'loupe-synth',
  title: 'loupe-synth (Loupe benchmark folder)',
  formats: ['benchmark.json + samples.jsonl + images/ (see app/bench/adapters/loupeFormat.ts)'],
  load: (dataDir: string, opts?: LoadOptions) => loadLoupeFolder(dataDir, opts),
};

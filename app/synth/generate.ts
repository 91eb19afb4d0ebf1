/**
 * loupe-synth benchmark generation: seed → scenes → images on disk + `benchmark.json` + `samples.jsonl`,
 * in the Loupe benchmark folder format (`app/bench/adapters/loupeFormat.ts`).
 * Each sample draws from its own sub-seed (seed, index), so sample i is the same whatever `n` or the
 * number of video samples is.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Box } from '../contract/trajectory';
import { Prng, hashSeed } from './prng';
import type { SynthRaster } from './render';
import { SYNTH_KINDS, buildScene, type Scene, type SynthKind } from './scene';
import { VIDEO_FRAMES, VIDEO_KINDS, buildVideoScene, type VideoKind, type VideoScene } from './video';

/**
 * Bump when the generator's output for a given seed changes. 2: ring digits 1.3–1.6 % of the long side (were
 * 0.85–1.1 %), so that they are as tall as a tag's letter and legible at a crop's resized resolution.
 */
export const SYNTH_VERSION = '2';
/**
 * Names the PRNG streams. Kept at '1' across versions that only change sizes, so a seed's other scenes (the tags,
 * boxes, layouts of other kinds) stay what they were.
 */
export const SYNTH_STREAM = '1';
export const SYNTH_BENCH_ID = 'loupe-synth';
/** The global view the difficulty is tuned for: details are ≲ 6 px when the long side is resized to this. */
export const SYNTH_GLOBAL_LONG_SIDE = 448;

export interface SynthOptions {
  seed: number;
  /** Number of image samples. */
  n: number;
  /** Number of video samples (16 frames each), after the image samples. */
  video?: number;
  /** Which image kinds, cycled in order (default all four). */
  kinds?: SynthKind[];
  /** Fraction of image samples whose detail is big enough to read without zooming (default 0.1). */
  easyFraction?: number;
  /** JPEG quality (default 92). */
  quality?: number;
}

/** A box in pixels and normalized to [0, 1]. */
export interface SynthBox {
  px: Box;
  norm: Box;
}

/** One line of loupe-synth's `samples.jsonl`. */
export interface SynthSample {
  qid: string;
  bench: typeof SYNTH_BENCH_ID;
  category: SynthKind;
  question: string;
  options?: string[];
  /** Option letter for multiple choice, otherwise the exact answer. */
  answer: string;
  answerText: string;
  /** Relative to the benchmark folder: `images/<qid>.jpg`, or for video the frame files in order. */
  image?: string;
  frames?: string[];
  isVideo: boolean;
  width: number;
  height: number;
  /** Ground truth for crop-containment metrics. */
  target: SynthBox & { label: string; frames?: number[] };
  decoys: Array<SynthBox & { label: string; frames?: number[] }>;
  detailPx: number;
  needsZoom: boolean;
  facts: Record<string, string | number>;
  seed: number;
  index: number;
}

export interface SynthBenchmark {
  id: typeof SYNTH_BENCH_ID;
  name: string;
  version: string;
  seed: number;
  n: number;
  video: number;
  kinds: SynthKind[];
  easyFraction: number;
  globalLongSide: number;
  /** Default scorer of the Loupe benchmark format (`app/bench/adapters/loupeFormat.ts`). */
  scorer: string;
  license: string;
  description: string;
}

export function normBox(b: Box, w: number, h: number): Box {
  const r = (v: number): number => Math.round(v * 1e4) / 1e4;
  return [r(b[0] / w), r(b[1] / h), r(b[2] / w), r(b[3] / h)];
}

export function synthQid(seed: number, index: number): string {
  return `synth-${seed}-${String(index).padStart(5, '0')}`;
}

/** The scene of image sample `index` (pure; no pixels). */
export function imageScene(opts: SynthOptions, index: number): Scene {
  const kinds = opts.kinds && opts.kinds.length > 0 ? opts.kinds : [...SYNTH_KINDS];
  const kind = kinds[index % kinds.length] as SynthKind;
  const rng = new Prng(hashSeed('loupe-synth', SYNTH_STREAM, opts.seed, 'image', index));
  const easy = rng.fork('easy').next() < (opts.easyFraction ?? 0.1);
  return buildScene(rng, kind, { easy });
}

/** The scene of video sample `index` (0-based among the video samples). */
export function videoScene(opts: SynthOptions, index: number): VideoScene {
  const kind = VIDEO_KINDS[index % VIDEO_KINDS.length] as VideoKind;
  return buildVideoScene(new Prng(hashSeed('loupe-synth', SYNTH_STREAM, opts.seed, 'video', index)), kind);
}

export function imageSampleRecord(opts: SynthOptions, index: number, scene: Scene): SynthSample {
  const qid = synthQid(opts.seed, index);
  const { width: w, height: h } = scene.layout;
  return {
    qid,
    bench: SYNTH_BENCH_ID,
    category: scene.kind,
    question: scene.question,
    ...(scene.options ? { options: scene.options } : {}),
    answer: scene.answer,
    answerText: scene.answerText,
    image: `images/${qid}.jpg`,
    isVideo: false,
    width: w,
    height: h,
    target: { label: scene.target.label, px: scene.target.box, norm: normBox(scene.target.box, w, h) },
    decoys: scene.decoys.map((d) => ({ label: d.label, px: d.box, norm: normBox(d.box, w, h) })),
    detailPx: Math.round(scene.detailPx * 100) / 100,
    needsZoom: scene.needsZoom,
    facts: scene.facts,
    seed: opts.seed,
    index,
  };
}

export function videoSampleRecord(opts: SynthOptions, index: number, scene: VideoScene): SynthSample {
  const qid = synthQid(opts.seed, opts.n + index);
  const { width: w, height: h } = scene;
  return {
    qid,
    bench: SYNTH_BENCH_ID,
    category: scene.kind,
    question: scene.question,
    answer: scene.answer,
    answerText: scene.answerText,
    frames: Array.from({ length: VIDEO_FRAMES }, (_, f) => `images/${qid}/frame${String(f + 1).padStart(2, '0')}.jpg`),
    isVideo: true,
    width: w,
    height: h,
    target: { label: scene.target.label, px: scene.target.box, norm: normBox(scene.target.box, w, h), frames: scene.target.frames },
    decoys: scene.decoys.map((d) => ({ label: d.label, px: d.box, norm: normBox(d.box, w, h), frames: d.frames })),
    detailPx: Math.round(scene.detailPx * 100) / 100,
    needsZoom: true,
    facts: scene.facts,
    seed: opts.seed,
    index: opts.n + index,
  };
}

export function benchmarkInfo(opts: SynthOptions): SynthBenchmark {
  return {
    id: SYNTH_BENCH_ID,
    name: `loupe-synth seed ${opts.seed}`,
    version: SYNTH_VERSION,
    seed: opts.seed,
    n: opts.n,
    video: opts.video ?? 0,
    kinds: opts.kinds && opts.kinds.length > 0 ? opts.kinds : [...SYNTH_KINDS],
    easyFraction: opts.easyFraction ?? 0.1,
    globalLongSide: SYNTH_GLOBAL_LONG_SIDE,
    scorer: 'pr.boxed',
    license: 'Apache-2.0 (generated by Loupe)',
    description:
      'Synthetic pixel-reasoning benchmark: the answer is a detail (digits in a red ring, a letter on a blue tag, dots in a green box, ' +
      'two tiny tagged objects) too small to read at the global view but legible after a crop. Generated by Loupe; deterministic from the seed.',
  };
}

export interface GenerateResult {
  benchmark: SynthBenchmark;
  samples: SynthSample[];
}

/** Write the benchmark folder. Returns what was written. */
export async function generateSynth(
  opts: SynthOptions,
  outDir: string,
  raster: SynthRaster,
  onProgress?: (done: number, total: number) => void,
): Promise<GenerateResult> {
  if (!Number.isInteger(opts.seed) || opts.seed < 0) throw new Error(`loupe-synth: --seed must be a non-negative integer, got ${opts.seed}`);
  if (!Number.isInteger(opts.n) || opts.n < 0) throw new Error(`loupe-synth: --n must be a non-negative integer, got ${opts.n}`);
  const nVideo = opts.video ?? 0;
  if (!Number.isInteger(nVideo) || nVideo < 0) throw new Error(`loupe-synth: --video must be a non-negative integer, got ${nVideo}`);
  for (const k of opts.kinds ?? []) {
    if (!(SYNTH_KINDS as readonly string[]).includes(k)) throw new Error(`loupe-synth: unknown kind "${k}" (known: ${SYNTH_KINDS.join(', ')})`);
  }
  await mkdir(join(outDir, 'images'), { recursive: true });
  const total = opts.n + nVideo;
  const samples: SynthSample[] = [];
  for (let i = 0; i < opts.n; i++) {
    const scene = imageScene(opts, i);
    const rec = imageSampleRecord(opts, i, scene);
    await writeFile(join(outDir, rec.image as string), await raster.renderScene(scene.layout, { quality: opts.quality }));
    samples.push(rec);
    onProgress?.(samples.length, total);
  }
  for (let i = 0; i < nVideo; i++) {
    const scene = videoScene(opts, i);
    const rec = videoSampleRecord(opts, i, scene);
    await mkdir(join(outDir, 'images', rec.qid), { recursive: true });
    const files = rec.frames as string[];
    for (let f = 0; f < scene.frames.length; f++) {
      const layout = { width: scene.width, height: scene.height, svg: scene.frames[f] as string, noiseSeed: scene.noiseSeed + f };
      await writeFile(join(outDir, files[f] as string), await raster.renderScene(layout, { quality: opts.quality }));
    }
    samples.push(rec);
    onProgress?.(samples.length, total);
  }
  const benchmark = benchmarkInfo(opts);
  await writeFile(join(outDir, 'benchmark.json'), JSON.stringify(benchmark, null, 2) + '\n');
  await writeFile(join(outDir, 'samples.jsonl'), samples.map((s) => JSON.stringify(s)).join('\n') + (samples.length ? '\n' : ''));
  return { benchmark, samples };
}

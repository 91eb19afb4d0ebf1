/**
 * The Loupe benchmark folder format (written by the loupe-synth generator, readable by any tool).
 *
 * ```
 * <folder>/
 *   benchmark.json   one object describing the benchmark
 *   samples.jsonl    one sample per line (UTF-8 JSON, '\n'-separated)
 *   images/          the media; every path in samples.jsonl is relative to <folder>
 * ```
 *
 * `benchmark.json` — required: `id` (string, the bench id of every sample unless a sample says otherwise).
 * Optional: `name`, `version` (string; recorded as the benchmark revision), `description`, `seed`,
 * `scorer` (default scorer name for samples without one; default `pr.boxed`), `license`; any other keys are
 * kept as metadata.
 *
 * `samples.jsonl` line — required: `qid` (unique string), `question` (string), `answer` (string, number or a
 * list of strings; for multiple choice the option **letter**), and media: `image` (one path) or `images`
 * (paths) for image samples, `frames` (paths in time order) and/or `video` (a path) for video samples.
 * Optional: `bench`, `category`, `options` (option texts, letters A, B, … by position), `isVideo` (default:
 * true when `frames`/`video` are given), `scorer`. Every other key (e.g. loupe-synth's `target`, `decoys`,
 * `answerText`, `needsZoom`) is kept in `BenchSample.extra`.
 */
import { z } from 'zod';

export const LOUPE_BENCHMARK_FILE = 'benchmark.json';
export const LOUPE_SAMPLES_FILE = 'samples.jsonl';
export const LOUPE_DEFAULT_SCORER = 'pr.boxed';

const relPath = z.string().min(1).refine((p) => !p.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(p) && !p.split(/[\\/]/).includes('..'), {
  message: 'must be a path relative to the benchmark folder (no leading /, no ..)',
});

export const LoupeBenchmarkSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().optional(),
    version: z.union([z.string(), z.number()]).optional(),
    description: z.string().optional(),
    seed: z.number().optional(),
    scorer: z.string().min(1).optional(),
    license: z.string().optional(),
  })
  .passthrough();
export type LoupeBenchmark = z.infer<typeof LoupeBenchmarkSchema>;

export const LoupeSampleSchema = z
  .object({
    qid: z.string().min(1),
    bench: z.string().min(1).optional(),
    category: z.string().optional(),
    question: z.string(),
    options: z.array(z.string()).min(2).optional(),
    answer: z.union([z.string(), z.number(), z.array(z.string()).min(1)]),
    image: relPath.optional(),
    images: z.array(relPath).min(1).optional(),
    frames: z.array(relPath).min(1).optional(),
    video: relPath.optional(),
    isVideo: z.boolean().optional(),
    scorer: z.string().min(1).optional(),
  })
  .passthrough()
  .refine((s) => s.image !== undefined || s.images !== undefined || s.frames !== undefined || s.video !== undefined, {
    message: 'needs media: one of image, images, frames, video',
    path: ['image'],
  });
export type LoupeSample = z.infer<typeof LoupeSampleSchema>;

/** Keys of a sample line that map to BenchSample fields; the rest goes to `extra`. */
export const LOUPE_SAMPLE_KEYS = new Set(['qid', 'bench', 'category', 'question', 'options', 'answer', 'image', 'images', 'frames', 'video', 'isVideo', 'scorer']);

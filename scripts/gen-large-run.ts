/**
 * Writes a realistic synthetic run for the UI and index benchmarks: `runs/<id>/manifest.json` and
 * `runs/<id>/samples.jsonl` in the workspace layout of DESIGN §4, plus a few real content-addressed PNGs
 * under `media/` so the sample view has pictures to show, and optionally label events for two
 * annotators. Deterministic: the same seed and options give byte-identical files.
 *
 *   node --import tsx scripts/gen-large-run.ts --workspace .workspace --n 50000 --seed 1 [--labels] [--no-media]
 *
 * The samples are synthetic (vstar, hrbench, tallyqa, infovqa, mvbench, vsibench-like questions with
 * crop_image_normalized / select_frames calls in the Pixel Reasoner format); they are not benchmark data.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { APP_VERSION } from '../app/version';
import type { MediaRef, RunManifest, SampleRecord, StopReason, Turn } from '../app/contract/trajectory';
import type { LabelEvent } from '../app/labels/events';
import { DEFAULT_TAXONOMY } from '../app/labels/taxonomy';
import { createRng, type Rng } from '../app/prng';

export interface GenOptions {
  n: number;
  seed: number;
  runId?: string;
  /** Media refs to use for images; synthetic ids when not given. */
  images?: MediaRef[];
  frames?: MediaRef[];
  /** Media refs standing in for zoomed crops (their real sizes are reported in the observation). */
  crops?: MediaRef[];
}

interface BenchSpec {
  id: string;
  weight: number;
  categories: string[];
  video: boolean;
  /** Base accuracy without tools, and the change per useful call. */
  base: number;
  perCall: number;
  /** Mean number of calls. */
  meanCalls: number;
  kind: 'mc' | 'count' | 'text';
}

const BENCHES: BenchSpec[] = [
  { id: 'vstar', weight: 0.1, categories: ['direct_attributes', 'relative_position'], video: false, base: 0.55, perCall: 0.12, meanCalls: 1.4, kind: 'mc' },
  { id: 'hrbench', weight: 0.15, categories: ['hr4k_fsp', 'hr4k_fcp', 'hr8k_fsp', 'hr8k_fcp'], video: false, base: 0.5, perCall: 0.08, meanCalls: 1.2, kind: 'mc' },
  { id: 'tallyqa', weight: 0.3, categories: ['simple', 'complex'], video: false, base: 0.6, perCall: 0.04, meanCalls: 0.8, kind: 'count' },
  { id: 'infovqa', weight: 0.2, categories: ['table', 'chart', 'text', 'map'], video: false, base: 0.62, perCall: 0.06, meanCalls: 1.0, kind: 'text' },
  { id: 'mvbench', weight: 0.15, categories: ['action_sequence', 'object_interaction', 'state_change', 'counterfactual_inference', 'scene_transition'], video: true, base: 0.58, perCall: 0.05, meanCalls: 0.9, kind: 'mc' },
  { id: 'vsibench', weight: 0.1, categories: ['object_counting', 'relative_distance', 'room_size', 'appearance_order'], video: true, base: 0.35, perCall: 0.04, meanCalls: 1.1, kind: 'count' },
];

const OBJECTS = ['umbrella', 'bicycle', 'traffic light', 'dog', 'backpack', 'cup', 'clock', 'bench', 'kite', 'handbag', 'bottle', 'vase', 'chair', 'laptop', 'book', 'sign', 'flag', 'car', 'bus', 'boat', 'bird', 'horse'];
const COLORS = ['red', 'blue', 'green', 'yellow', 'white', 'black', 'orange', 'purple', 'brown', 'pink', 'gray', 'silver'];
const PLACES = ['kitchen', 'street', 'park', 'office', 'beach', 'market', 'station', 'living room', 'garden', 'harbour'];
const WORDS = ['revenue', 'population', 'percentage', 'survey', 'region', 'total', 'growth', 'share', 'annual', 'average', 'respondents', 'countries', 'highest', 'lowest', 'ratio'];
const ACTIONS = ['opened the door', 'picked up the cup', 'sat down', 'put the box on the table', 'turned on the light', 'closed the laptop', 'threw the ball'];

const pick = <T>(rng: Rng, a: readonly T[]): T => a[rng.int(a.length)]!;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function synthMedia(prefix: string, count: number, w: number, h: number): MediaRef[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${createHash('sha256').update(`${prefix}${i}`).digest('hex')}.png`, width: w, height: h, mime: 'image/png' }));
}

function poissonish(rng: Rng, mean: number): number {
  // Knuth's Poisson sampler; means are small.
  const L = Math.exp(-mean);
  let k = 0;
  let p = 1;
  do {
    k++;
    p *= rng.next();
  } while (p > L);
  return k - 1;
}

function makeQuestion(rng: Rng, b: BenchSpec, category: string): { question: string; options?: string[]; answer: string; wrong: () => string } {
  const obj = pick(rng, OBJECTS);
  const place = pick(rng, PLACES);
  if (b.kind === 'mc') {
    let question: string;
    let opts: string[];
    if (b.video) {
      question = `In the video from the ${place}, what happened right after the person ${pick(rng, ACTIONS)}?`;
      opts = Array.from(new Set(Array.from({ length: 8 }, () => pick(rng, ACTIONS)))).slice(0, 4);
      while (opts.length < 4) opts.push(`did nothing ${opts.length}`);
    } else if (category.includes('position')) {
      question = `Is the ${obj} on the left or right side of the ${pick(rng, OBJECTS)}?`;
      opts = ['left', 'right'];
    } else {
      question = `What is the color of the ${obj} near the ${place} entrance?`;
      opts = Array.from(new Set(Array.from({ length: 10 }, () => pick(rng, COLORS)))).slice(0, 4);
    }
    const letters = opts.map((_, i) => String.fromCharCode(65 + i));
    const ai = rng.int(opts.length);
    return {
      question: `${question}\n${opts.map((o, i) => `(${letters[i]}) ${o}`).join('\n')}\nAnswer with the option's letter from the given choices directly.`,
      options: opts,
      answer: letters[ai]!,
      wrong: () => letters[(ai + 1 + rng.int(opts.length - 1)) % opts.length]!,
    };
  }
  if (b.kind === 'count') {
    const n = 1 + rng.int(b.video ? 9 : 6);
    const q = b.video ? `How many ${obj}s appear in the ${place} over the whole video?` : `How many ${obj}s are there in the ${place}?`;
    return { question: q, answer: String(n), wrong: () => String(Math.max(0, n + (rng.next() < 0.5 ? -1 : 1) * (1 + rng.int(2)))) };
  }
  const w = pick(rng, WORDS);
  const year = 2000 + rng.int(24);
  const val = `${10 + rng.int(90)}%`;
  return {
    question: `According to the ${category}, what is the ${w} for ${year}?`,
    answer: val,
    wrong: () => `${10 + rng.int(90)}%`,
  };
}

/** One synthetic sample; `i` is the sample's position (qids are unique per bench). */
export function generateSample(rng: Rng, i: number, images: MediaRef[], frames: MediaRef[], crops: MediaRef[]): SampleRecord {
  let r = rng.next();
  let b = BENCHES[0]!;
  for (const x of BENCHES) {
    if (r < x.weight) {
      b = x;
      break;
    }
    r -= x.weight;
  }
  const category = pick(rng, b.categories);
  const q = makeQuestion(rng, b, category);
  const qid = `${b.id}_${String(i).padStart(6, '0')}`;
  const original = pick(rng, images);
  const media: MediaRef[] = b.video ? Array.from({ length: 4 }, () => pick(rng, frames)) : [original];

  // Tool calls: Poisson around the bench's mean; PR forces a finish after 4.
  let calls = Math.min(5, poissonish(rng, b.meanCalls));
  let stop: StopReason = 'answer';
  if (calls > 4) {
    calls = 4;
    stop = 'max_calls';
  }
  const turns: Turn[] = [];
  let toolErrors = 0;
  let useful = 0;
  let latency = 0;
  for (let c = 0; c < calls; c++) {
    const failed = rng.next() < 0.06;
    const latencyMs = round3(300 + rng.next() * 900);
    latency += latencyMs;
    if (b.video) {
      const k = 2 + rng.int(4);
      const idx = Array.from(new Set(Array.from({ length: k }, () => rng.int(16)))).sort((x, y) => x - y);
      const raw = `{"name": "select_frames", "arguments": {"target_frames": [${idx.join(', ')}]}}`;
      const text = `<think>The ${category.replace(/_/g, ' ')} question needs a closer look at a few moments, so I will select frames ${idx.join(', ')}.</think>\n<tool_call>\n${raw}\n</tool_call>`;
      if (failed) toolErrors++;
      else useful++;
      turns.push({
        index: c,
        text,
        call: {
          raw,
          name: 'select_frames',
          arguments: { target_frames: idx },
          frameIndices: idx,
          produced: failed ? [] : idx.map((f) => frames[f % frames.length]!),
          ...(failed ? { error: 'Invalid frame index: frames must be between 0 and 15' } : {}),
        },
        observation: failed ? '\nExecution error:\nInvalid frame index\n' : `\nHere are the selected frames (Frame Size: 448x252, Numbered ${4 + c} to ${4 + c + idx.length - 1}):`,
        promptTokens: 900 + 300 * c,
        completionTokens: 40 + rng.int(80),
        latencyMs,
        finishReason: 'stop',
      });
    } else {
      const x1 = round3(rng.next() * 0.7);
      const y1 = round3(rng.next() * 0.7);
      const box: [number, number, number, number] = [x1, y1, round3(x1 + 0.05 + rng.next() * 0.25), round3(y1 + 0.05 + rng.next() * 0.25)];
      const badFormat = failed && rng.next() < 0.5;
      const raw = badFormat ? `{"name": "crop_image_normalized", "arguments": {"bbox_2d": [${box.join(', ')}], "target_image": 1}` : `{"name": "crop_image_normalized", "arguments": {"bbox_2d": [${box.join(', ')}], "target_image": 1}}`;
      const text = `<think>I need to zoom into the region around the ${category.includes('table') || category.includes('chart') ? 'numbers' : 'object'} to be sure.</think>\n<tool_call>\n${raw}\n</tool_call>`;
      const crop = pick(rng, crops);
      if (failed) toolErrors++;
      else useful++;
      turns.push({
        index: c,
        text,
        call: {
          raw,
          name: badFormat ? null : 'crop_image_normalized',
          ...(badFormat ? {} : { arguments: { bbox_2d: box, target_image: 1 }, targetIndex: 0, bboxMode: 'normalized' as const, bboxRaw: box, bboxNormalized: box, bboxPadded: box, cropBox: [Math.round(box[0] * original.width), Math.round(box[1] * original.height), Math.round(box[2] * original.width), Math.round(box[3] * original.height)] as [number, number, number, number] }),
          produced: failed ? [] : [crop],
          ...(failed ? { error: badFormat ? 'JSONDecodeError: Expecting \',\' delimiter' : 'ValueError: the box is too small to crop' } : {}),
        },
        observation: failed ? `\nExecution error:\n${badFormat ? "Expecting ',' delimiter" : 'the box is too small to crop'}\n` : `\nHere is the cropped image (Image Size: ${crop.width}x${crop.height}):`,
        promptTokens: 1100 + 400 * c,
        completionTokens: 30 + rng.int(60),
        latencyMs,
        finishReason: 'stop',
      });
    }
  }
  const pCorrect = Math.min(0.95, Math.max(0.05, b.base + b.perCall * Math.min(useful, 2) - 0.1 * toolErrors));
  let correct = rng.next() < pCorrect;
  // A few episodes end abnormally.
  const u = rng.next();
  if (stop === 'answer' && u < 0.01) stop = 'length';
  else if (stop === 'answer' && u < 0.013) stop = 'engine_error';
  if (stop === 'engine_error' || stop === 'length') correct = false;
  const extracted = correct ? q.answer : q.wrong();
  let finalText: string;
  if (stop === 'engine_error') finalText = '';
  else if (stop === 'length') finalText = `<think>Let me look again at the ${pick(rng, OBJECTS)} and compare it with the ${pick(rng, OBJECTS)} and the ${pick(rng, OBJECTS)}, then recount`;
  else finalText = `<think>${calls ? 'The zoomed view shows' : 'The image shows'} the ${pick(rng, COLORS)} ${pick(rng, OBJECTS)} clearly${b.kind === 'count' ? `, and I count ${extracted}` : ''}.</think>\nThe answer is \\boxed{${extracted}}.`;
  const finalLatency = round3(200 + rng.next() * 1500);
  latency = round3(latency + finalLatency);
  if (stop !== 'engine_error') {
    turns.push({ index: calls, text: finalText, promptTokens: 1100 + 400 * calls, completionTokens: 20 + rng.int(120), latencyMs: finalLatency, finishReason: stop === 'length' ? 'length' : 'stop' });
  }
  const rec: SampleRecord = {
    qid,
    bench: b.id,
    category,
    question: q.question,
    ...(q.options ? { options: q.options } : {}),
    answer: q.answer,
    prediction: finalText,
    extracted: stop === 'engine_error' || stop === 'length' ? null : extracted,
    score: correct ? 1 : 0,
    correct,
    stop_reason: stop,
    calls,
    tool_errors: toolErrors,
    latency_ms: latency,
    ...(stop === 'engine_error' ? { error: 'engine timed out after 120 s' } : {}),
    trajectory: {
      dialect: 'pixel-reasoner',
      prompt: 'pixel-reasoner',
      media,
      originals: b.video ? media : [original],
      isVideo: b.video,
      question: q.question,
      turns,
      stopReason: stop,
      ...(stop === 'engine_error' ? { error: 'engine timed out after 120 s' } : {}),
      finalText,
      totalTokens: turns.reduce((s, t) => s + (t.completionTokens ?? 0), 0) + 1100,
      latencyMs: latency,
    },
    source: 'synthetic:gen-large-run',
  };
  return rec;
}

export function runIdFor(n: number, seed: number): string {
  return `synthetic-${n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : n}-s${seed}`;
}

export function buildManifest(opts: { n: number; seed: number; runId: string }): RunManifest {
  return {
    id: opts.runId,
    name: `Synthetic run (${opts.n} samples, seed ${opts.seed})`,
    // Fixed so the files are reproducible; the run is synthetic anyway.
    createdAt: new Date(Date.UTC(2026, 0, 1) + opts.seed * 1000).toISOString(),
    appVersion: APP_VERSION,
    kind: 'eval',
    model: { id: 'synthetic/pixel-reasoner-7b-sim' },
    engine: 'synthetic',
    dialect: 'pixel-reasoner',
    prompt: 'pixel-reasoner',
    minPixels: 401408,
    maxPixels: 4014080,
    decoding: { temperature: 0, topP: 1, maxTokens: 2048, seed: opts.seed },
    limits: { maxCalls: 4, maxImages: 16, tokenBudget: 12088 },
    bench: { id: 'synthetic-mix', revision: 'synthetic', n: opts.n },
    scorers: Object.fromEntries(BENCHES.map((b) => [b.id, 'synthetic'])),
    extra: { synthetic: true, generator: 'scripts/gen-large-run.ts', seed: opts.seed, benches: BENCHES.map((b) => b.id) },
  };
}

/** The samples of a synthetic run, one at a time. */
export function* generateSamples(opts: GenOptions): Generator<SampleRecord> {
  const rng = createRng(opts.seed);
  const images = opts.images ?? synthMedia('image', 12, 1280, 960);
  const frames = opts.frames ?? synthMedia('frame', 16, 448, 252);
  const crops = opts.crops ?? synthMedia('crop', 8, 336, 336);
  for (let i = 0; i < opts.n; i++) yield generateSample(rng, i, images, frames, crops);
}

/**
 * Label events for a synthetic run: annotator `a` labels ~`fraction` of the wrong samples, `b` labels
 * most of the same ones and agrees on the primary label ~75 % of the time, so agreement is meaningful.
 */
export function generateLabelEvents(runId: string, samples: Iterable<SampleRecord>, seed: number, fraction = 0.2): { a: LabelEvent[]; b: LabelEvent[] } {
  const rng = createRng(seed ^ 0x5eed);
  const ids = DEFAULT_TAXONOMY.labels.map((l) => l.id);
  const a: LabelEvent[] = [];
  const b: LabelEvent[] = [];
  let t = Date.UTC(2026, 0, 2);
  const at = (): string => new Date((t += 1000 + rng.int(20000))).toISOString();
  for (const s of samples) {
    if (s.correct || rng.next() >= fraction) continue;
    const guess = s.tool_errors > 0 ? 'tool_format_error' : s.calls === 0 ? 'no_zoom' : rng.next() < 0.5 ? 'wrong_region' : 'right_region_misread';
    const la = rng.next() < 0.8 ? guess : pick(rng, ids);
    a.push({ v: 1, who: 'annotator-a', at: at(), run: runId, qid: s.qid, step: null, label: la, op: 'add' });
    if (rng.next() < 0.15) a.push({ v: 1, who: 'annotator-a', at: at(), run: runId, qid: s.qid, step: null, label: 'reasoning_error', op: 'add', note: 'also a reasoning slip' });
    if (rng.next() < 0.85) {
      const lb = rng.next() < 0.75 ? la : pick(rng, ids);
      b.push({ v: 1, who: 'annotator-b', at: at(), run: runId, qid: s.qid, step: null, label: lb, op: 'add' });
    }
  }
  return { a, b };
}

/** Real PNGs (gradients with a grid) so the UI has pixels to draw; returns their media refs. */
export async function writeSyntheticMedia(workspace: string): Promise<{ images: MediaRef[]; frames: MediaRef[]; crops: MediaRef[] }> {
  const { default: sharp } = await import('sharp');
  const dir = join(workspace, 'media');
  await mkdir(dir, { recursive: true });
  const make = async (w: number, h: number, k: number): Promise<MediaRef> => {
    const buf = Buffer.alloc(w * h * 3);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const o = (y * w + x) * 3;
        const grid = x % 64 === 0 || y % 64 === 0;
        buf[o] = grid ? 255 : (x * 255) / w;
        buf[o + 1] = grid ? 255 : (y * 255) / h;
        buf[o + 2] = grid ? 255 : (k * 37) % 256;
      }
    }
    const png = await sharp(buf, { raw: { width: w, height: h, channels: 3 } }).png({ compressionLevel: 9 }).toBuffer();
    const id = `${createHash('sha256').update(png).digest('hex')}.png`;
    await writeFile(join(dir, id), png);
    return { id, width: w, height: h, mime: 'image/png' };
  };
  const images: MediaRef[] = [];
  for (let k = 0; k < 12; k++) images.push(await make(640, 480, k));
  const frames: MediaRef[] = [];
  for (let k = 0; k < 16; k++) frames.push(await make(448, 252, 100 + k));
  const crops: MediaRef[] = [];
  for (let k = 0; k < 8; k++) crops.push(await make(k % 2 ? 448 : 336, k % 2 ? 224 : 336, 200 + k));
  return { images, frames, crops };
}

export interface WriteResult {
  runDir: string;
  samples: number;
  bytes: number;
  labelEvents: number;
}

/** Write manifest.json + samples.jsonl (and media, labels) under `<workspace>/runs/<runId>/`. */
export async function writeLargeRun(
  workspace: string,
  opts: { n: number; seed: number; runId?: string; media?: boolean; labels?: boolean; force?: boolean },
): Promise<WriteResult> {
  if (!Number.isInteger(opts.n) || opts.n < 1) throw new Error(`--n must be a positive integer, got ${opts.n}`);
  if (!Number.isInteger(opts.seed)) throw new Error(`--seed must be an integer, got ${opts.seed}`);
  const runId = opts.runId ?? runIdFor(opts.n, opts.seed);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(runId)) throw new Error(`run id '${runId}' must be letters, digits, '.', '_' or '-'`);
  const runDir = join(workspace, 'runs', runId);
  const exists = await stat(join(runDir, 'samples.jsonl')).then(() => true, () => false);
  if (exists && !opts.force) throw new Error(`${runDir} already has samples.jsonl; pass --force to overwrite or choose another --run-id`);
  await mkdir(runDir, { recursive: true });
  const media = opts.media === false ? undefined : await writeSyntheticMedia(workspace);
  await writeFile(join(runDir, 'manifest.json'), JSON.stringify(buildManifest({ n: opts.n, seed: opts.seed, runId }), null, 2) + '\n');
  const out = createWriteStream(join(runDir, 'samples.jsonl'));
  let bytes = 0;
  let chunk: string[] = [];
  const flush = async (): Promise<void> => {
    if (!chunk.length) return;
    const s = chunk.join('');
    chunk = [];
    bytes += Buffer.byteLength(s);
    if (!out.write(s)) await new Promise<void>((r) => out.once('drain', r));
  };
  const light: Array<Pick<SampleRecord, 'qid' | 'correct' | 'calls' | 'tool_errors'>> = [];
  for (const s of generateSamples({ n: opts.n, seed: opts.seed, runId, ...(media ?? {}) })) {
    chunk.push(JSON.stringify(s) + '\n');
    if (opts.labels) light.push({ qid: s.qid, correct: s.correct, calls: s.calls, tool_errors: s.tool_errors });
    if (chunk.length >= 500) await flush();
  }
  await flush();
  await new Promise<void>((res, rej) => out.end((err?: Error | null) => (err ? rej(err) : res())));
  let labelEvents = 0;
  if (opts.labels) {
    const { a, b } = generateLabelEvents(runId, light as SampleRecord[], opts.seed);
    await mkdir(join(workspace, 'labels'), { recursive: true });
    await writeFile(join(workspace, 'labels', 'annotator-a.jsonl'), a.map((e) => JSON.stringify(e) + '\n').join(''));
    await writeFile(join(workspace, 'labels', 'annotator-b.jsonl'), b.map((e) => JSON.stringify(e) + '\n').join(''));
    labelEvents = a.length + b.length;
  }
  return { runDir, samples: opts.n, bytes, labelEvents };
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      workspace: { type: 'string', default: '.workspace' },
      n: { type: 'string', default: '50000' },
      seed: { type: 'string', default: '1' },
      'run-id': { type: 'string' },
      labels: { type: 'boolean', default: false },
      'no-media': { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (args.help) {
    console.log('usage: node --import tsx scripts/gen-large-run.ts --workspace DIR [--n 50000] [--seed 1] [--run-id ID] [--labels] [--no-media] [--force]');
    return;
  }
  const workspace = resolve(args.workspace);
  const n = Number(args.n);
  const seed = Number(args.seed);
  const t0 = performance.now();
  const res = await writeLargeRun(workspace, {
    n,
    seed,
    ...(args['run-id'] !== undefined ? { runId: args['run-id'] } : {}),
    media: !args['no-media'],
    labels: args.labels,
    force: args.force,
  });
  console.log(`wrote ${res.samples} samples (${(res.bytes / 1e6).toFixed(1)} MB)${res.labelEvents ? ` and ${res.labelEvents} label events` : ''} to ${res.runDir} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

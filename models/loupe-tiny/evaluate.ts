/**
 * Evaluate loupe-tiny (or any local model folder) on a loupe-synth folder through Loupe's own engine and loop:
 * LocalEngine (worker thread, onnxruntime-node, CPU) → runEpisode (pixel-reasoner dialect, eval presets, greedy)
 * → the benchmark's scorer (pr.boxed). Crop quality is measured against each sample's ground-truth target box.
 *
 * `--kinds` picks the samples: `image` (default), `video` or `all`. Video samples reach the loop as prepare.ts gives
 * them in training: the 16 frame files as one video (`videoFrames`), the same prompt id, question and settings.
 * For video the rows also say which frames `select_frames` picked and whether one of them shows the target
 * (the sample's `target.frames`); crops are scored on the frame they cut (a frame without the target scores 0).
 *
 *   node --import tsx models/loupe-tiny/evaluate.ts --model DIR --data DIR [--prompt vcot|notool] [--dtype q8|fp32]
 *        [--kinds image|video|all] [--limit N] [--warmup] [--out FILE.json]
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runEpisode } from '../../app/agent';
import type { SynthSample } from '../../app/synth/generate';
import { getScorer } from '../../app/bench/scorers';
import { questionWithOptions } from '../../app/bench/adapters/options';
import type { Box, Trajectory } from '../../app/contract/trajectory';
import type { EngineDtype, EngineDtypeSpec } from '../../app/engines/types';
import { DTYPE_SUFFIX, ONNX_PARTS, type OnnxPart } from '../../app/engines/local/modelFolder';
import { getDialect } from '../../app/protocol';
import type { PromptId } from '../../app/protocol/types';
import { predictionOf } from '../../app/sweeps/runner';
import { Workspace } from '../../app/workspace';
import { createEngineManager, imageOpsFor } from '../../main/core/wiring';

export interface CropScore {
  /** The crop box (pixels of the image it was cut from) fully contains the target box. */
  contains: boolean;
  /** Intersection over union of crop box and target box. */
  iou: number;
  /** Fraction of the target box's area inside the crop box. */
  coverage: number;
}

/** Crop box vs target box, both in the same pixel frame. */
export function scoreCrop(crop: Box, target: Box): CropScore {
  const ix = Math.max(0, Math.min(crop[2], target[2]) - Math.max(crop[0], target[0]));
  const iy = Math.max(0, Math.min(crop[3], target[3]) - Math.max(crop[1], target[1]));
  const inter = ix * iy;
  const area = (b: Box): number => Math.max(0, b[2] - b[0]) * Math.max(0, b[3] - b[1]);
  const union = area(crop) + area(target) - inter;
  return {
    contains: crop[0] <= target[0] && crop[1] <= target[1] && crop[2] >= target[2] && crop[3] >= target[3],
    iou: union > 0 ? inter / union : 0,
    coverage: area(target) > 0 ? inter / area(target) : 0,
  };
}

/** The sample's target box in the pixel frame of the image the model saw (the initially resized original). */
export function targetInModelFrame(s: SynthSample, t: Trajectory): Box {
  const m = t.media[0];
  if (!m) throw new Error(`targetInModelFrame: trajectory for ${s.qid} has no media`);
  const sx = m.width / s.width;
  const sy = m.height / s.height;
  const b = s.target.px;
  return [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy];
}

export interface SampleResult {
  qid: string;
  category: string;
  answer: string;
  prediction: string;
  extracted: unknown;
  correct: boolean;
  stopReason: string;
  calls: number;
  toolErrors: number;
  /** Crops on the original image (target_image 1), in order. */
  crops: CropScore[];
  /** Wall time of the whole episode (loop, image resizes and crops, engine). */
  ms: number;
  /** Time inside the engine (sum of the turns' latencies: prefill + decode). */
  engineMs: number;
  /** Tokens generated over all turns. */
  completionTokens: number;
  /** Video samples only. */
  video?: VideoResult;
}

export interface VideoResult {
  /** 1-based frames that show the target (the sample's ground truth). */
  targetFrames: number[];
  /** `select_frames` calls made (including ones that failed). */
  selectCalls: number;
  /** 1-based frames picked by the successful `select_frames` calls, in call order. */
  selected: number[];
  /** Some picked frame shows the target. */
  selectHit: boolean;
  /** For each crop call on a frame (a video frame or a selected frame): its 1-based frame number. */
  cropFrames: number[];
}

export type EvalKinds = 'image' | 'video' | 'all';

/** The sample's target box scaled to an image of `w`×`h` (a resized copy of the original or of a video frame). */
function targetAt(s: SynthSample, w: number, h: number): Box {
  const sx = w / s.width;
  const sy = h / s.height;
  const b = s.target.px;
  return [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy];
}

/**
 * Video rows: the frames `select_frames` picked and the crops on frames. Crop targets are resolved the way the loop
 * numbers images: `targetIndex` below the number of video frames is a frame itself, above it an image appended by an
 * earlier call (a selected frame, or a crop — crops of crops are not scored).
 */
export function videoScores(s: SynthSample, t: Trajectory): { video: VideoResult; crops: CropScore[] } {
  const targetFrames = s.target.frames ?? [];
  const nFrames = t.media.length;
  /** What each image appended by a call is: the 0-based frame it shows, or null for a crop. */
  const prior: Array<{ frame: number | null; width: number; height: number }> = [];
  const selected: number[] = [];
  const cropFrames: number[] = [];
  const crops: CropScore[] = [];
  let selectCalls = 0;
  for (const turn of t.turns) {
    const c = turn.call;
    if (!c) continue;
    if (c.name === 'select_frames') {
      selectCalls++;
      const idx = c.error ? [] : (c.frameIndices ?? []);
      for (const f of idx) selected.push(f + 1);
      c.produced.forEach((m, i) => prior.push({ frame: idx[i] ?? null, width: m.width, height: m.height }));
      continue;
    }
    if (c.cropBox && c.targetIndex !== undefined) {
      const on = c.targetIndex < nFrames ? { frame: c.targetIndex, width: t.media[c.targetIndex]!.width, height: t.media[c.targetIndex]!.height } : prior[c.targetIndex - nFrames];
      if (on && on.frame !== null) {
        cropFrames.push(on.frame + 1);
        crops.push(targetFrames.includes(on.frame + 1) ? scoreCrop(c.cropBox, targetAt(s, on.width, on.height)) : { contains: false, iou: 0, coverage: 0 });
      }
    }
    for (const m of c.produced) prior.push({ frame: null, width: m.width, height: m.height });
  }
  return { video: { targetFrames, selectCalls, selected, selectHit: selected.some((f) => targetFrames.includes(f)), cropFrames }, crops };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : 0;
}

export function summarize(rs: SampleResult[]): Record<string, number> {
  const n = rs.length || 1;
  const withCrop = rs.filter((r) => r.crops.length > 0);
  const first = withCrop.map((r) => r.crops[0]!);
  const ms = rs.map((r) => r.ms).sort((a, b) => a - b);
  const med = ms.length ? ms[Math.floor((ms.length - 1) / 2)]! : 0;
  return {
    n: rs.length,
    accuracy: rs.filter((r) => r.correct).length / n,
    boxedRate: rs.filter((r) => r.extracted !== null && r.extracted !== undefined && r.extracted !== '').length / n,
    toolUseRate: rs.filter((r) => r.calls > 0).length / n,
    meanCalls: rs.reduce((a, r) => a + r.calls, 0) / n,
    toolErrorRate: rs.filter((r) => r.toolErrors > 0).length / n,
    firstCropContains: first.length ? first.filter((c) => c.contains).length / first.length : 0,
    anyCropContains: withCrop.length ? withCrop.filter((r) => r.crops.some((c) => c.contains)).length / withCrop.length : 0,
    firstCropMeanIoU: first.length ? first.reduce((a, c) => a + c.iou, 0) / first.length : 0,
    firstCropMeanCoverage: first.length ? first.reduce((a, c) => a + c.coverage, 0) / first.length : 0,
    medianMs: med,
    meanMs: ms.reduce((a, b) => a + b, 0) / n,
    medianEngineMs: median(rs.map((r) => r.engineMs)),
    meanCompletionTokens: rs.reduce((a, r) => a + r.completionTokens, 0) / n,
    ...videoSummary(rs),
  };
}

/** Video-only keys (none when no row is a video sample, so image summaries keep their shape). */
function videoSummary(rs: SampleResult[]): Record<string, number> {
  const vs = rs.map((r) => r.video).filter((v): v is VideoResult => v !== undefined);
  if (vs.length === 0) return {};
  const picked = vs.filter((v) => v.selected.length > 0);
  return {
    videoN: vs.length,
    selectRate: vs.filter((v) => v.selectCalls > 0).length / vs.length,
    /** Among videos where frames were picked: some picked frame shows the target. */
    selectHitRate: picked.length ? picked.filter((v) => v.selectHit).length / picked.length : 0,
    /** Over all videos (no pick counts as a miss). */
    selectHitOverall: vs.filter((v) => v.selectHit).length / vs.length,
    meanFramesSelected: picked.length ? picked.reduce((a, v) => a + v.selected.length, 0) / picked.length : 0,
  };
}

export async function evaluate(opts: {
  model: string;
  data: string;
  prompt: PromptId;
  /** One dtype for every ONNX part, or one per part ({ vision_encoder: 'fp32', ... }). */
  dtype: EngineDtypeSpec;
  /** Which samples: image (default), video, or all. */
  kinds?: EvalKinds;
  limit?: number;
  /**
   * Run the first sample once, untimed and unscored, before the timed loop: the engine's sessions and the resize workers
   * start on first use, a one-time cost a Demo or a sweep pays once. Its wall time comes back as summary.warmupMs.
   */
  warmup?: boolean;
  log?: (s: string) => void;
}): Promise<{ results: SampleResult[]; summary: Record<string, number>; byKind?: { image: Record<string, number>; video: Record<string, number> } }> {
  const kinds = opts.kinds ?? 'image';
  const samples = (await fsp.readFile(path.join(opts.data, 'samples.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SynthSample)
    .filter((s) => (kinds === 'all' ? true : kinds === 'video' ? s.isVideo : !s.isVideo))
    .slice(0, opts.limit ?? Infinity);
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-tiny-eval-'));
  // The same engine manager and image ops every door uses (a worker thread: one job in this process).
  const ops = await imageOpsFor((await new Workspace(tmp).init()).media, 'inline');
  const engines = await createEngineManager({ isolation: 'thread' });
  const { engine, release } = await engines.acquire({ modelDir: path.resolve(opts.model), ...(opts.dtype ? { dtype: opts.dtype } : {}) });
  const scorer = getScorer('pr.boxed');
  const dialect = getDialect('pixel-reasoner');
  const results: SampleResult[] = [];
  const episode = (s: SynthSample) =>
    runEpisode({
      engine,
      dialect,
      // video as prepare.ts feeds it in training: the frame files as one video
      media: s.isVideo ? { videoFrames: (s.frames ?? []).map((f) => path.resolve(opts.data, f)) } : { images: [path.resolve(opts.data, s.image!)] },
      question: questionWithOptions(s.question, s.options),
      imageOps: ops,
      settings: { prompt: opts.prompt, mode: 'eval', decoding: { temperature: 0, topP: 1, topK: -1 }, limits: { maxTokensPerTurn: 160 } },
    });
  let warmupMs: number | undefined;
  try {
    if (opts.warmup && samples[0]) {
      const t0 = performance.now();
      await episode(samples[0]);
      warmupMs = performance.now() - t0;
    }
    for (const s of samples) {
      const t0 = performance.now();
      const t = await episode(s);
      const ms = performance.now() - t0;
      const prediction = predictionOf(t);
      const r = scorer.score(prediction, { answer: s.answer });
      const vs = s.isVideo ? videoScores(s, t) : undefined;
      const target = vs ? undefined : targetInModelFrame(s, t);
      const calls = t.turns.filter((x) => x.call);
      const crops = vs ? vs.crops : calls.filter((x) => x.call?.cropBox && x.call.targetIndex === 0).map((x) => scoreCrop(x.call!.cropBox!, target!));
      results.push({
        qid: s.qid,
        category: s.category,
        answer: s.answer,
        prediction,
        extracted: r.extracted,
        correct: r.correct,
        stopReason: t.stopReason,
        calls: calls.length,
        toolErrors: calls.filter((x) => x.call?.error).length,
        crops,
        ms,
        engineMs: t.turns.reduce((a, x) => a + (x.latencyMs ?? 0), 0),
        completionTokens: t.turns.reduce((a, x) => a + (x.completionTokens ?? 0), 0),
        ...(vs ? { video: vs.video } : {}),
      });
      const frames = vs ? ` frames ${vs.video.selected.join(',') || '-'} (target ${vs.video.targetFrames.join(',')}) ${vs.video.selectHit ? 'hit' : 'miss'}` : '';
      opts.log?.(`${s.qid} ${s.category} gold ${s.answer} got ${String(r.extracted)} ${r.correct ? 'OK' : '--'} calls ${calls.length}${frames} crop ${crops.map((c) => (c.contains ? 'in' : 'out')).join(',')} ${ms.toFixed(0)} ms`);
    }
  } finally {
    await release();
    await engines.dispose();
    await fsp.rm(tmp, { recursive: true, force: true });
  }
  const summary = { ...summarize(results), ...(warmupMs !== undefined ? { warmupMs } : {}) };
  if (kinds !== 'all') return { results, summary };
  return { results, summary, byKind: { image: summarize(results.filter((r) => !r.video)), video: summarize(results.filter((r) => r.video)) } };
}

/** `q8` → 'q8'; `vision_encoder=fp32,decoder_model_merged=q8,embed_tokens=q8` → one dtype per ONNX part (all three named). */
export function parseDtype(spec: string): EngineDtypeSpec {
  const dtypes = Object.keys(DTYPE_SUFFIX);
  const isDtype = (d: string): d is EngineDtype => dtypes.includes(d);
  if (!spec.includes('=')) {
    if (!isDtype(spec)) throw new Error(`--dtype ${spec}: not a dtype (${dtypes.join(', ')})`);
    return spec;
  }
  const out: Partial<Record<OnnxPart, EngineDtype>> = {};
  for (const kv of spec.split(',')) {
    const [part, dt] = kv.split('=') as [string, string | undefined];
    if (!(ONNX_PARTS as readonly string[]).includes(part)) throw new Error(`--dtype: unknown ONNX part '${part}' (${ONNX_PARTS.join(', ')})`);
    if (dt === undefined || !isDtype(dt)) throw new Error(`--dtype: ${part}=${dt ?? ''} is not a dtype (${dtypes.join(', ')})`);
    out[part as OnnxPart] = dt;
  }
  const missing = ONNX_PARTS.filter((p) => !(p in out));
  if (missing.length) throw new Error(`--dtype: name every ONNX part (missing: ${missing.join(', ')})`);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const usage = 'usage: evaluate.ts --model DIR --data DIR [--prompt vcot|notool] [--dtype q8|fp32|PART=DT,...] [--kinds image|video|all] [--limit N] [--warmup] [--out FILE]';
  let a: { model?: string; data?: string; prompt: string; dtype: string; kinds: string; limit?: string; warmup: boolean; out?: string };
  try {
    a = parseArgs({
      options: {
        model: { type: 'string' },
        data: { type: 'string' },
        prompt: { type: 'string', default: 'vcot' },
        dtype: { type: 'string', default: 'q8' },
        kinds: { type: 'string', default: 'image' },
        limit: { type: 'string' },
        warmup: { type: 'boolean', default: false },
        out: { type: 'string' },
      },
    }).values;
  } catch (e) {
    console.error(`evaluate: ${(e as Error).message}\n${usage}`);
    process.exit(2);
  }
  const { model, data, limit } = a;
  if (!model || !data) {
    console.error(usage);
    process.exit(2);
  }
  const kinds = a.kinds as EvalKinds;
  if (!['image', 'video', 'all'].includes(kinds)) {
    console.error(`evaluate: --kinds must be image, video or all, got ${kinds}`);
    process.exit(2);
  }
  let dtype: EngineDtypeSpec;
  try {
    dtype = parseDtype(a.dtype);
  } catch (e) {
    console.error(`evaluate: ${(e as Error).message}`);
    process.exit(2);
  }
  evaluate({ model, data, prompt: a.prompt as PromptId, dtype, kinds, ...(limit ? { limit: Number(limit) } : {}), warmup: a.warmup, log: (s) => console.error(s) })
    .then(async (r) => {
      const out = a.out;
      if (out) await fsp.writeFile(out, JSON.stringify(r, null, 1) + '\n');
      console.log(JSON.stringify(r.summary));
      if (r.byKind) console.log(JSON.stringify(r.byKind));
    })
    .catch((e: unknown) => {
      console.error(e);
      process.exit(1);
    });
}

/**
 * Evaluate loupe-tiny (or any local model folder) on a loupe-synth folder through Loupe's own engine and loop:
 * LocalEngine (worker thread, onnxruntime-node, CPU) → runEpisode (pixel-reasoner dialect, eval presets, greedy)
 * → the benchmark's scorer (pr.boxed). Crop quality is measured against each sample's ground-truth target box.
 *
 *   node --import tsx models/loupe-tiny/evaluate.ts --model DIR --data DIR [--prompt vcot|notool] [--dtype q8|fp32]
 *        [--limit N] [--out FILE.json]
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runEpisode } from '../../app/agent';
import type { SynthSample } from '../../app/bench/loupe-synth/generate';
import { getScorer } from '../../app/bench/scorers';
import type { Box, Trajectory } from '../../app/contract/trajectory';
import { LocalEngine } from '../../app/engines/local/localEngine';
import { getDialect } from '../../app/protocol';
import type { PromptId } from '../../app/protocol/types';
import { predictionOf } from '../../app/sweeps/runner';
import { Workspace } from '../../app/workspace';
import { workerThreadTransportFactory } from '../../native/engine/workerThreadTransport';
import { SharpImageOps } from '../../native/image/sharpImageOps';

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
  };
}

export async function evaluate(opts: { model: string; data: string; prompt: PromptId; dtype: 'q8' | 'fp32'; limit?: number; log?: (s: string) => void }): Promise<{ results: SampleResult[]; summary: Record<string, number> }> {
  const samples = (await fsp.readFile(path.join(opts.data, 'samples.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SynthSample)
    .filter((s) => !s.isVideo)
    .slice(0, opts.limit ?? Infinity);
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-tiny-eval-'));
  const ops = new SharpImageOps((await new Workspace(tmp).init()).media);
  const engine = await LocalEngine.start({ modelDir: path.resolve(opts.model), transport: workerThreadTransportFactory, dtype: opts.dtype });
  const scorer = getScorer('pr.boxed');
  const dialect = getDialect('pixel-reasoner');
  const results: SampleResult[] = [];
  try {
    for (const s of samples) {
      const t0 = performance.now();
      const t = await runEpisode({
        engine,
        dialect,
        media: { images: [path.resolve(opts.data, s.image!)] },
        question: s.question,
        imageOps: ops,
        settings: { prompt: opts.prompt, mode: 'eval', decoding: { temperature: 0, topP: 1, topK: -1 }, limits: { maxTokensPerTurn: 160 } },
      });
      const ms = performance.now() - t0;
      const prediction = predictionOf(t);
      const r = scorer.score(prediction, { answer: s.answer });
      const target = targetInModelFrame(s, t);
      const calls = t.turns.filter((x) => x.call);
      const crops = calls.filter((x) => x.call?.cropBox && x.call.targetIndex === 0).map((x) => scoreCrop(x.call!.cropBox!, target));
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
      });
      opts.log?.(`${s.qid} ${s.category} gold ${s.answer} got ${String(r.extracted)} ${r.correct ? 'OK' : '--'} calls ${calls.length} crop ${crops.map((c) => (c.contains ? 'in' : 'out')).join(',')} ${ms.toFixed(0)} ms`);
    }
  } finally {
    await engine.dispose();
    await fsp.rm(tmp, { recursive: true, force: true });
  }
  return { results, summary: summarize(results) };
}

function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const model = arg('--model');
  const data = arg('--data');
  if (!model || !data) {
    console.error('usage: evaluate.ts --model DIR --data DIR [--prompt vcot|notool] [--dtype q8|fp32] [--limit N] [--out FILE]');
    process.exit(2);
  }
  const limit = arg('--limit');
  evaluate({ model, data, prompt: (arg('--prompt', 'vcot') as PromptId), dtype: arg('--dtype', 'q8') as 'q8' | 'fp32', ...(limit ? { limit: Number(limit) } : {}), log: (s) => console.error(s) })
    .then(async (r) => {
      const out = arg('--out');
      if (out) await fsp.writeFile(out, JSON.stringify(r, null, 1) + '\n');
      console.log(JSON.stringify(r.summary));
    })
    .catch((e: unknown) => {
      console.error(e);
      process.exit(1);
    });
}

/**
 * SFT data for loupe-tiny, made through Loupe's own inference path so training sees exactly what the
 * model sees at inference:
 *
 *   loupe-synth sample → synthTrajectories (eval-mode geometry) → the real agent loop (runEpisode,
 *   pixel-reasoner dialect, real crops through SharpImageOps) driven by a ScriptedEngine that replays the
 *   trajectory's assistant turns → the local engine's own prompt rendering + image preprocessing
 *   (QwenVLRuntime.encode: chat template, MAX_PIXELS resize, <|image_pad|> expansion).
 *
 * Output (DIR): manifest.jsonl — one line per trajectory: {qid, kind, ids, spans [[start,end)...] of assistant
 * tokens (loss), images [{file, grid}]}; images/<tag>-<n>.png — each prepared image at the exact size the engine
 * feeds the vision tower (recovered from pixel_values; --jpeg stores JPEG q85 instead, smaller for a transfer).
 *
 *   node --import tsx models/loupe-tiny/prepare.ts --data DIR1,DIR2,... --out DIR --tokenizer MODEL_DIR [--max-pixels N] [--recover-every K]
 *        [--notool-fraction F] [--notool --image-ref DIR,...] [--jpeg]
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { runEpisode, ScriptedEngine } from '../../app/agent';
import { synthTrajectories } from '../../app/synth/trajectories';
import { questionForSample } from '../../app/bench/adapters/options';
import type { SynthSample } from '../../app/synth/generate';
import type { ChatMessage, EngineImage } from '../../app/engines/types';
import { getDialect } from '../../app/protocol';
import { fromPlainJson, pyJsonDumps } from '../../app/pycompat/json';
import { Workspace } from '../../app/workspace';
import { SharpImageOps } from '../../native/image/sharpImageOps';
import { QwenVLRuntime } from '../../native/engine/qwenRuntime';
import type { WireGenerateRequest } from '../../app/engines/local/protocol';

/** loupe-tiny's MAX_PIXELS (128 merged tokens per image); also written into its preprocessor_config.json. */
export const LOUPE_TINY_MAX_PIXELS = 128 * 28 * 28;
const MEAN = [0.48145466, 0.4578275, 0.40821073];
const STD = [0.26862954, 0.26130258, 0.27577711];

/** pixel_values [N, 3·2·14·14] (patch order: h-block, w-block, mh, mw) → uint8 RGB [H, W, 3] of frame 0. */
export function pixelsFromPatches(pv: Float32Array, grid: [number, number, number]): { data: Uint8Array; width: number; height: number } {
  const [, gh, gw] = grid;
  const P = 14;
  const W = gw * P;
  const H = gh * P;
  const out = new Uint8Array(W * H * 3);
  const row = 3 * 2 * P * P;
  let r = 0;
  for (let bh = 0; bh < gh / 2; bh++)
    for (let bw = 0; bw < gw / 2; bw++)
      for (let mh = 0; mh < 2; mh++)
        for (let mw = 0; mw < 2; mw++, r++) {
          const py0 = (bh * 2 + mh) * P;
          const px0 = (bw * 2 + mw) * P;
          for (let c = 0; c < 3; c++)
            for (let y = 0; y < P; y++)
              for (let x = 0; x < P; x++) {
                const v = pv[r * row + ((c * 2 + 0) * P + y) * P + x]!;
                const u = Math.round((v * STD[c]! + MEAN[c]!) * 255);
                out[((py0 + y) * W + px0 + x) * 3 + c] = Math.min(255, Math.max(0, u));
              }
        }
  return { data: out, width: W, height: H };
}

export interface PrepareOptions {
  /** loupe-synth benchmark folders (samples.jsonl + images/). */
  dirs: string[];
  outDir: string;
  /** A model folder whose tokenizer, chat template and image processor are used (any loupe-tiny-compatible model). */
  tokDir: string;
  maxPixels?: number;
  /** The recovery trajectory for every k-th image sample (default 3). */
  recoverEvery?: number;
  /** Only no-tool trajectories (the `notool` prompt, a direct boxed answer). */
  notool?: boolean;
  /** Also a no-tool trajectory for this fraction of samples (deterministic by index), next to the tool ones. */
  notoolFraction?: number;
  /** Reuse these manifests' original images (no new files) — for a --notool pass over already prepared scenes. */
  imageRefDirs?: string[];
  /** Also a grounding example per image scene (every ring/tag with its box, plain system prompt). */
  ground?: boolean;
  /** Encode every turn's prompt to check the loss spans (default: every 50th trajectory). */
  checkSpans?: boolean;
  /** Store images as JPEG q85 (smaller, lossy) instead of PNG (exact). */
  jpeg?: boolean;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

export interface PrepareResult {
  trajectories: number;
  skipped: number;
  images: number;
  maxPixels: number;
}

async function main(): Promise<void> {
  const { values: a } = parseArgs({
    options: {
      data: { type: 'string' },
      out: { type: 'string' },
      tokenizer: { type: 'string' },
      'max-pixels': { type: 'string', default: String(LOUPE_TINY_MAX_PIXELS) },
      'recover-every': { type: 'string', default: '3' },
      notool: { type: 'boolean', default: false },
      'notool-fraction': { type: 'string', default: '0' },
      'image-ref': { type: 'string' },
      jpeg: { type: 'boolean', default: false },
      'check-spans': { type: 'boolean', default: false },
      ground: { type: 'boolean', default: false },
    },
  });
  const need = (v: string | undefined, name: string): string => {
    if (v === undefined) throw new Error(`prepare: missing --${name}`);
    return v;
  };
  const res = await prepareData({
    dirs: need(a.data, 'data').split(','),
    outDir: need(a.out, 'out'),
    tokDir: need(a.tokenizer, 'tokenizer'),
    maxPixels: Number(a['max-pixels']),
    recoverEvery: Number(a['recover-every']),
    notool: a.notool,
    notoolFraction: Number(a['notool-fraction']),
    imageRefDirs: a['image-ref'] !== undefined ? a['image-ref'].split(',') : [],
    jpeg: a.jpeg,
    checkSpans: a['check-spans'],
    ground: a.ground,
  });
  console.log(JSON.stringify(res));
}

/** SFT data for the samples of `dirs` (see the file comment). Video samples give `frames-zoom` trajectories. */
export async function prepareData(o: PrepareOptions): Promise<PrepareResult> {
  const dirs = o.dirs;
  const outDir = path.resolve(o.outDir);
  const tokDir = path.resolve(o.tokDir);
  const maxPixels = o.maxPixels ?? LOUPE_TINY_MAX_PIXELS;
  const recoverEvery = o.recoverEvery ?? 3;
  const notoolFraction = o.notoolFraction ?? 0;
  const log = o.log ?? ((l: string) => process.stderr.write(l + '\n'));
  const tag = path.basename(outDir);
  // notool: one no-tool trajectory per sample (the `notool` prompt, a direct boxed answer), so the model also has a
  // without-tools mode to compare against; imageRefDirs: reuse those manifests' original images (no new files)
  const notool = o.notool ?? false;
  const refDirs = o.imageRefDirs ?? [];
  const imageRef = refDirs.length ? new Map<string, { file: string; grid: number[] }>() : null;
  for (const rd of refDirs) {
    for (const l of (await fsp.readFile(path.join(rd, 'manifest.jsonl'), 'utf8')).split('\n').filter(Boolean)) {
      const r = JSON.parse(l) as { qid: string; images: Array<{ file: string; grid: number[] }> };
      const im = r.images[0];
      if (im && !imageRef!.has(r.qid)) imageRef!.set(r.qid, { file: path.relative(path.join(outDir, 'images'), path.join(path.resolve(rd), 'images', im.file)), grid: im.grid });
    }
  }
  await fsp.mkdir(path.join(outDir, 'images'), { recursive: true });
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-tiny-prep-'));
  const ops = new SharpImageOps((await new Workspace(tmp).init()).media);
  const rt = await QwenVLRuntime.load({ modelDir: tokDir, dtype: 'fp32' });
  const imEnd = rt.tokenizer.encode('<|im_end|>', { add_special_tokens: false }) as number[];
  if (imEnd.length !== 1) throw new Error('prepare: <|im_end|> is not one token');
  const IM_END = imEnd[0]!;
  const ASSISTANT = rt.tokenizer.encode('<|im_start|>assistant\n', { add_special_tokens: false }) as number[];
  const dialect = getDialect('pixel-reasoner');
  const imageFiles = new Map<string, string>();
  const lines: string[] = [];
  let n = 0;
  let skipped = 0;
  for (const d of dirs) {
    const samples = (await fsp.readFile(path.join(d, 'samples.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as SynthSample);
    for (const s of samples) {
      const media = s.isVideo
        ? s.frames?.length
          ? { videoFrames: s.frames.map((f) => path.resolve(d, f)) }
          : null
        : s.image
          ? { images: [path.resolve(d, s.image)] }
          : null;
      if (!media) continue;
      const Label = `${s.target.label[0]?.toUpperCase()}${s.target.label.slice(1)}`;
      const notoolTraj = { qid: s.qid, kind: 'notool', notool: true, turns: [`${Label} is small in the full ${s.isVideo ? 'video' : 'image'}; my best reading is \\boxed{${s.answer}}.`] };
      // every sample's zoom (or direct) trajectory; the recovery trajectory for every recoverEvery-th sample;
      // a no-tool trajectory for notoolFraction of the samples (or only that, with notool)
      const trajs: Array<{ qid: string; kind: string; notool: boolean; turns: string[] }> = notool
        ? [notoolTraj]
        : synthTrajectories(s, { mode: 'eval' })
            .filter((t) => t.kind !== 'recover' || s.index % recoverEvery === 0)
            .map((t) => ({ qid: t.qid, kind: t.kind, notool: false, turns: t.message_list.filter((m) => m.role === 'assistant').map((m) => m.content.map((c) => (c.type === 'text' ? c.text : '')).join('')) }));
      if (!notool && notoolFraction > 0 && ((s.index * 0.6180339887) % 1) < notoolFraction) trajs.push(notoolTraj);
      for (const t of trajs) {
        const turns = t.turns;
        const engine = new ScriptedEngine(turns);
        const traj = await runEpisode({
          engine,
          dialect,
          media,
          // with its options, as the evaluation loop asks it (the runner's function; left-of: "(A) K / (B) R")
          question: questionForSample(s),
          imageOps: ops,
          settings: { prompt: t.notool ? 'notool' : 'vcot', mode: 'eval', maxPixels },
        });
        if (traj.stopReason !== 'answer' || engine.used !== turns.length) {
          skipped++;
          log(`skip ${t.qid}/${t.kind}: stop ${traj.stopReason}, used ${engine.used}/${turns.length} ${traj.error ?? ''}`);
          continue;
        }
        // The images as the files they were kept as (the episode is over: every one is stored), so the same image in
        // several trajectories is one image of the dataset (the engine keys its preprocessing by file).
        const stored = async (img: EngineImage): Promise<EngineImage> => ops.engineImage(await ops.keep(img));
        const onFiles = async (ms: ChatMessage[]): Promise<ChatMessage[]> =>
          Promise.all(ms.map(async (m) => ({ ...m, content: await Promise.all(m.content.map(async (c) => (c.type === 'image' ? { ...c, image: await stored(c.image) } : c.type === 'video' ? { ...c, frames: await Promise.all(c.frames.map(stored)) } : c))) })));
        const requests = await Promise.all(engine.requests.map(async (r) => ({ ...r, messages: await onFiles(r.messages) })));
        const reqs = requests.map((r): WireGenerateRequest => ({
          messages: r.messages,
          maxTokens: r.maxTokens,
          temperature: 0,
          topP: 1,
          topK: -1,
          stop: r.stop,
          ...(r.minPixels !== undefined ? { minPixels: r.minPixels } : {}),
          ...(r.maxPixels !== undefined ? { maxPixels: r.maxPixels } : {}),
        }));
        const last = reqs.at(-1)!;
        const full: WireGenerateRequest = {
          ...last,
          messages: [...last.messages, { role: 'assistant', content: [{ type: 'text', text: turns.at(-1)! }] } as ChatMessage],
        };
        const enc = await rt.encode(full);
        const ids = [...enc.ids, IM_END];
        // Loss spans: each assistant turn (after "<|im_start|>assistant\n") through its <|im_end|>. Found in the full
        // conversation's ids; with checkSpans (and for every 50th trajectory) each turn's own prompt is encoded too and
        // must be a token prefix of the conversation ending exactly where its span starts.
        const spans: Array<[number, number]> = [];
        for (let i = 0; i + ASSISTANT.length <= ids.length; i++) {
          if (!ASSISTANT.every((v, j) => ids[i + j] === v)) continue;
          let e = i + ASSISTANT.length;
          while (e < ids.length && ids[e] !== IM_END) e++;
          if (e >= ids.length) throw new Error(`prepare: ${t.qid}/${t.kind}: no <|im_end|> after an assistant turn`);
          spans.push([i + ASSISTANT.length, e + 1]);
        }
        if (spans.length !== reqs.length) throw new Error(`prepare: ${t.qid}/${t.kind}: ${spans.length} assistant spans for ${reqs.length} turns`);
        if (o.checkSpans || n % 50 === 0) {
          for (const [k, r] of reqs.entries()) {
            const p = (await rt.encode(r)).ids;
            for (let i = 0; i < p.length; i++) if (p[i] !== ids[i]) throw new Error(`prepare: ${t.qid}/${t.kind}: turn prompt is not a prefix of the full conversation at token ${i}`);
            if (p.length !== spans[k]![0]) throw new Error(`prepare: ${t.qid}/${t.kind}: turn ${k} prompt ends at ${p.length}, its span starts at ${spans[k]![0]}`);
          }
        }
        const images: Array<{ file: string; grid: [number, number, number] }> = [];
        for (const im of enc.images) {
          const ref = imageRef?.get(t.qid);
          if (ref) {
            // the same original through the same loop and preprocessing: the image the other manifest already holds
            if (ref.grid.join() !== im.grid.join()) throw new Error(`prepare: ${t.qid}: grid ${im.grid} differs from the referenced image's ${ref.grid}`);
            images.push({ file: ref.file, grid: im.grid });
            continue;
          }
          let file = imageFiles.get(im.key);
          if (!file) {
            file = `${tag}-${imageFiles.size}.${o.jpeg ? 'jpg' : 'png'}`;
            const px = pixelsFromPatches(im.pixelValues.data as Float32Array, im.grid);
            const img = sharp(Buffer.from(px.data), { raw: { width: px.width, height: px.height, channels: 3 } });
            await (o.jpeg ? img.jpeg({ quality: 85 }) : img.png({ compressionLevel: 3 })).toFile(path.join(outDir, 'images', file));
            imageFiles.set(im.key, file);
          }
          images.push({ file, grid: im.grid });
        }
        lines.push(JSON.stringify({ qid: t.qid, kind: t.kind, category: s.category, answer: s.answer, ids, spans, images }));
        n++;
        if (o.ground && !s.isVideo && (t.kind === 'zoom' || t.kind === 'direct')) {
          // Grounding: the same global view, "find every ring/tag", every object's box (target and look-alikes) in
          // reading order — four times the localization signal of the crop call, conditioned on the colour words.
          const img = reqs[0]!.messages.flatMap((m) => m.content).find((c) => c.type === 'image');
          if (img) {
            const noun = s.category === 'ring-digits' ? 'ring' : s.category === 'tag-letter' ? 'tag' : s.category === 'box-dots' ? 'box' : 'tag';
            const objs = [s.target, ...s.decoys].sort((a, b) => a.norm[1] + a.norm[3] - (b.norm[1] + b.norm[3]) || a.norm[0] - b.norm[0]);
            const r3 = (v: number): number => Math.min(0.999, Math.max(0, Math.round(v * 1000) / 1000));
            const text = objs.map((b) => `${b.label}: ${pyJsonDumps(fromPlainJson(b.norm.map(r3)))}`).join('\n');
            const gmsgs: ChatMessage[] = [
              { role: 'system', content: [{ type: 'text', text: 'You are a helpful assistant.' }] },
              { role: 'user', content: [img, { type: 'text', text: `Find every ${noun} in the image and give its bounding box (normalized x1, y1, x2, y2).` }] },
              { role: 'assistant', content: [{ type: 'text', text }] },
            ];
            const genc = await rt.encode({ ...reqs[0]!, messages: gmsgs });
            const gids = [...genc.ids, IM_END];
            let st = -1;
            for (let i = gids.length - 1; i >= 0 && st < 0; i--) if (ASSISTANT.every((v, j) => gids[i + j] === v)) st = i + ASSISTANT.length;
            const g0 = genc.images[0];
            const file = g0 ? imageFiles.get(g0.key) : undefined;
            if (st > 0 && g0 && file) {
              lines.push(JSON.stringify({ qid: t.qid, kind: 'ground', category: s.category, answer: s.answer, ids: gids, spans: [[st, gids.length]], images: [{ file, grid: g0.grid }] }));
              n++;
            }
          }
        }
      }
    }
    log(`${d}: ${n} trajectories so far, ${imageFiles.size} images`);
  }
  await fsp.writeFile(path.join(outDir, 'manifest.jsonl'), lines.join('\n') + '\n');
  await fsp.rm(tmp, { recursive: true, force: true });
  await rt.dispose?.();
  return { trajectories: n, skipped, images: imageFiles.size, maxPixels };
}

// run as a script (not when imported, nor from a bundle that includes this module)
const self = new URL(import.meta.url).pathname;
if (self.endsWith('prepare.ts') && process.argv[1] && path.resolve(process.argv[1]) === path.resolve(self)) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}

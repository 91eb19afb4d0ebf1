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
 * tokens (loss), images [{file, grid}]}; images/<tag>-<n>.jpg — each prepared image at the exact size the engine
 * feeds the vision tower (recovered from pixel_values, then JPEG q85 to fit the GPU machine's transfer limit).
 *
 *   node --import tsx models/loupe-tiny/prepare.ts --data DIR1,DIR2,... --out DIR --tokenizer MODEL_DIR [--max-pixels N] [--recover-every K]
 *        [--notool --image-ref DIR,...]
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { runEpisode, ScriptedEngine } from '../../app/agent';
import { synthTrajectories } from '../../app/bench/loupe-synth/trajectories';
import type { SynthSample } from '../../app/bench/loupe-synth/generate';
import type { ChatMessage } from '../../app/engines/types';
import { getDialect } from '../../app/protocol';
import { Workspace } from '../../app/workspace';
import { SharpImageOps } from '../../native/image/sharpImageOps';
import { QwenVLRuntime } from '../../native/engine/qwenRuntime';
import type { WireGenerateRequest } from '../../app/engines/local/protocol';

/** loupe-tiny's MAX_PIXELS (128 merged tokens per image); also written into its preprocessor_config.json. */
export const LOUPE_TINY_MAX_PIXELS = 128 * 28 * 28;
const MEAN = [0.48145466, 0.4578275, 0.40821073];
const STD = [0.26862954, 0.26130258, 0.27577711];

function arg(name: string, dflt?: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : dflt;
  if (v === undefined) throw new Error(`prepare: missing ${name}`);
  return v;
}

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

async function main(): Promise<void> {
  const dirs = arg('--data').split(',');
  const outDir = path.resolve(arg('--out'));
  const tokDir = path.resolve(arg('--tokenizer'));
  const maxPixels = Number(arg('--max-pixels', String(LOUPE_TINY_MAX_PIXELS)));
  const recoverEvery = Number(arg('--recover-every', '3'));
  const tag = path.basename(outDir);
  // --notool: one no-tool trajectory per sample (the `notool` prompt, a direct boxed answer), so the model also has a
  // without-tools mode to compare against; --image-ref DIR,...: reuse those manifests' original images (no new files)
  const notool = process.argv.includes('--notool');
  const refDirs = process.argv.includes('--image-ref') ? arg('--image-ref').split(',') : [];
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
  const dialect = getDialect('pixel-reasoner');
  const imageFiles = new Map<string, string>();
  const lines: string[] = [];
  let n = 0;
  let skipped = 0;
  for (const d of dirs) {
    const samples = (await fsp.readFile(path.join(d, 'samples.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as SynthSample);
    for (const s of samples) {
      if (s.isVideo || !s.image) continue;
      // every sample's zoom (or direct) trajectory; the recovery trajectory for every RECOVER_EVERY-th sample
      // (images dominate the data's size: the GPU machine gets at most 64 MiB)
      const trajs: Array<{ qid: string; kind: string; turns: string[] }> = notool
        ? [{ qid: s.qid, kind: 'notool', turns: [`${s.target.label[0]?.toUpperCase()}${s.target.label.slice(1)} is small in the full image; my best reading is \\boxed{${s.answer}}.`] }]
        : synthTrajectories(s, { mode: 'eval' })
            .filter((t) => t.kind !== 'recover' || s.index % recoverEvery === 0)
            .map((t) => ({ qid: t.qid, kind: t.kind, turns: t.message_list.filter((m) => m.role === 'assistant').map((m) => m.content.map((c) => (c.type === 'text' ? c.text : '')).join('')) }));
      for (const t of trajs) {
        const turns = t.turns;
        const engine = new ScriptedEngine(turns);
        const traj = await runEpisode({
          engine,
          dialect,
          media: { images: [path.resolve(d, s.image)] },
          question: s.question,
          imageOps: ops,
          settings: { prompt: notool ? 'notool' : 'vcot', mode: 'eval', maxPixels },
        });
        if (traj.stopReason !== 'answer' || engine.used !== turns.length) {
          skipped++;
          console.error(`skip ${t.qid}/${t.kind}: stop ${traj.stopReason}, used ${engine.used}/${turns.length} ${traj.error ?? ''}`);
          continue;
        }
        const reqs = engine.requests.map((r): WireGenerateRequest => ({
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
        const spans: Array<[number, number]> = [];
        for (const r of reqs) {
          const p = (await rt.encode(r)).ids;
          for (let i = 0; i < p.length; i++) if (p[i] !== ids[i]) throw new Error(`prepare: ${t.qid}/${t.kind}: turn prompt is not a prefix of the full conversation at token ${i}`);
          let e = p.length;
          while (e < ids.length && ids[e] !== IM_END) e++;
          if (e >= ids.length) throw new Error(`prepare: ${t.qid}/${t.kind}: no <|im_end|> after an assistant turn`);
          spans.push([p.length, e + 1]);
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
            file = `${tag}-${imageFiles.size}.jpg`;
            const px = pixelsFromPatches(im.pixelValues.data as Float32Array, im.grid);
            await sharp(Buffer.from(px.data), { raw: { width: px.width, height: px.height, channels: 3 } }).jpeg({ quality: 85 }).toFile(path.join(outDir, 'images', file));
            imageFiles.set(im.key, file);
          }
          images.push({ file, grid: im.grid });
        }
        lines.push(JSON.stringify({ qid: t.qid, kind: t.kind, category: s.category, answer: s.answer, ids, spans, images }));
        n++;
      }
    }
    process.stderr.write(`${d}: ${n} trajectories so far, ${imageFiles.size} images\n`);
  }
  await fsp.writeFile(path.join(outDir, 'manifest.jsonl'), lines.join('\n') + '\n');
  await fsp.rm(tmp, { recursive: true, force: true });
  await rt.dispose?.();
  console.log(JSON.stringify({ trajectories: n, skipped, images: imageFiles.size, maxPixels }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}

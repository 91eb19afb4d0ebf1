/**
 * Loupe's own local engine (QwenVLRuntime, in-thread: the code the engine worker runs) on one model folder:
 * load time, the device that actually ran (and the fallback reason), prefill and decode tokens/s (median of
 * `--runs`), and the greedy tokens (to compare with PyTorch's first tokens from models/gpu_bench.py). JSON to stdout.
 *
 *   node --import tsx scripts/device/engine-bench.ts MODEL_DIR [--device cpu|webgpu|cuda] [--dtype fp32|fp16|q8]
 *        [--new-tokens 128] [--runs 3] [--image FILE] [--text "Describe this image."] [--keep-eos]
 *        [--bandwidth-gbs GB/s] [--json OUT.json] [--no-kv-reuse] [--logits-out FILE.f32 [--logits-steps 32]]
 *        [--decoder auto|fused|exported]   (auto: the fused decoder on cuda when the folder has one) [--warmup-tokens 4]
 *
 * LOUPE_ORT_PROFILE=PREFIX turns on onnxruntime's profiler for every session (models/ort_profile_summary.py sums the
 * JSON traces it writes as PREFIX_*.json).
 *
 * Runs under plain `node` from an esbuild bundle (for a machine without tsx):
 *   npx esbuild scripts/device/engine-bench.ts --bundle --platform=node --format=esm \
 *     --external:onnxruntime-node --external:sharp --outfile=/tmp/eb/engine-bench.mjs
 *   node /tmp/eb/engine-bench.mjs MODEL_DIR --device webgpu --dtype fp16
 * onnxruntime-node and sharp must resolve from the bundle's folder: a node_modules beside (or above) the .mjs
 * (NODE_PATH does not apply to ESM imports).
 *
 * The prompt is one image + a short text, as gpu_bench.py's PyTorch `generate`; eos is ignored by default (as
 * PyTorch's min_new_tokens) so every run decodes exactly `--new-tokens`.
 */
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { QwenVLRuntime } from '../../native/engine/qwenRuntime';
import type { EngineDevice, EngineDtype, GenerateRequest, GenerateResult } from '../../app/engines/types';
import { DTYPE_SUFFIX } from '../../app/engines/local/modelFolder';

interface Args {
  modelDir: string;
  device: EngineDevice;
  dtype: EngineDtype;
  newTokens: number;
  runs: number;
  image?: string;
  text: string;
  keepEos: boolean;
  bandwidthGBs?: number;
  json?: string;
  /** Decode through transformers.js' model.forward (the path before reused KV buffers), for before/after runs. */
  noKvReuse: boolean;
  /** Write the first `logitsSteps` steps' logits of the first timed run (float32 rows, little-endian) here. */
  logitsOut?: string;
  logitsSteps: number;
  /** Which decoder graph (LoadOptions.decoder). */
  decoder: 'auto' | 'fused' | 'exported';
  /** Tokens the untimed warm-up generates (its decode speed is reported as the first-run figure). */
  warmupTokens: number;
}

const USAGE = 'usage: engine-bench MODEL_DIR [--device cpu|webgpu|cuda] [--dtype fp32|fp16|q8] [--new-tokens N] [--runs N] [--image FILE] [--text T] [--keep-eos] [--bandwidth-gbs X] [--json OUT] [--no-kv-reuse] [--logits-out FILE.f32] [--logits-steps 32] [--decoder auto|fused|exported] [--warmup-tokens N]';

function readArgs(argv: string[]): Args {
  const parse = (args: string[]) =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        device: { type: 'string', default: 'cpu' },
        dtype: { type: 'string', default: 'fp32' },
        'new-tokens': { type: 'string', default: '128' },
        runs: { type: 'string', default: '3' },
        image: { type: 'string' },
        text: { type: 'string', default: 'Describe this image.' },
        'keep-eos': { type: 'boolean', default: false },
        'bandwidth-gbs': { type: 'string' },
        json: { type: 'string' },
        'no-kv-reuse': { type: 'boolean', default: false },
        'logits-out': { type: 'string' },
        'logits-steps': { type: 'string', default: '32' },
        decoder: { type: 'string', default: 'auto' },
        'warmup-tokens': { type: 'string', default: '4' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${USAGE}`);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const posInt = (s: string, flag: string): number => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: expected a positive integer, got ${JSON.stringify(s)}`);
    return n;
  };
  if (!['cpu', 'webgpu', 'cuda'].includes(v.device)) throw new Error(`--device: expected cpu, webgpu or cuda, got ${JSON.stringify(v.device)}`);
  if (!['auto', 'fused', 'exported'].includes(v.decoder)) throw new Error(`--decoder: expected auto, fused or exported, got ${JSON.stringify(v.decoder)}`);
  if (!(v.dtype in DTYPE_SUFFIX)) throw new Error(`--dtype: expected one of ${Object.keys(DTYPE_SUFFIX).join(', ')}, got ${JSON.stringify(v.dtype)}`);
  let bandwidthGBs: number | undefined;
  if (v['bandwidth-gbs'] !== undefined) {
    bandwidthGBs = Number(v['bandwidth-gbs']);
    if (!(bandwidthGBs > 0)) throw new Error(`--bandwidth-gbs: expected a positive number of GB/s`);
  }
  if (positionals.length !== 1) throw new Error(`expected one MODEL_DIR, got ${positionals.length}\n${USAGE}`);
  return {
    modelDir: path.resolve(positionals[0]!),
    device: v.device as EngineDevice,
    dtype: v.dtype as EngineDtype,
    newTokens: posInt(v['new-tokens'], '--new-tokens'),
    runs: posInt(v.runs, '--runs'),
    ...(v.image !== undefined ? { image: v.image } : {}),
    text: v.text,
    keepEos: v['keep-eos'],
    noKvReuse: v['no-kv-reuse'],
    ...(v['logits-out'] !== undefined ? { logitsOut: v['logits-out'] } : {}),
    logitsSteps: posInt(v['logits-steps'], '--logits-steps'),
    decoder: v.decoder as Args['decoder'],
    warmupTokens: posInt(v['warmup-tokens'], '--warmup-tokens'),
    ...(bandwidthGBs !== undefined ? { bandwidthGBs } : {}),
    ...(v.json !== undefined ? { json: v.json } : {}),
  };
}

/** Bytes of the decoder's ONNX file + external data for `dtype`: what one decode step reads (KV cache aside). */
function decoderBytes(dir: string, dtype: EngineDtype): number | undefined {
  const onnx = path.join(dir, 'onnx');
  const base = `decoder_model_merged${DTYPE_SUFFIX[dtype]}.onnx`;
  if (!existsSync(path.join(onnx, base))) return undefined;
  return readdirSync(onnx).filter((f) => f === base || f.startsWith(`${base}_data`)).reduce((s, f) => s + statSync(path.join(onnx, f)).size, 0);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const r1 = (x: number) => Math.round(x * 10) / 10;

function ortVersion(): string | undefined {
  try {
    const req = createRequire(import.meta.url);
    return (JSON.parse(readFileSync(req.resolve('onnxruntime-node/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const args = readArgs(process.argv.slice(2));
  const image = path.resolve(args.image ?? path.join(args.modelDir, 'original.png'));
  if (!existsSync(image)) throw new Error(`${image}: no such image (pass --image FILE; models made by make_tiny_qwen25vl.py --random-config 0.5b carry original.png)`);
  const t0 = performance.now();
  const rt = await QwenVLRuntime.load({ modelDir: args.modelDir, device: args.device, dtype: args.dtype, kvCache: false, decoder: args.decoder });
  const loadS = (performance.now() - t0) / 1000;
  if (!args.keepEos) {
    // random weights may pick an eos id early; PyTorch's side uses min_new_tokens, so stop only at the length here.
    // `eos` is the runtime's private stop-id set; clearing it is a bench-only reach-in.
    (rt as unknown as { eos: Set<number> }).eos.clear();
  }
  // bench-only reach-ins into the runtime's private state, as for `eos` above
  const internals = rt as unknown as { kvReuse: 'on' | 'off'; model: { sessions: Record<string, { endProfiling?: () => void }> } };
  if (args.noKvReuse) internals.kvReuse = 'off';
  const req: GenerateRequest = {
    messages: [{ role: 'user', content: [{ type: 'image', image: { id: path.basename(image), width: 0, height: 0, path: image } }, { type: 'text', text: args.text }] }],
    maxTokens: args.newTokens,
    temperature: 0,
    topP: 1,
    topK: -1,
    stop: [],
  };
  const results: GenerateResult[] = [];
  let warm: GenerateResult | undefined;
  try {
    // warm-up (untimed): session first-run costs, the image cache; with --warmup-tokens N ≥ new tokens it also meets
    // every KV length the timed runs meet
    warm = await rt.generate({ ...req, maxTokens: args.warmupTokens });
    const rows: Float32Array[] = [];
    const onLogits = (row: Float32Array) => void (rows.length < args.logitsSteps && rows.push(row.slice()));
    for (let i = 0; i < args.runs; i++) results.push(await rt.generate(req, i === 0 && args.logitsOut ? { onLogits } : {}));
    if (args.logitsOut) {
      const buf = Buffer.alloc(rows.reduce((s, r) => s + r.byteLength, 0));
      let o = 0;
      for (const r of rows) for (const x of r) o = buf.writeFloatLE(x, o);
      writeFileSync(args.logitsOut, buf);
    }
    // LOUPE_ORT_PROFILE (see qwenRuntime.ts): write each session's onnxruntime profile now, before disposal
    if (process.env.LOUPE_ORT_PROFILE) for (const s of Object.values(internals.model.sessions)) s.endProfiling?.();
  } finally {
    await rt.dispose();
  }
  const first = results[0]!;
  const prefill = results.map((r) => r.promptTokens / ((r.prefillMs ?? NaN) / 1000));
  const decode = results.map((r) => (r.completionTokens - 1) / ((r.decodeMs ?? NaN) / 1000));
  const decTokS = median(decode);
  const bytes = decoderBytes(args.modelDir, args.dtype);
  const boundTokS = args.bandwidthGBs && bytes ? (args.bandwidthGBs * 1e9) / bytes : undefined;
  const out = {
    engine: 'loupe QwenVLRuntime (transformers.js + onnxruntime-node)',
    model: args.modelDir,
    dtype: args.dtype,
    requested_device: args.device,
    device: rt.info.device,
    fallback_reason: rt.info.fallbackReason ?? null,
    // which decoder graph ran: 'fused' (decoder_model_merged_fused*.onnx, loupe convert --fused) or 'exported'
    decoder: rt.info.decoder ?? 'exported',
    // the untimed warm-up: its length and its own decode speed (the first run a user meets after load)
    warmup_tokens: args.warmupTokens,
    warmup_decode_tok_s: warm && warm.completionTokens > 1 ? r1((warm.completionTokens - 1) / ((warm.decodeMs ?? NaN) / 1000)) : null,
    node: process.version,
    onnxruntime_node: ortVersion() ?? null,
    host: `${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}`,
    load_s: Math.round(loadS * 100) / 100,
    prompt_tokens: first.promptTokens,
    new_tokens: first.completionTokens,
    runs: results.length,
    prefill_tok_s: r1(median(prefill)),
    decode_tok_s: r1(decTokS),
    prefill_tok_s_runs: prefill.map(r1),
    decode_tok_s_runs: decode.map(r1),
    decoder_weight_bytes: bytes ?? null,
    // bound = measured bandwidth / bytes one decode step reads (the decoder's weights; KV cache and activations aside)
    bandwidth_gbs: args.bandwidthGBs ?? null,
    bound_tok_s: boundTokS ? r1(boundTokS) : null,
    fraction_of_bound: boundTokS ? Math.round((1000 * decTokS) / boundTokS) / 1000 : null,
    // 'on': decode steps run the decoder session on reused KV buffers; 'off': transformers.js' model.forward
    kv_reuse: internals.kvReuse,
    greedy_tokens: first.tokens ?? [],
    greedy_tokens_equal_across_runs: results.every((r) => JSON.stringify(r.tokens) === JSON.stringify(first.tokens)),
  };
  const text = JSON.stringify(out, null, 1);
  process.stdout.write(`${text}\n`);
  if (args.json) writeFileSync(args.json, `${text}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`engine-bench: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});

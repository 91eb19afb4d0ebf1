/**
 * The fused decoder (`loupe convert --fused`, native/engine/fusedGraph.ts) on the committed tiny random Qwen2.5-VL,
 * run by the real onnxruntime-node CPU provider: its logits and present KV equal the exported decoder's within float32
 * rounding for a prefill with mRoPE image positions and 32 decode steps, also for a multi-token chunk after a past
 * (a reused prefix) and with every position's logits kept; through QwenVLRuntime it gives PyTorch's greedy tokens
 * for one and three images; `auto` keeps the exported decoder on the CPU; the graph rewriter refuses what it does not
 * know (a quantized decoder, a config that does not match, a decoder fused already) with a reason, and so does
 * `loupe convert --fused` (exit 1, the folder untouched).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { FUSED_ATTENTIONS, FUSED_DECODER, addFusedDecoders, fuseDecoder, textConfig } from '../../../native/engine/fusedGraph';
import { QwenVLRuntime } from '../../../native/engine/qwenRuntime';
import { EngineError } from '../../../app/engines/errors';
import { TINY_DIR, greedy, parity } from './parityFixture';

const LOUPE_TINY = fileURLToPath(new URL('../../../models/loupe-tiny/model', import.meta.url));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-fused-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const config = JSON.parse(readFileSync(path.join(TINY_DIR, 'config.json'), 'utf8')) as Record<string, unknown>;
const cfg = textConfig(config);
const exportedFile = path.join(TINY_DIR, 'onnx', 'decoder_model_merged.onnx');

type Feeds = Record<string, ort.Tensor>;

/** A deterministic stream of numbers in [-1, 1). */
function rng(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
}

function feeds(emb: Float32Array, S: number, P: number, pos: number[][], keep: number, past: Feeds): Feeds {
  return {
    inputs_embeds: new ort.Tensor('float32', emb, [1, S, cfg.hidden]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(P + S).fill(1n), [1, P + S]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from(pos.flat().map(BigInt)), [3, 1, S]),
    num_logits_to_keep: new ort.Tensor('int64', [BigInt(keep)], []),
    ...past,
  };
}
const emptyPast = (): Feeds =>
  Object.fromEntries(
    Array.from({ length: cfg.layers }, (_, i) => ['key', 'value'].map((t) => [`past_key_values.${i}.${t}`, new ort.Tensor('float32', new Float32Array(0), [1, cfg.kvHeads, 0, cfg.headDim])])).flat(),
  ) as Feeds;
const nextPast = (r: ort.InferenceSession.OnnxValueMapType): Feeds =>
  Object.fromEntries(Object.entries(r).filter(([k]) => k.startsWith('present')).map(([k, v]) => [k.replace('present', 'past_key_values'), v as ort.Tensor]));
const maxDiff = (a: Float32Array, b: Float32Array) => {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
};
const argmaxLast = (x: Float32Array, V: number) => {
  let m = 0;
  for (let i = 1; i < V; i++) if (x[x.length - V + i]! > x[x.length - V + m]!) m = i;
  return m;
};

/**
 * Both decoders side by side: a 12-token prefill whose middle 6 tokens carry image positions (t fixed, h/w a 2×3
 * grid), then `steps` single tokens, or first a `chunk`-token step on the past; returns the largest difference over
 * logits and present KV, and how many steps' argmax agreed.
 */
async function compare(exported: ort.InferenceSession, fused: ort.InferenceSession, opts: { steps: number; keep: number; chunk?: number }) {
  const r = rng(7);
  const S0 = 12;
  const pos = Array.from({ length: S0 }, (_, i) => (i < 3 ? [i, i, i] : i < 9 ? [3, 3 + Math.floor((i - 3) / 3), 3 + ((i - 3) % 3)] : [i - 3, i - 3, i - 3]));
  let pp = [0, 1, 2].map((c) => pos.map((p) => p[c]!));
  let emb = Float32Array.from({ length: S0 * cfg.hidden }, r);
  let s = S0;
  let P = 0;
  let next = 9;
  let pa = emptyPast();
  let pb = emptyPast();
  let worst = 0;
  let agree = 0;
  let steps = 0;
  for (let step = 0; step <= opts.steps; step++) {
    const ra = await exported.run(feeds(emb, s, P, pp, opts.keep, pa));
    const rb = await fused.run(feeds(emb, s, P, pp, opts.keep, pb));
    const la = ra['logits']!.data as Float32Array;
    const lb = rb['logits']!.data as Float32Array;
    expect(rb['logits']!.dims).toEqual(ra['logits']!.dims);
    worst = Math.max(worst, maxDiff(la, lb));
    for (const k of Object.keys(ra)) if (k.startsWith('present')) worst = Math.max(worst, maxDiff(ra[k]!.data as Float32Array, rb[k]!.data as Float32Array));
    if (argmaxLast(la, cfg.vocab) === argmaxLast(lb, cfg.vocab)) agree++;
    steps++;
    pa = nextPast(ra);
    pb = nextPast(rb);
    P += s;
    s = step === 0 && opts.chunk ? opts.chunk : 1;
    emb = Float32Array.from({ length: s * cfg.hidden }, r);
    pp = [0, 1, 2].map(() => Array.from({ length: s }, (_, j) => next + j));
    next += s;
  }
  return { worst, agree, steps };
}

describe.each(FUSED_ATTENTIONS.map((a) => [a]))('fused decoder graph, attention %s (tiny random Qwen2.5-VL, CPU)', (attention) => {
  let exported: ort.InferenceSession;
  let fused: ort.InferenceSession;
  let nodes: { before: number; after: number };
  beforeAll(async () => {
    const { bytes, info } = fuseDecoder(readFileSync(exportedFile), cfg, attention);
    expect(info.attention).toBe(attention);
    nodes = { before: info.nodesBefore, after: info.nodesAfter };
    exported = await ort.InferenceSession.create(exportedFile);
    fused = await ort.InferenceSession.create(bytes);
  });

  it('has the exported decoder\'s inputs and outputs, with far fewer nodes', () => {
    expect(fused.inputNames).toEqual(exported.inputNames);
    expect([...fused.outputNames].sort()).toEqual([...exported.outputNames].sort());
    expect(nodes.after).toBeLessThan(nodes.before / (attention === 'ops' ? 2 : 5));
  });

  it('prefill with image positions + 32 decode steps: logits and KV within float32 rounding, same argmax every step', async () => {
    const r = await compare(exported, fused, { steps: 32, keep: 1 });
    expect(r.steps).toBe(33);
    expect(r.agree).toBe(33);
    expect(r.worst).toBeLessThan(1e-4);
  });

  it('a 3-token chunk after a past (a reused prefix), every position\'s logits kept', async () => {
    const r = await compare(exported, fused, { steps: 4, keep: 0, chunk: 3 });
    expect(r.agree).toBe(r.steps);
    expect(r.worst).toBeLessThan(1e-4);
  });
});

describe('fused decoder through the runtime', () => {
  let dir: string;
  beforeAll(async () => {
    dir = path.join(tmp, 'tiny');
    cpSync(TINY_DIR, dir, { recursive: true });
    const wrote = await addFusedDecoders(dir);
    expect(wrote.map((w) => w.file)).toEqual([`onnx/${FUSED_DECODER}.onnx`]);
    expect(wrote[0]!.externalData).toBe(false);
  });

  it.each(['ops', 'gqa'] as const)('gives PyTorch\'s greedy tokens for one and three images (attention %s)', async (attention) => {
    if (attention !== 'ops') await addFusedDecoders(dir, attention);
    const rt = await QwenVLRuntime.load({ modelDir: dir, decoder: 'fused' });
    try {
      expect(rt.info.decoder).toBe('fused');
      for (const c of Object.values(parity.cases)) {
        const r = await rt.generate(greedy(c));
        expect(r.tokens).toEqual(c.generated);
      }
    } finally {
      await rt.dispose();
    }
  });

  it('auto keeps the exported decoder on the CPU; fused without the file says how to make it', async () => {
    const rt = await QwenVLRuntime.load({ modelDir: dir });
    try {
      expect(rt.info.decoder).toBeUndefined();
    } finally {
      await rt.dispose();
    }
    const err = await QwenVLRuntime.load({ modelDir: TINY_DIR, decoder: 'fused' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).message).toMatch(/no fused decoder \(onnx\/decoder_model_merged_fused\.onnx\); add one with `loupe convert --fused /);
  });
});

describe('fused decoder graph refuses what it does not know', () => {
  it('a quantized decoder (loupe-tiny ships q8 only)', async () => {
    const q8 = readFileSync(path.join(LOUPE_TINY, 'onnx', 'decoder_model_merged_quantized.onnx'));
    const tcfg = textConfig(JSON.parse(readFileSync(path.join(LOUPE_TINY, 'config.json'), 'utf8')) as Record<string, unknown>);
    expect(() => fuseDecoder(q8, tcfg)).toThrow(/quantized decoder/);
    await expect(addFusedDecoders(LOUPE_TINY)).rejects.toThrow(/no float32 or float16 decoder/);
  });

  it('a config whose shapes do not match the weights, a wrong layer count, a fused decoder, bytes that are not ONNX', () => {
    const bytes = readFileSync(exportedFile);
    expect(() => fuseDecoder(bytes, { ...cfg, intermediate: cfg.intermediate * 2 })).toThrow(/gate_proj: weight .* is 64×128, expected 64×256 from config\.json/);
    expect(() => fuseDecoder(bytes, { ...cfg, layers: 3 })).toThrow(/no past_key_values\.2\.key input for 3 layers/);
    const fused = fuseDecoder(bytes, cfg).bytes;
    expect(() => fuseDecoder(fused, cfg)).toThrow(/already fused/);
    expect(() => fuseDecoder(Buffer.from('not an onnx file at all'), cfg)).toThrow();
    expect(() => textConfig({ text_config: { ...(config['text_config'] as object), rope_parameters: { rope_type: 'yarn', mrope_section: [2, 3, 3], rope_theta: 1e6 } } })).toThrow(/rope type 'yarn'/);
  });
});

describe('loupe convert --fused', () => {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const convert = (dir: string, ...more: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'main/cli/run.ts'), 'convert', '--fused', ...more, dir], { cwd: root, encoding: 'utf8' });

  it('writes the fused decoder into a model folder and says what it wrote', () => {
    const dir = path.join(tmp, 'cli-tiny');
    cpSync(TINY_DIR, dir, { recursive: true });
    const r = convert(dir);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/wrote onnx\/decoder_model_merged_fused\.onnx \([\d.]+ MiB, float32, attention ops, \d+ nodes instead of \d+\)/);
    expect(existsSync(path.join(dir, 'onnx', `${FUSED_DECODER}.onnx`))).toBe(true);
    const gqa = convert(dir, '--fused-attention', 'gqa');
    expect(gqa.status).toBe(0);
    expect(gqa.stdout).toMatch(/attention gqa, \d+ nodes/);
    const bad = convert(dir, '--fused-attention', 'flash');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--fused-attention: expected gqa, ops, mha, got "flash"/);
  });

  it('refuses a q8-only folder and a folder that is not a model, exit 1, nothing written', () => {
    const dir = path.join(tmp, 'cli-loupe-tiny');
    for (const f of ['config.json', 'onnx/decoder_model_merged_quantized.onnx']) cpSync(path.join(LOUPE_TINY, f), path.join(dir, f), { recursive: true });
    const r = convert(dir);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/convert --fused: .*no float32 or float16 decoder/);
    expect(existsSync(path.join(dir, 'onnx', `${FUSED_DECODER}_quantized.onnx`))).toBe(false);
    const none = convert(path.join(tmp, 'no-such-folder'));
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/convert --fused: .*cannot read config\.json/);
  });
});

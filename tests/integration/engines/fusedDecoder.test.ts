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
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { FUSED_ATTENTIONS, FUSED_DECODER, KV_BUCKET, addFusedDecoders, fuseDecoder, textConfig } from '../../../native/engine/fusedGraph';
import { fields, text } from '../../../native/engine/onnxProto';
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

  it('packs q/k/v into one MatMul per layer, and onnxruntime folds the packing Concats into initializers at load', async () => {
    const { bytes } = fuseDecoder(readFileSync(exportedFile), cfg, attention);
    const names = (b: Uint8Array) => {
      const g = fields(b).find((f) => f.no === 7)!;
      const gf = fields(b, g.body![0], g.body![1]);
      const nodeOps = gf.filter((f) => f.no === 1).map((n) => fields(b, n.body![0], n.body![1])).map((nf) => ({ name: text(b, nf.find((x) => x.no === 3)!), op: text(b, nf.find((x) => x.no === 4)!) }));
      const inits = gf.filter((f) => f.no === 5).map((f) => text(b, fields(b, f.body![0], f.body![1]).find((x) => x.no === 8)!));
      return { nodeOps, inits };
    };
    const before = names(bytes);
    expect(before.nodeOps.filter((n) => n.op === 'Split')).toHaveLength(cfg.layers);
    expect(before.nodeOps.filter((n) => n.name.startsWith('fused/pack/'))).toHaveLength(2 * cfg.layers); // weights, biases
    const opt = path.join(tmp, `folded-${attention}.onnx`);
    await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all', optimizedModelFilePath: opt } as ort.InferenceSession.SessionOptions);
    const after = names(readFileSync(opt));
    expect(after.nodeOps.filter((n) => n.name.startsWith('fused/pack/'))).toEqual([]);
    expect(after.inits).toContain('fused/l0/qkv_w');
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
    expect(r.stdout).toMatch(/wrote onnx\/decoder_model_merged_fused\.onnx \([\d.]+ MiB, float32, attention ops, with the decode loop \(\d+ nodes a step\), \d+ nodes instead of \d+\)/);
    expect(existsSync(path.join(dir, 'onnx', `${FUSED_DECODER}.onnx`))).toBe(true);
    const gqa = convert(dir, '--fused-attention', 'gqa');
    expect(gqa.status).toBe(0);
    expect(gqa.stdout).toMatch(/attention gqa, with the decode loop \(\d+ nodes a step\), \d+ nodes/);
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

/**
 * The decode loop (`loupe convert --fused`, unless --no-decode-loop): the same fused decoder, plus a `steps` input after which an
 * ONNX Loop feeds its own greedy tokens back on the device. Its tokens and KV must be exactly the plain fused
 * decoder's, step by step, and the runtime's turns (greedy, stop strings, a reused prefix, sampling) the same.
 */
describe('fused decoder with the decode loop', () => {
  const embedFile = path.join(TINY_DIR, 'onnx', 'embed_tokens.onnx');
  let embed: ort.InferenceSession;
  beforeAll(async () => {
    embed = await ort.InferenceSession.create(embedFile);
  });
  const embedIds = async (ids: number[]) => (await embed.run({ input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]) }))['inputs_embeds'] as ort.Tensor;
  const step = (emb: ort.Tensor, n: number, pos: number[][], past: Feeds): Feeds => ({
    inputs_embeds: emb,
    attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from(pos.flat().map(BigInt)), [3, 1, pos[0]!.length]),
    num_logits_to_keep: new ort.Tensor('int64', [1n], []),
    ...past,
  });
  // a 12-token prompt whose middle 6 tokens carry image positions (t fixed, h/w a 2×3 grid); the last position is 8
  const ids = [1, 5, 9, 100, 200, 300, 17, 18, 19, 20, 400, 33];
  const pos = ids.map((_, i) => (i < 3 ? [i, i, i] : i < 9 ? [3, 3 + Math.floor((i - 3) / 3), 3 + ((i - 3) % 3)] : [i - 3, i - 3, i - 3]));
  const pos3 = [0, 1, 2].map((c) => pos.map((p) => p[c]!));

  it.each(FUSED_ATTENTIONS.map((a) => [a]))('attention %s, steps = 0, 1, 7, 20, 60 after a prefill: the plain decoder\'s greedy tokens, logits and KV, bit for bit (60: the gqa loop\'s buffer past one KV_BUCKET)', async (attention) => {
    const bytes = readFileSync(exportedFile);
    const plainGraph = fuseDecoder(bytes, cfg, attention);
    const plain = await ort.InferenceSession.create(plainGraph.bytes);
    const { bytes: lb, info } = fuseDecoder(bytes, cfg, attention, { decodeLoop: readFileSync(embedFile) });
    expect(info.decodeLoop).toBe(true);
    // a step of the loop runs fewer nodes than a step of the plain graph (ops: no grouping transposes, no mask)
    expect(info.loopStepNodes).toBeLessThan(plainGraph.info.nodesAfter + 8);
    if (attention === 'ops') expect(info.loopStepNodes).toBeLessThan(plainGraph.info.nodesAfter * 0.85);
    // gqa: one GroupQueryAttention on the packed q/k/v a layer, rotary inside it from a table made once a run (no
    // Split, no RotaryEmbedding, no per-step cos/sin): 38 nodes for the tiny model's 2 layers, 54 before
    if (attention === 'gqa') expect(info.loopStepNodes).toBeLessThan(plainGraph.info.nodesAfter * 0.75);
    const looped = await ort.InferenceSession.create(lb);
    // the plain fused decoder, step by step: greedy tokens and the KV after each step
    let r = await plain.run(step(await embedIds(ids), ids.length, pos3, emptyPast()));
    const logits0 = r['logits']!.data as Float32Array;
    const tokens: number[] = [];
    const kvAfter: Feeds[] = [];
    let past = emptyPast();
    for (let s = 0; s <= 60; s++) {
      const tok = argmaxLast(r['logits']!.data as Float32Array, cfg.vocab);
      tokens.push(tok);
      past = nextPast(r);
      kvAfter.push(past);
      const p = 9 + s; // the text position after the prompt's last (8)
      r = await plain.run(step(await embedIds([tok]), ids.length + s + 1, [[p], [p], [p]], past));
    }
    for (const K of [0, 1, 7, 20, 60]) {
      const o = await looped.run({ ...step(await embedIds(ids), ids.length, pos3, emptyPast()), steps: new ort.Tensor('int64', [BigInt(K)], []) });
      expect(Array.from(o['tokens']!.data as BigInt64Array, Number)).toEqual(tokens.slice(0, K + 1));
      expect(Buffer.from((o['logits']!.data as Float32Array).buffer).equals(Buffer.from(logits0.buffer))).toBe(true);
      // the present KV covers the prompt and the K tokens fed; the plain decoder's KV after the same tokens
      for (const [k, v] of Object.entries(kvAfter[K]!)) {
        const got = o[k.replace('past_key_values', 'present')] as ort.Tensor;
        expect(got.dims).toEqual(v.dims);
        expect(Buffer.from((got.data as Float32Array).buffer).equals(Buffer.from((v.data as Float32Array).buffer))).toBe(true);
      }
    }
    // a negative `steps` runs no step and keeps the whole KV, as 0 does
    const neg = await looped.run({ ...step(await embedIds(ids), ids.length, pos3, emptyPast()), steps: new ort.Tensor('int64', [-3n], []) });
    expect(Array.from(neg['tokens']!.data as BigInt64Array, Number)).toEqual(tokens.slice(0, 1));
    for (const [k, v] of Object.entries(kvAfter[0]!)) {
      const got = neg[k.replace('past_key_values', 'present')] as ort.Tensor;
      expect(got.dims).toEqual(v.dims);
      expect(Buffer.from((got.data as Float32Array).buffer).equals(Buffer.from((v.data as Float32Array).buffer))).toBe(true);
    }
  });

  it('gqa: every step of a run gives GroupQueryAttention the same shapes (the KV padded once a run to a multiple of KV_BUCKET), read from onnxruntime\'s profile', async () => {
    // Growing shapes cost the CUDA provider about 33 ms per new KV length (models/reports/GPU-7B.md); here, on the CPU,
    // the profile shows what each GroupQueryAttention node was given: the past KV the length the run ends at.
    const { bytes: lb } = fuseDecoder(readFileSync(exportedFile), cfg, 'gqa', { decodeLoop: readFileSync(embedFile) });
    const prefix = path.join(tmp, 'gqa-shapes');
    const looped = await ort.InferenceSession.create(lb, { enableProfiling: true, profileFilePrefix: prefix });
    const K = 7;
    await looped.run({ ...step(await embedIds(ids), ids.length, pos3, emptyPast()), steps: new ort.Tensor('int64', [BigInt(K)], []) });
    (looped as unknown as { endProfiling(): void }).endProfiling();
    const file = readdirSync(tmp).filter((f) => f.startsWith('gqa-shapes') && f.endsWith('.json')).map((f) => path.join(tmp, f))[0]!;
    const events = JSON.parse(readFileSync(file, 'utf8')) as Array<{ cat?: string; name: string; args?: { op_name?: string; input_type_shape?: Array<Record<string, number[]>> } }>;
    const gqa = events.filter((e) => e.cat === 'Node' && e.name.startsWith('loop/') && e.name.endsWith('_kernel_time') && e.args?.op_name === 'GroupQueryAttention');
    expect(gqa.length).toBe(K * cfg.layers);
    // the past key (the first 4-d input; the profile leaves out the empty key and value inputs of the packed q/k/v):
    // [1, kv heads, prompt + K rounded up to KV_BUCKET, head dim] at every step
    const pastDims = new Set(gqa.map((e) => JSON.stringify(e.args!.input_type_shape!.map((x) => Object.values(x)[0]!).find((d) => d.length === 4))));
    expect([...pastDims]).toEqual([JSON.stringify([1, cfg.kvHeads, Math.ceil((ids.length + K) / KV_BUCKET) * KV_BUCKET, cfg.headDim])]);
  });

  it('refuses a quantized embedding table and a table that does not match the config', () => {
    const bytes = readFileSync(exportedFile);
    expect(() => fuseDecoder(bytes, cfg, 'ops', { decodeLoop: readFileSync(path.join(TINY_DIR, 'onnx', 'embed_tokens_quantized.onnx')) })).toThrow(/embed_tokens: .*(quantized|data type)/);
    expect(() => fuseDecoder(bytes, { ...cfg, vocab: cfg.vocab + 1 }, 'ops', { decodeLoop: readFileSync(embedFile) })).toThrow(/expected 820×64|lm_head/);
    expect(() => fuseDecoder(bytes, cfg, 'ops', { decodeLoop: Buffer.from('not onnx') })).toThrow();
  });

  describe('through the runtime', () => {
    let loopDir: string;
    let plainDir: string;
    beforeAll(async () => {
      loopDir = path.join(tmp, 'tiny-loop');
      plainDir = path.join(tmp, 'tiny-plain');
      cpSync(TINY_DIR, loopDir, { recursive: true });
      cpSync(TINY_DIR, plainDir, { recursive: true });
      const wrote = await addFusedDecoders(loopDir, 'ops', true);
      expect(wrote.map((w) => [w.file, w.decodeLoop])).toEqual([[`onnx/${FUSED_DECODER}.onnx`, true]]);
      await addFusedDecoders(plainDir);
    });

    it('gives PyTorch\'s greedy tokens for one and three images, and says it runs the loop', async () => {
      const rt = await QwenVLRuntime.load({ modelDir: loopDir, decoder: 'fused' });
      try {
        expect(rt.info.decoder).toBe('fused');
        expect(rt.info.decodeLoop).toBe(true);
        for (const c of Object.values(parity.cases)) expect((await rt.generate(greedy(c))).tokens).toEqual(c.generated);
      } finally {
        await rt.dispose();
      }
    });

    it('on GroupQueryAttention (rotary inside it, from a table made once a run): PyTorch\'s greedy tokens, and a reused prefix\'s turn as the plain decoder gives it', async () => {
      const gqaDir = path.join(tmp, 'tiny-loop-gqa');
      cpSync(TINY_DIR, gqaDir, { recursive: true });
      await addFusedDecoders(gqaDir, 'gqa', true);
      const rt = await QwenVLRuntime.load({ modelDir: gqaDir, decoder: 'fused' });
      const plainRt = await QwenVLRuntime.load({ modelDir: plainDir, decoder: 'fused' });
      try {
        expect(rt.info.decodeLoop).toBe(true);
        for (const c of Object.values(parity.cases)) expect((await rt.generate(greedy(c))).tokens).toEqual(c.generated);
        // a second turn over the first one's KV: its text positions trail its KV indices by the images' saving
        const c = parity.cases.multi_image;
        const first = await plainRt.generate(greedy(c, { maxTokens: 30 }));
        const again = greedy(c, { maxTokens: 40, messages: [...greedy(c).messages, { role: 'assistant', content: [{ type: 'text', text: first.text.slice(0, 20) }] }, { role: 'user', content: [{ type: 'text', text: 'and then?' }] }] });
        await rt.generate(greedy(c, { maxTokens: 30 }));
        const a = await plainRt.generate(again);
        const b = await rt.generate(again);
        expect(b.cachedTokens).toBeGreaterThan(0);
        expect(b.tokens).toEqual(a.tokens);
      } finally {
        await rt.dispose();
        await plainRt.dispose();
      }
    });

    it('the plain decoder\'s turns: stop strings mid-chunk, a reused prefix, a longer turn, sampling, a tie the device breaks otherwise', async () => {
      const c = parity.cases.multi_image;
      const plainRt = await QwenVLRuntime.load({ modelDir: plainDir, decoder: 'fused' });
      const loopRt = await QwenVLRuntime.load({ modelDir: loopDir, decoder: 'fused' });
      try {
        expect(plainRt.info.decodeLoop).toBeUndefined();
        const first = await plainRt.generate(greedy(c, { maxTokens: 60 }));
        expect((await loopRt.generate(greedy(c, { maxTokens: 60 }))).tokens).toEqual(first.tokens);
        const text = first.text;
        // a stop string that ends the turn inside the loop's first chunk (8 tokens ahead)
        const stopAt = text.slice(3, 6);
        const requests = [
          greedy(c, { maxTokens: 60 }),
          greedy(c, { maxTokens: 60, stop: [stopAt] }),
          // the same conversation with the answer and another question: the prefix (and its KV) is reused
          greedy(c, { maxTokens: 40, messages: [...greedy(c).messages, { role: 'assistant', content: [{ type: 'text', text: text.slice(0, 20) }] }, { role: 'user', content: [{ type: 'text', text: 'and then?' }] }] }),
          greedy(c, { maxTokens: 100 }),
          greedy(c, { maxTokens: 30, temperature: 0.8, topK: 20, seed: 7 }),
        ];
        for (const req of requests) {
          const a = await plainRt.generate(req);
          const b = await loopRt.generate(req);
          expect(b.tokens).toEqual(a.tokens);
          expect(b.text).toBe(a.text);
          expect(b.finishReason).toBe(a.finishReason);
          expect(b.cachedTokens).toBe(a.cachedTokens);
        }
        // the device's argmax picks another of tied logits: the runtime keeps its own token and steps on exactly
        const session = (loopRt as unknown as { loopSession: ort.InferenceSession }).loopSession;
        const run = session.run.bind(session);
        let tampered = 0;
        (session as unknown as { run: unknown }).run = async (feeds: ort.InferenceSession.FeedsType, ...rest: unknown[]) => {
          const out = await (run as (...a: unknown[]) => Promise<ort.InferenceSession.ReturnType>)(feeds, ...rest);
          // the second run with steps (transformers.js' own forward passes feed steps = 0)
          if (Number((feeds['steps'] as ort.Tensor).data[0]) > 0 && tampered++ === 1) ((out['tokens'] as ort.Tensor).data as BigInt64Array)[0] = 1n;
          return out;
        };
        const req = greedy(c, { maxTokens: 50 });
        const b = await loopRt.generate(req);
        expect(tampered).toBe(2);
        expect(b.tokens).toEqual((await plainRt.generate(req)).tokens);
        expect(b.tokens).toEqual(first.tokens!.slice(0, 50));
      } finally {
        await plainRt.dispose();
        await loopRt.dispose();
      }
    });
  });

  it('loupe convert --fused writes it by default, --no-decode-loop without; --no-decode-loop alone is refused', () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const dir = path.join(tmp, 'cli-loop');
    cpSync(TINY_DIR, dir, { recursive: true });
    const cli = (...a: string[]) => spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'main/cli/run.ts'), 'convert', ...a, dir], { cwd: root, encoding: 'utf8' });
    const r = cli('--fused');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/wrote onnx\/decoder_model_merged_fused\.onnx \([\d.]+ MiB, float32, attention ops, with the decode loop \(\d+ nodes a step\), \d+ nodes/);
    const plainCli = cli('--fused', '--no-decode-loop');
    expect(plainCli.status).toBe(0);
    expect(plainCli.stdout).toMatch(/attention ops, \d+ nodes instead/);
    // a truncated embed_tokens file: exit 1, the file named, no fused decoder left behind
    const cut = path.join(tmp, 'cli-loop-cut');
    cpSync(TINY_DIR, cut, { recursive: true });
    const embedCopy = path.join(cut, 'onnx', 'embed_tokens.onnx');
    writeFileSync(embedCopy, readFileSync(embedCopy).subarray(0, 5000));
    const truncated = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'main/cli/run.ts'), 'convert', '--fused', cut], { cwd: root, encoding: 'utf8' });
    expect(truncated.status).toBe(1);
    expect(truncated.stderr).toMatch(/convert --fused: embed_tokens\.onnx: not a whole ONNX model \(.*\); export it again/);
    expect(existsSync(path.join(cut, 'onnx', `${FUSED_DECODER}.onnx`))).toBe(false);
    const alone = cli('--no-decode-loop');
    expect(alone.status).toBe(2);
    expect(alone.stderr).toMatch(/--no-decode-loop: it is part of the fused decoder; pass --fused too/);
  });
});

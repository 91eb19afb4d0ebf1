/**
 * Batched decode steps (native/engine/rowQuant.ts, decodeBatch.ts, the runtime's scheduler) give every request exactly
 * what it gets alone: the rewritten q8 decoder against loupe-tiny's exported one (one row: the same bits; rows of a
 * batch: each row's solo bits, over steps), then whole requests through the runtime (tokens, text and every step's
 * logits), with a request cancelled mid-batch and one that fails, and through serve-model over HTTP with a client
 * that goes away mid-stream. Real ONNX sessions, real images, real HTTP on loopback.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rewriteRowQuantized } from '../../../native/engine/rowQuant';
import { capacityFor, DecodeBatcher, noise, same as bitsEqual, type SoloKv } from '../../../native/engine/decodeBatch';
import { QwenVLRuntime } from '../../../native/engine/qwenRuntime';
import type { WireGenerateRequest } from '../../../app/engines/local/protocol';
import type { GenerateResult } from '../../../app/engines/types';
import { createEngineManager } from '../../../main/core/wiring';
import { serveModel, type ServedModel } from '../../../app/engines/serve/serveModel';
import type { EngineManager } from '../../../app/engines/manager';
import { noiseBytes } from '../../support/noise';
import { TINY_DIR } from './parityFixture';

const LOUPE_TINY = fileURLToPath(new URL('../../../models/loupe-tiny/model', import.meta.url));
const DECODER = path.join(LOUPE_TINY, 'onnx', 'decoder_model_merged_quantized.onnx');
const DIMS = { layers: 5, kvHeads: 2, headDim: 64, hidden: 384, vocab: 819 };


describe('the row-quantized decoder', () => {
  let exported: ort.InferenceSession;
  let batched: ort.InferenceSession;
  const names = Array.from({ length: DIMS.layers }, (_, l) => [`past_key_values.${l}.key`, `past_key_values.${l}.value`]).flat();

  beforeAll(async () => {
    exported = await ort.InferenceSession.create(DECODER, { intraOpNumThreads: 1 });
    batched = await ort.InferenceSession.create(rewriteRowQuantized(new Uint8Array(readFileSync(DECODER)))!, { intraOpNumThreads: 1 });
  });
  afterAll(async () => {
    await exported?.release();
    await batched?.release();
  });

  /** One solo step of the exported decoder. */
  async function solo(past: SoloKv, emb: Float32Array, pos: number): Promise<{ logits: Float32Array; kv: SoloKv }> {
    const n = past[names[0]!]!.dims[2]!;
    const feeds: Record<string, ort.Tensor> = {
      inputs_embeds: new ort.Tensor('float32', emb, [1, 1, DIMS.hidden]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(n + 1).fill(1n), [1, n + 1]),
      position_ids: new ort.Tensor('int64', BigInt64Array.from([pos, pos, pos].map(BigInt)), [3, 1, 1]),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.from([1n]), []),
    };
    for (const k of names) feeds[k] = new ort.Tensor('float32', past[k]!.data, [...past[k]!.dims]);
    const out = await exported.run(feeds);
    const kv: SoloKv = {};
    for (const k of names) kv[k] = { data: out[k.replace('past_key_values', 'present')]!.data as Float32Array, dims: out[k.replace('past_key_values', 'present')]!.dims };
    return { logits: out['logits']!.data as Float32Array, kv };
  }

  /** Each row alone over `steps` steps from its own random KV: that KV, every step's logits and the KV at the end. */
  async function alone(lens: number[], steps: number, kvSeed: (r: number, i: number) => number, embSeed: (s: number, r: number) => number) {
    const start = lens.map((n, r) => Object.fromEntries(names.map((k, i) => [k, { data: noise(DIMS.kvHeads * n * DIMS.headDim, kvSeed(r, i)), dims: [1, DIMS.kvHeads, n, DIMS.headDim] }])) as SoloKv);
    const want: Float32Array[][] = lens.map(() => []);
    const wantKv: SoloKv[] = [];
    for (let r = 0; r < lens.length; r++) {
      let past = start[r]!;
      for (let s = 0; s < steps; s++) {
        const o = await solo(past, noise(DIMS.hidden, embSeed(s, r)), lens[r]! + s);
        want[r]!.push(o.logits);
        past = o.kv;
      }
      wantKv.push(past);
    }
    return { start, want, wantKv };
  }

  /** The same rows through one DecodeBatcher, step after step: every row's logits must be its solo bits. */
  async function together(batcher: DecodeBatcher, keys: object[], lens: number[], steps: number, start: SoloKv[], want: Float32Array[][], embSeed: (s: number, r: number) => number) {
    for (let s = 0; s < steps; s++) {
      const emb = new Float32Array(lens.length * DIMS.hidden);
      lens.forEach((_, r) => emb.set(noise(DIMS.hidden, embSeed(s, r)), r * DIMS.hidden));
      const logits = await batcher.step(lens.map((n, r) => ({ key: keys[r]!, kvLen: n + s, pos: n + s, ...(s === 0 ? { past: start[r]! } : {}) })), emb);
      lens.forEach((_, r) => expect(bitsEqual(logits.subarray(r * DIMS.vocab, (r + 1) * DIMS.vocab), want[r]![s]!), `row ${r} (${lens[r]} tokens), step ${s}`).toBe(true));
    }
  }

  it('leaves alone what it cannot batch: an fp32 decoder, a vision encoder, bytes that are no model', () => {
    expect(rewriteRowQuantized(new Uint8Array(readFileSync(path.join(TINY_DIR, 'onnx', 'decoder_model_merged.onnx'))))).toBeNull();
    expect(rewriteRowQuantized(new Uint8Array(readFileSync(path.join(LOUPE_TINY, 'onnx', 'vision_encoder_quantized.onnx'))))).toBeNull();
    const dec = new Uint8Array(readFileSync(DECODER));
    expect(rewriteRowQuantized(dec.subarray(0, dec.length >> 1))).toBeNull();
    expect(rewriteRowQuantized(new Uint8Array(noiseBytes(4096, 3)))).toBeNull();
    expect(rewriteRowQuantized(new Uint8Array(0))).toBeNull();
  });

  it('gives each row of a batch, step after step, the bits of that row alone (logits and KV), and one row the bits of the exported decoder', async () => {
    // lengths on both sides of the kernels' block sizes; a row of 1 token; the batch's rows differ by up to 599
    const lens = [1, 63, 64, 257, 600];
    const steps = 4;
    const { start, want, wantKv } = await alone(lens, steps, (r, i) => 11 + 17 * r + i, (s, r) => 100 * s + r);
    const batcher = new DecodeBatcher(batched, DIMS, 8);
    const keys = lens.map(() => ({}));
    await together(batcher, keys, lens, steps, start, want, (s, r) => 100 * s + r);
    lens.forEach((_, r) => {
      const kv = batcher.take(keys[r]!);
      for (const k of names) expect(bitsEqual(kv[k]!.data, wantKv[r]![k]!.data), `row ${r} ${k}`).toBe(true);
    });
    // a row leaves and another joins: the batch is rebuilt and the rows still get their own bits
    const next = await batcher.step(
      [
        { key: keys[3]!, kvLen: lens[3]! + steps, pos: lens[3]! + steps },
        { key: keys[1]!, kvLen: lens[1]! + steps, pos: lens[1]! + steps },
      ],
      Float32Array.from([...noise(DIMS.hidden, 7), ...noise(DIMS.hidden, 8)]),
    );
    const alone3 = await solo(wantKv[3]!, noise(DIMS.hidden, 7), lens[3]! + steps);
    const alone1 = await solo(wantKv[1]!, noise(DIMS.hidden, 8), lens[1]! + steps);
    expect(bitsEqual(next.subarray(0, DIMS.vocab), alone3.logits)).toBe(true);
    expect(bitsEqual(next.subarray(DIMS.vocab, 2 * DIMS.vocab), alone1.logits)).toBe(true);
    // one row alone through the rewritten graph: the exported decoder's bits
    batcher.clear();
    const one = await batcher.step([{ key: {}, kvLen: 300, pos: 300, past: Object.fromEntries(names.map((k, i) => [k, { data: noise(DIMS.kvHeads * 300 * DIMS.headDim, i), dims: [1, 2, 300, 64] }])) }], noise(DIMS.hidden, 5));
    const ref = await solo(Object.fromEntries(names.map((k, i) => [k, { data: noise(DIMS.kvHeads * 300 * DIMS.headDim, i), dims: [1, 2, 300, 64] }])), noise(DIMS.hidden, 5), 300);
    expect(bitsEqual(one.subarray(0, DIMS.vocab), ref.logits)).toBe(true);
  }, 60_000);

  it('keeps every row exact while the batch outgrows its buffers (rows of 30 and 5 tokens, 40 steps: the room grows past 64)', async () => {
    const lens = [30, 5];
    const { start, want } = await alone(lens, 40, (r, i) => 5 + 13 * r + i, (s, r) => 7 * s + r);
    expect(capacityFor(30)).toBe(64);
    await together(new DecodeBatcher(batched, DIMS, 8), lens.map(() => ({})), lens, 40, start, want, (s, r) => 7 * s + r);
  }, 60_000);

  it('refuses a row whose KV is not what the step says, and a batch of the wrong width', async () => {
    const batcher = new DecodeBatcher(batched, DIMS, 8);
    const past = Object.fromEntries(names.map((k) => [k, { data: new Float32Array(2 * 10 * 64), dims: [1, 2, 10, 64] }])) as SoloKv;
    await expect(batcher.step([{ key: {}, kvLen: 11, pos: 11, past }], new Float32Array(DIMS.hidden))).rejects.toThrow(/is not \[1, 2, 11, 64\]/);
    await expect(batcher.step([{ key: {}, kvLen: 10, pos: 10, past }], new Float32Array(3))).rejects.toThrow(/embeddings for 1 rows/);
  });
});

describe('the runtime with batched decode steps', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-batch-'));
  let alone: QwenVLRuntime;
  let batched: QwenVLRuntime;
  const reqs: WireGenerateRequest[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 6; i++) {
      const w = 56 + 28 * (i % 3);
      const file = path.join(dir, `img${i}.png`);
      await sharp(Buffer.from(noiseBytes(w * 84 * 3, i + 1)), { raw: { width: w, height: 84, channels: 3 } }).png().toFile(file);
      reqs.push({
        messages: [{ role: 'user', content: [{ type: 'image', image: { id: `img${i}`, path: file, width: w, height: 84 } }, { type: 'text', text: `How many objects are in part ${i}?` }] }],
        maxTokens: 6 + 5 * i,
        temperature: i % 2 ? 0.8 : 0,
        topP: i === 3 ? 0.9 : 1,
        topK: -1,
        stop: i === 4 ? ['\\boxed'] : [],
        seed: 40 + i,
      });
    }
    alone = await QwenVLRuntime.load({ modelDir: LOUPE_TINY, dtype: 'q8' });
    batched = await QwenVLRuntime.load({ modelDir: LOUPE_TINY, dtype: 'q8', batch: 8 });
  }, 120_000);
  afterAll(async () => {
    await alone?.dispose();
    await batched?.dispose();
  });

  /** A request's result and every step's logits (copied: the hook's view is overwritten by the next step). */
  async function run(rt: QwenVLRuntime, req: WireGenerateRequest, isCancelled?: () => boolean): Promise<{ r: GenerateResult; logits: Float32Array[] }> {
    const logits: Float32Array[] = [];
    const r = await rt.generate(req, { onLogits: (row) => logits.push(row.slice()), ...(isCancelled ? { isCancelled } : {}) });
    return { r, logits };
  }

  it('batches only where it is exact: loupe-tiny q8 says so, one request at a time by default, fp32 never', async () => {
    expect(batched.info.batch).toBe(8);
    expect(alone.info.batch).toBeUndefined();
    const fp32 = await QwenVLRuntime.load({ modelDir: TINY_DIR, dtype: 'fp32', batch: 8 });
    try {
      expect(fp32.info.batch).toBeUndefined();
    } finally {
      await fp32.dispose();
    }
  }, 60_000);

  it('gives every concurrent request the tokens, text and logits it gets alone', async () => {
    const want: Array<{ r: GenerateResult; logits: Float32Array[] }> = [];
    for (const q of reqs) want.push(await run(alone, q));
    expect(new Set(want.map((w) => w.r.text)).size, 'the requests differ, so a mix-up would show').toBeGreaterThan(3);
    const got = await Promise.all(reqs.map((q) => run(batched, q)));
    got.forEach((g, i) => {
      expect(g.r.tokens, `request ${i}`).toEqual(want[i]!.r.tokens);
      expect(g.r.text, `request ${i}`).toBe(want[i]!.r.text);
      expect(g.r.finishReason, `request ${i}`).toBe(want[i]!.r.finishReason);
      expect(g.logits.length).toBe(want[i]!.logits.length);
      g.logits.forEach((l, s) => expect(bitsEqual(l, want[i]!.logits[s]!), `request ${i}, step ${s}: logits`).toBe(true));
    });
    // one at a time on the batching runtime: still the same (it decodes alone on the exported decoder)
    const one = await run(batched, reqs[5]!);
    expect(one.r.tokens).toEqual(want[5]!.r.tokens);
  }, 120_000);

  it('a request cancelled mid-batch and one that fails leave the others exact', async () => {
    const want: GenerateResult[] = [];
    for (const q of reqs) want.push((await run(alone, q)).r);
    let steps = 0;
    const missing: WireGenerateRequest = { ...reqs[0]!, messages: [{ role: 'user', content: [{ type: 'image', image: { id: 'gone', path: path.join(dir, 'missing.png'), width: 56, height: 84 } }, { type: 'text', text: 'What is it?' }] }] };
    const all = await Promise.allSettled([
      ...reqs.map((q, i) => run(batched, q, i === 5 ? () => ++steps >= 3 : undefined)),
      batched.generate(missing),
    ]);
    const bad = all.at(-1)!;
    expect(bad.status).toBe('rejected');
    expect(String((bad as PromiseRejectedResult).reason)).toMatch(/image gone not found/);
    all.slice(0, reqs.length).forEach((s, i) => {
      expect(s.status, `request ${i}`).toBe('fulfilled');
      const r = (s as PromiseFulfilledResult<{ r: GenerateResult }>).value.r;
      if (i === 5) {
        expect(r.finishReason).toBe('cancelled');
        expect(r.tokens).toEqual(want[5]!.tokens!.slice(0, r.tokens!.length));
        expect(r.tokens!.length).toBeLessThan(want[5]!.tokens!.length);
      } else {
        expect(r.tokens, `request ${i}`).toEqual(want[i]!.tokens);
      }
    });
    // and the runtime goes on serving
    expect((await run(batched, reqs[2]!)).r.tokens).toEqual(want[2]!.tokens);
  }, 120_000);

  it('a batched step that fails turns batching off, and every request still gets its own tokens', async () => {
    const want: GenerateResult[] = [];
    for (const q of reqs) want.push((await run(alone, q)).r);
    const rt = await QwenVLRuntime.load({ modelDir: LOUPE_TINY, dtype: 'q8', batch: 8 });
    try {
      // the third batched step fails as onnxruntime would (before it writes anything)
      const b = (rt as unknown as { batcher: DecodeBatcher }).batcher;
      const step = b.step.bind(b);
      let n = 0;
      b.step = (rows, embeds) => (++n === 3 ? Promise.reject(new Error('onnxruntime refused the shapes')) : step(rows, embeds));
      const got = await Promise.all(reqs.map((q) => run(rt, q)));
      expect(n).toBe(3);
      expect(rt.info.batch, 'no longer batching').toBeUndefined();
      got.forEach((g, i) => expect(g.r.tokens, `request ${i}`).toEqual(want[i]!.tokens));
      // from then on one request at a time, still exact
      const again = await Promise.all(reqs.slice(0, 3).map((q) => run(rt, q)));
      again.forEach((g, i) => expect(g.r.tokens, `request ${i}`).toEqual(want[i]!.tokens));
      expect(n).toBe(3);
    } finally {
      await rt.dispose();
    }
  }, 120_000);
});

describe('serve-model batching decode steps', () => {
  let engines: EngineManager;
  let served: ServedModel;

  beforeAll(async () => {
    engines = await createEngineManager({ isolation: 'thread' });
    served = await serveModel(engines, { modelDir: path.resolve(LOUPE_TINY), dtype: 'q8', replicas: 1, batch: 4 }, { apiKey: null });
  }, 120_000);
  afterAll(async () => {
    await served?.close();
    await engines?.dispose();
  });

  const body = async (i: number, maxTokens = 12, stream = false) => {
    const w = 56 + 28 * (i % 3);
    const png = await sharp(Buffer.from(noiseBytes(w * 84 * 3, 70 + i)), { raw: { width: w, height: 84, channels: 3 } }).png().toBuffer();
    return JSON.stringify({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }, { type: 'text', text: `What is in region ${i}?` }] }],
      max_tokens: maxTokens,
      temperature: 0.8,
      seed: 500 + i,
      stream,
    });
  };
  const ask = async (i: number): Promise<string> => {
    const res = await fetch(`${served.server.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await body(i) });
    const json = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json.choices![0]!.message.content;
  };

  it('takes batch rows × processes requests at once and answers each as alone, also with a client leaving mid-stream', async () => {
    expect(served.info.batch).toBe(4);
    const ids = [0, 1, 2, 3, 4];
    const alone: string[] = [];
    for (const i of ids) alone.push(await ask(i));
    expect(new Set(alone).size).toBeGreaterThan(1);
    // a client that reads two chunks of a long answer and goes away while the others decode beside it
    const leaver = (async () => {
      const ac = new AbortController();
      const res = await fetch(`${served.server.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await body(9, 200, true), signal: ac.signal });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.read();
      ac.abort();
    })();
    const together = await Promise.all(ids.map((i) => ask(i)));
    await leaver.catch(() => undefined);
    expect(together).toEqual(alone);
    // the server is still up and still exact
    expect(await ask(2)).toBe(alone[2]);
  }, 120_000);
});

/**
 * The local engine on the committed tiny Qwen2.5-VL: Node must produce exactly the token ids PyTorch `generate`
 * produced (parity.json), for one image and for a three-image conversation (original + two crops), both in-thread
 * and through the worker; plus KV-cache reuse across turns, cancel, MIN/MAX_PIXELS, video frames and bad requests.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine } from '../../../app/engines/local/localEngine';
import { EngineError } from '../../../app/engines/errors';
import { QwenVLRuntime, intraOpThreads } from '../../../native/engine/qwenRuntime';
import { SMALL_MODEL_BYTES } from '../../../app/engines/local/protocol';
import { workerThreadTransportFactory } from '../../../native/engine/workerThreadTransport';
import type { EngineTransport } from '../../../app/engines/local/transport';
import { createChildProcessTransport, type ChildProcessTransport } from '../../../native/engine/childProcessTransport';
import { TINY_DIR, greedy, image, parity, toMessages } from './parityFixture';
import { setTimeout as sleep } from 'node:timers/promises';

const cases = Object.entries(parity.cases) as Array<[keyof typeof parity.cases, (typeof parity.cases)['single_image']]>;

describe('QwenVLRuntime (in-thread) on the tiny model', () => {
  let rt: QwenVLRuntime;
  beforeAll(async () => {
    rt = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: false });
  });
  afterAll(async () => rt?.dispose());

  for (const [name, c] of cases) {
    it(`${name}: renders the prompt and input ids exactly as the Python reference`, async () => {
      expect(rt.renderPrompt({ messages: toMessages(c) })).toBe(c.prompt);
      const { ids, images } = await rt.encode({ ...greedy(c) });
      expect(ids).toEqual(c.input_ids);
      expect(images.map((p) => p.grid)).toEqual(c.image_grid_thw);
    });

    it(`${name}: greedy tokens equal PyTorch generate`, async () => {
      const r = await rt.generate(greedy(c));
      expect(r.tokens).toEqual(c.generated);
      expect(r.promptTokens).toBe(c.input_ids.length);
      expect(r.cachedTokens).toBe(0);
    });
  }

  it('honours maxPixels: the image is resized by smart_resize before patching', async () => {
    const c = parity.cases.single_image;
    const full = await rt.encode(greedy(c));
    // 224x168 with max 12544 px -> 112x84 -> 8x6 patches -> 12 merged tokens (instead of 48)
    const small = await rt.encode(greedy(c, { maxPixels: 12544 }));
    expect(full.images[0]!.grid).toEqual([1, 12, 16]);
    expect(small.images[0]!.grid).toEqual([1, 6, 8]);
    expect(small.ids.length).toBe(full.ids.length - 36);
  });

  it('gives a video as its frames, one image block each', async () => {
    const frames = ['original.png', 'crop1.png', 'crop2.png'].map(image);
    const req = { messages: [{ role: 'user' as const, content: [{ type: 'video' as const, frames }, { type: 'text' as const, text: 'What happens?' }] }], maxTokens: 2, temperature: 0, topP: 1, topK: -1, stop: [] };
    const prompt = rt.renderPrompt(req);
    expect(prompt.split('<|vision_start|><|image_pad|><|vision_end|>').length).toBe(4);
    const { images } = await rt.encode(req);
    expect(images.map((p) => p.grid)).toEqual(parity.cases.multi_image.image_grid_thw);
    // a pre-rendered prompt with a video placeholder maps to the same frames
    const viaPrompt = await rt.encode({ ...req, prompt: '<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>What happens?<|im_end|>\n<|im_start|>assistant\n' });
    expect(viaPrompt.images).toHaveLength(3);
  });

  it('rejects a prompt whose image placeholders do not match the images, naming both counts', async () => {
    const c = parity.cases.multi_image;
    const err = await rt.generate(greedy(c, { prompt: c.prompt.replace('<|image_pad|>', '') })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).kind).toBe('bad_request');
    expect((err as EngineError).message).toMatch(/2 <\|image_pad\|> placeholder\(s\) but the request holds 3 image\(s\)/);
  });

  it('names a missing image file', async () => {
    const c = parity.cases.single_image;
    const req = greedy(c);
    req.messages[0]!.content[0] = { type: 'image', image: image('no-such.png') };
    await expect(rt.generate(req)).rejects.toThrow(/no-such\.png/);
  });
});

describe('decode steps on reused KV buffers', () => {
  type Internals = { kvReuse: 'on' | 'off'; arena: { kv: Map<string, [Float32Array, Float32Array]> } };
  it('are the path taken, give PyTorch\'s tokens, and the tokens model.forward() gives, turn after turn', async () => {
    const rt = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: true });
    const viaForward = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: true });
    (viaForward as unknown as Internals).kvReuse = 'off';
    try {
      const c = parity.cases.multi_image;
      const r1 = await rt.generate(greedy(c));
      expect(r1.tokens).toEqual(c.generated);
      const inner = rt as unknown as Internals;
      expect(inner.kvReuse).toBe('on');
      expect(inner.arena.kv.size).toBeGreaterThan(0);
      const buffers = [...inner.arena.kv.values()].flat().map((a) => a.buffer);
      // a second turn continues the first from the cache (whose KV lives in those buffers) and decodes into them again
      const next = [...toMessages(c), { role: 'assistant' as const, content: [{ type: 'text' as const, text: r1.text }] }, { role: 'user' as const, content: [{ type: 'text' as const, text: 'Look again.' }] }];
      const f1 = await viaForward.generate(greedy(c));
      expect(f1.tokens).toEqual(r1.tokens);
      const r2 = await rt.generate({ ...greedy(c), messages: next, maxTokens: 12 });
      const f2 = await viaForward.generate({ ...greedy(c), messages: next, maxTokens: 12 });
      expect(r2.cachedTokens).toBe(f2.cachedTokens);
      expect(r2.tokens).toEqual(f2.tokens);
      expect((viaForward as unknown as Internals).arena.kv.size).toBe(0);
      // the second turn decoded into the same buffers (sized for twice the first turn's context): nothing new allocated
      const after = [...inner.arena.kv.values()].flat().map((a) => a.buffer);
      expect(after.every((b) => buffers.includes(b))).toBe(true);
      // the per-step output copies onnxruntime returns are freed at once (freeNow); the runtime's own buffers never are
      expect(after.every((b) => b.byteLength > 0)).toBe(true);
    } finally {
      await rt.dispose();
      await viaForward.dispose();
    }
  }, 120_000);
});

describe('KV cache across turns', () => {
  it('reuses the previous turn only for a continuation of it, and gives the tokens a fresh runtime gives', async () => {
    const rt = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: true });
    const fresh = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: false });
    try {
      const c = parity.cases.multi_image;
      // turn 1: the reference conversation (original + two crops): the reference tokens, nothing cached yet
      const r1 = await rt.generate(greedy(c));
      expect(r1.cachedTokens).toBe(0);
      expect(r1.tokens).toEqual(c.generated);
      // turn 2 continues it (the model's answer, then one more user turn): the prompt and the answer come from the cache
      const next = [...toMessages(c), { role: 'assistant' as const, content: [{ type: 'text' as const, text: r1.text }] }, { role: 'user' as const, content: [{ type: 'text' as const, text: 'Look again.' }] }];
      const r2 = await rt.generate({ ...greedy(c), messages: next, maxTokens: 4 });
      expect(r2.cachedTokens).toBeGreaterThan(c.input_ids.length);
      expect(r2.tokens).toEqual((await fresh.generate({ ...greedy(c), messages: next, maxTokens: 4 })).tokens);
      // the same conversation again (a scene run twice) is not a continuation: only the prompt's head (the text before
      // its first image, always prefilled as a chunk of its own) comes from before, so the answer cannot depend on what
      // ran before it
      const imageTokenId = (JSON.parse(readFileSync(path.join(TINY_DIR, 'config.json'), 'utf8')) as { image_token_id: number }).image_token_id;
      const head = c.input_ids.indexOf(imageTokenId);
      expect(head).toBeGreaterThan(1);
      const r3 = await rt.generate(greedy(c));
      expect(r3.cachedTokens).toBe(head);
      expect(r3.tokens).toEqual(c.generated);
      // a different image of the same size at the same position: the token ids match, the cache must not be reused
      // past the head
      const other = path.join(mkdtempSync(path.join(os.tmpdir(), 'loupe-kv-')), 'other.png');
      await sharp(image('original.png').path).negate().png().toFile(other);
      const swapped = toMessages(c);
      swapped[1]!.content[0] = { type: 'image', image: { ...image('original.png'), id: 'other.png', path: other } };
      const r4 = await rt.generate({ ...greedy(c), messages: swapped, maxTokens: 4 });
      expect(r4.cachedTokens).toBe(head);
      expect(r4.tokens).toEqual((await fresh.generate({ ...greedy(c), messages: swapped, maxTokens: 4 })).tokens);
    } finally {
      await rt.dispose();
      await fresh.dispose();
    }
  });
});

describe('LocalEngine through a worker thread', () => {
  let engine: LocalEngine;
  beforeAll(async () => {
    engine = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, kvCache: false });
  });
  afterAll(async () => engine?.dispose());

  it('reports the device that ran', () => {
    expect(engine.info()).toMatchObject({ kind: 'local', device: 'cpu', model: TINY_DIR });
  });

  for (const [name, c] of cases) {
    it(`${name}: streams, and the tokens equal PyTorch generate`, async () => {
      let streamed = '';
      const r = await engine.generate(greedy(c, { onToken: (d) => (streamed += d) }));
      expect(r.tokens).toEqual(c.generated);
      expect(streamed).toBe(r.text);
      expect(r.finishReason).toBe(c.generated.length < c.max_new_tokens ? 'stop' : 'length');
    });
  }

  it('cuts at a stop string without streaming it', async () => {
    const c = parity.cases.single_image;
    const full = await engine.generate(greedy(c));
    const stop = full.text.slice(6, 10);
    let streamed = '';
    const r = await engine.generate(greedy(c, { stop: [stop], onToken: (d) => (streamed += d) }));
    expect(r.finishReason).toBe('stop');
    expect(r.text).toBe(full.text.slice(0, full.text.indexOf(stop)));
    expect(streamed).toBe(r.text);
  });

  it('cancels mid-generation', async () => {
    const c = parity.cases.multi_image;
    const ac = new AbortController();
    let deltas = 0;
    const r = await engine.generate(greedy(c, { maxTokens: 500, signal: ac.signal, onToken: () => (++deltas === 2 ? ac.abort() : undefined) }));
    expect(r.finishReason).toBe('cancelled');
    expect(r.completionTokens).toBeLessThan(500);
    expect(r.completionTokens).toBeGreaterThanOrEqual(2);
  });

  it('falls back to CPU and says so when the device is not available', async () => {
    const e = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, device: 'cuda' });
    try {
      const info = e.info();
      if (info.device === 'cuda') expect(info.fallbackReason).toBeUndefined();
      else {
        expect(info.device).toBe('cpu');
        expect(info.requestedDevice).toBe('cuda');
        expect(info.fallbackReason).toMatch(/cuda/);
      }
      const r = await e.generate(greedy(parity.cases.single_image));
      expect(r.completionTokens).toBeGreaterThan(0);
    } finally {
      await e.dispose();
    }
  });

  it('loads dtype per file (q8 decoder, fp32 vision)', async () => {
    const dtype = { embed_tokens: 'fp32', vision_encoder: 'fp32', decoder_model_merged: 'q8' } as const;
    const e = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, dtype });
    try {
      expect(e.info().dtype).toEqual(dtype);
      const r = await e.generate(greedy(parity.cases.single_image));
      expect(r.completionTokens).toBe(parity.cases.single_image.max_new_tokens);
    } finally {
      await e.dispose();
    }
  });

  it('fails to start with a clear error for a dtype that is not present', async () => {
    const err = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, dtype: 'q4' }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).kind).toBe('model_folder');
    expect((err as EngineError).message).toMatch(/decoder_model_merged_q4\.onnx/);
    expect((err as EngineError).message).toMatch(/present: fp32, q8/);
  });
});

describe('LocalEngine worker lifecycle', () => {
  function countingFactory() {
    const made: EngineTransport[] = [];
    const factory = () => {
      const t = workerThreadTransportFactory();
      made.push(t);
      return t;
    };
    return { made, factory };
  }

  it('a worker process killed mid-generation rejects the call with a crash error, and the next call starts a new one', async () => {
    const made: ChildProcessTransport[] = [];
    const factory = () => {
      const t = createChildProcessTransport();
      made.push(t);
      return t;
    };
    const e = await LocalEngine.start({ modelDir: TINY_DIR, transport: factory });
    try {
      const c = parity.cases.multi_image;
      let killed = false;
      const err = await e
        .generate(greedy(c, { maxTokens: 500, onToken: () => { if (!killed) { killed = true; made[0]!.child.kill('SIGKILL'); } } }))
        .catch((x: unknown) => x);
      expect(err).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ kind: 'crash', retryable: true });
      expect((err as Error).message).toMatch(/engine worker exited .*killed by SIGKILL/);
      const r = await e.generate(greedy(parity.cases.single_image));
      expect(r.tokens).toEqual(parity.cases.single_image.generated);
      expect(made).toHaveLength(2);
    } finally {
      await e.dispose();
    }
  });

  it('ends an idle worker and starts it again on demand', async () => {
    const { made, factory } = countingFactory();
    const e = await LocalEngine.start({ modelDir: TINY_DIR, transport: factory, idleMs: 200 });
    try {
      let exited = false;
      made[0]!.onExit(() => (exited = true));
      await sleep(800);
      expect(exited).toBe(true);
      const r = await e.generate(greedy(parity.cases.single_image));
      expect(r.tokens).toEqual(parity.cases.single_image.generated);
      expect(made).toHaveLength(2);
    } finally {
      await e.dispose();
    }
  });

  it('refuses calls after dispose', async () => {
    const e = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory });
    await e.dispose();
    await expect(e.generate(greedy(parity.cases.single_image))).rejects.toMatchObject({ kind: 'disposed' });
  });
});

describe('intra-op threads', () => {
  it('defaults to 1 for a small model and to ONNX Runtime\'s own default for a large one; an asked number wins', () => {
    const small = { fp32: 5e6, q8: 2e6 };
    const large = { fp32: 2e9, q8: 5e8 };
    expect(intraOpThreads(undefined, 'q8', small)).toBe(1);
    expect(intraOpThreads(0, 'fp32', small)).toBe(1);
    expect(intraOpThreads(undefined, 'q8', large)).toBe(0);
    expect(intraOpThreads(3, 'q8', large)).toBe(3);
    expect(intraOpThreads(2, 'q8', small)).toBe(2);
    // per-part dtypes: the largest part's dtype decides; a dtype the folder lacks counts as large
    expect(intraOpThreads(undefined, { embed_tokens: 'q8', vision_encoder: 'fp32', decoder_model_merged: 'q8' }, { fp32: 9e8, q8: 2e6 })).toBe(0);
    expect(intraOpThreads(undefined, 'fp16', small)).toBe(0);
    expect(SMALL_MODEL_BYTES).toBe(64 * 2 ** 20);
  });

  it('the tiny model loads on 1 thread by default and on 2 when asked, with the same greedy tokens', async () => {
    const c = parity.cases.single_image;
    const one = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: false });
    const two = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: false, threads: 2 });
    try {
      expect(one.info.threads).toBe(1);
      expect(two.info.threads).toBe(2);
      expect((await two.generate(greedy(c))).tokens).toEqual(c.generated);
      expect((await one.generate(greedy(c))).tokens).toEqual(c.generated);
    } finally {
      await one.dispose();
      await two.dispose();
    }
  }, 60_000);

  it('passes threads through the worker and reports them in the engine info', async () => {
    const engine = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, threads: 2 });
    try {
      expect(engine.info().threads).toBe(2);
    } finally {
      await engine.dispose();
    }
  }, 60_000);
});

/**
 * Attention maps from the real committed models: the analysis decoder that `loupe convert --attention` wrote beside
 * loupe-tiny's q8 decoder returns, per text layer, a map over the image's merged tokens of the right shape (a
 * non-square image: 5 × 3 cells), normalized, from softmax rows that sum to 1; the merged-token order of the real
 * preprocessing is row-major from the top left (a white block lands in the cell the geometry says); a folder
 * without an analysis decoder and an OpenAI-compatible engine say why maps are unavailable; the graph editor refuses
 * decoders it does not know.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoProcessor, RawImage } from '@huggingface/transformers';
import { QwenVLRuntime, qwenPatches } from '../../../native/engine/qwenRuntime';
import { addAttentionOutputs } from '../../../native/engine/attentionGraph';
import { LocalEngine } from '../../../app/engines/local/localEngine';
import { workerThreadTransportFactory } from '../../../native/engine/workerThreadTransport';
import { OpenAIEngine, ATTENTION_UNAVAILABLE } from '../../../app/engines/openai/openaiEngine';
import { EngineError } from '../../../app/engines/errors';
import { boxSpan, cellNorm } from '../../../app/contract/attention';
import type { AttentionRequest } from '../../../app/engines/types';
import { TINY_DIR } from './parityFixture';

const LOUPE_TINY = fileURLToPath(new URL('../../../models/loupe-tiny/model', import.meta.url));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-attn-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A 140×84 image (5×3 merged cells of 28 px), black but for a white block on cell (row 1, column 3). */
async function blockImage(): Promise<string> {
  const W = 140, H = 84;
  const px = Buffer.alloc(W * H * 3);
  for (let y = 28; y < 56; y++) for (let x = 84; x < 112; x++) px.fill(255, (y * W + x) * 3, (y * W + x) * 3 + 3);
  const file = path.join(tmp, 'block.png');
  await sharp(px, { raw: { width: W, height: H, channels: 3 } }).png().toFile(file);
  return file;
}

const CALL = '{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.6, 0.33, 0.8, 0.66], "target_image": 1}}';
const TEXT = `The tag is on the right. Let me zoom in.\n<tool_call>\n${CALL}\n</tool_call>`;

function request(file: string): AttentionRequest {
  return {
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'You are a helpful assistant.' }] },
      { role: 'user', content: [{ type: 'image', image: { id: 'block.png', width: 140, height: 84, path: file } }, { type: 'text', text: 'What letter is printed on the small blue tag?' }] },
    ],
    completion: TEXT,
    span: boxSpan(TEXT, CALL)!,
    imageIndex: 0,
  };
}

describe('attention maps on loupe-tiny (analysis decoder, q8)', () => {
  let rt: QwenVLRuntime;
  let file: string;
  beforeAll(async () => {
    file = await blockImage();
    rt = await QwenVLRuntime.load({ modelDir: LOUPE_TINY });
  });
  afterAll(async () => rt?.dispose());

  it('returns one normalized 3×5 map per text layer from softmax rows that sum to 1', async () => {
    const r = await rt.attention(request(file));
    expect(r.grid).toEqual({ h: 3, w: 5 });
    expect(r.imageSize).toEqual([140, 84]);
    expect(r.layers).toHaveLength(5);
    for (const m of r.layers) {
      expect(m).toHaveLength(15);
      expect(m.every((v) => v >= 0)).toBe(true);
      expect(m.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
    }
    for (const s of r.rowSums) expect(s).toBeCloseTo(1, 3);
    for (const x of r.imageMass) expect(x > 0 && x <= 1 + 1e-6).toBe(true);
    // the box's tokens (the closing one may carry the comma after it)
    expect(r.queryText.replace(/\s/g, '')).toMatch(/^\[0\.6,0\.33,0\.8,0\.66\],?$/);
    expect(r.queryTokens).toBeGreaterThan(4);
    // the generation cache is untouched: a later generate still runs
    const g = await rt.generate({ messages: request(file).messages, maxTokens: 3, temperature: 0, topP: 1, topK: -1, stop: [] });
    expect(g.completionTokens).toBe(3);
  });

  it('the whole completion as the query span, and bad requests say what is wrong', async () => {
    const { span: _span, ...whole } = request(file);
    const r = await rt.attention(whole);
    expect(r.queryTokens).toBeGreaterThan(20);
    await expect(rt.attention({ ...request(file), imageIndex: 1 })).rejects.toThrow(/imageIndex 1 is not one of the conversation's 1 image/);
    await expect(rt.attention({ ...request(file), completion: '' })).rejects.toThrow(/completion is empty/);
    await expect(rt.attention({ ...request(file), span: [5000, 5001] })).rejects.toThrow(/covers no token/);
  });

  it('merged token k of the real preprocessing is cell (k div w, k mod w): the white block is token 8 = cell (1, 3)', async () => {
    const proc = (await AutoProcessor.from_pretrained(LOUPE_TINY)) as unknown as { image_processor: Parameters<typeof qwenPatches>[0] };
    const out = (await qwenPatches(proc.image_processor, await RawImage.read(file)))!;
    const [rows, D] = out.pixel_values.dims as [number, number];
    expect(rows).toBe(60); // 10 × 6 patches
    const data = out.pixel_values.data as Float32Array;
    const bright = new Set<number>();
    for (let p = 0; p < rows; p++) if (data[p * D]! > 1) bright.add(Math.floor(p / 4)); // 4 patches per merged token
    expect([...bright]).toEqual([8]);
    const k = 8;
    expect(cellNorm({ h: 3, w: 5 }, Math.floor(k / 5), k % 5)).toEqual([84 / 140, 28 / 84, 112 / 140, 56 / 84]);
  });
});

describe('attention through the engine worker, and where it is unavailable', () => {
  it('a LocalEngine answers attention from its worker; a folder without an analysis decoder says how to add one', async () => {
    const file = await blockImage();
    const bare = path.join(tmp, 'bare');
    cpSync(TINY_DIR, bare, { recursive: true, filter: (src) => !path.basename(src).startsWith('decoder_model_merged_attn') });
    const withAttn = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory });
    const without = await LocalEngine.start({ modelDir: bare, transport: workerThreadTransportFactory });
    try {
      const r = await withAttn.attention(request(file));
      expect(r.layers).toHaveLength(2); // the random tiny model has 2 text layers
      expect(r.grid).toEqual({ h: 3, w: 5 });
      const err = await without.attention(request(file)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect((err as EngineError).kind).toBe('unavailable');
      expect((err as EngineError).message).toMatch(/no analysis decoder \(decoder_model_merged_attn\.onnx\); add one with `loupe convert --attention /);
      // the engine still generates after the refusal
      expect((await without.generate({ messages: request(file).messages, maxTokens: 2, temperature: 0, topP: 1, topK: -1, stop: [] })).completionTokens).toBe(2);
    } finally {
      await withAttn.dispose();
      await without.dispose();
    }
  });

  it('an OpenAI-compatible engine says the server does not expose attention', async () => {
    const e = new OpenAIEngine({ baseURL: 'http://127.0.0.1:9/v1', model: 'm' });
    const err = await e.attention().catch((x: unknown) => x);
    expect((err as EngineError).kind).toBe('unavailable');
    expect((err as EngineError).message).toBe(ATTENTION_UNAVAILABLE);
    expect(ATTENTION_UNAVAILABLE).toMatch(/^unavailable: the server does not expose attention/);
  });

  it('the graph editor refuses a decoder with another layer count, and one that is already an analysis decoder', () => {
    const fast = readFileSync(path.join(TINY_DIR, 'onnx', 'decoder_model_merged.onnx'));
    expect(() => addAttentionOutputs(fast, 3)).toThrow(/found 2 Softmax node\(s\) in the decoder graph for 3 text layer\(s\)/);
    const { bytes, info } = addAttentionOutputs(fast, 2);
    expect(info.layers).toBe(2);
    expect(() => addAttentionOutputs(bytes, 2)).toThrow(/already has an attentions\.0 output/);
    expect(() => addAttentionOutputs(Buffer.from([0x3a, 0x05, 0x01]), 2)).toThrow(/runs past its message/);
    // the committed analysis decoder is exactly what the editor makes from the committed fast decoder
    expect(Buffer.compare(Buffer.from(bytes), readFileSync(path.join(TINY_DIR, 'onnx', 'decoder_model_merged_attn.onnx')))).toBe(0);
  });
});

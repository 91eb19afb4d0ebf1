/**
 * The runtime's two fast paths must give the same numbers as the transformers.js code they replace:
 * - qwenPatches: Qwen2-VL image preprocessing in one pass, against the image processor's own `_call`;
 * - the embedding table: each id's row of the embed_tokens session, against the session itself (fp32 and q8);
 * - the patch embedding as a MatMulInteger (patchEmbed.ts), against the export's ConvInteger on real images.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { AutoModelForImageTextToText, AutoProcessor, RawImage, Tensor } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import { QwenVLRuntime, hasMatmulPatchEmbed, qwenPatches } from '../../../native/engine/qwenRuntime';
import { rewritePatchEmbed } from '../../../native/engine/patchEmbed';
import { noiseBytes } from '../../support/noise';
import { TINY_DIR } from './parityFixture';

const LOUPE_TINY = fileURLToPath(new URL('../../../models/loupe-tiny/model', import.meta.url));

async function noisePng(dir: string, name: string, w: number, h: number, channels: 1 | 3 | 4, seed: number): Promise<string> {
  const data = Buffer.from(noiseBytes(w * h * channels, seed));
  const file = path.join(dir, name);
  await sharp(data, { raw: { width: w, height: h, channels } }).png().toFile(file);
  return file;
}

describe('qwenPatches', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-patches-'));
  for (const model of [TINY_DIR, LOUPE_TINY]) {
    it(`equals the image processor's pixel_values and grid exactly (${path.basename(model)})`, async () => {
      const proc = (await AutoProcessor.from_pretrained(model)) as unknown as { image_processor: Parameters<typeof qwenPatches>[0] };
      const ip = proc.image_processor;
      const files = [
        await noisePng(dir, 'wide.png', 1936, 1291, 3, 1), // downscaled to max_pixels
        await noisePng(dir, 'small.png', 61, 37, 3, 2), // upscaled to min_pixels
        await noisePng(dir, 'odd.png', 333, 517, 3, 3),
        await noisePng(dir, 'rgba.png', 120, 90, 4, 4), // converted to RGB first
        await noisePng(dir, 'gray.png', 90, 120, 1, 5),
      ];
      for (const f of files) {
        const raw = await RawImage.read(f);
        const want = await ip(raw);
        const got = await qwenPatches(ip, raw);
        expect(got, f).not.toBeNull();
        expect(got!.image_grid_thw.tolist()).toEqual(want.image_grid_thw.tolist());
        expect(got!.pixel_values.dims).toEqual(want.pixel_values.dims);
        const a = got!.pixel_values.data as Float32Array, b = want.pixel_values.data as Float32Array;
        let diff = 0;
        for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) diff++;
        expect(diff, `${f}: elements that differ`).toBe(0);
      }
    }, 60_000);
  }

  it('declines a processor configuration it does not cover', async () => {
    const proc = (await AutoProcessor.from_pretrained(TINY_DIR)) as unknown as { image_processor: Parameters<typeof qwenPatches>[0] };
    const ip = Object.assign(Object.create(Object.getPrototypeOf(proc.image_processor)), proc.image_processor, { do_center_crop: true });
    expect(await qwenPatches(ip, await RawImage.read(await noisePng(dir, 'x.png', 56, 56, 3, 6)))).toBeNull();
  });
});

describe('embedding table', () => {
  for (const [model, dtype] of [[TINY_DIR, 'fp32'], [LOUPE_TINY, 'q8']] as const) {
    it(`gives the embed_tokens session's rows (${path.basename(model)}, ${dtype})`, async () => {
      const rt = await QwenVLRuntime.load({ modelDir: model, dtype });
      const session = (await AutoModelForImageTextToText.from_pretrained(model, { dtype: dtype as never })) as unknown as {
        encode_text(a: { input_ids: Tensor }): Promise<Tensor>;
        config: { text_config: { vocab_size: number } };
        dispose(): Promise<unknown>;
      };
      try {
        const V = session.config.text_config.vocab_size;
        const ids = [0, 1, 5, V - 1, 12, 12, 300 % V, 7];
        const input_ids = new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
        const want = await session.encode_text({ input_ids });
        const got = await (rt as unknown as { model: { encode_text: typeof session.encode_text } }).model.encode_text({ input_ids });
        expect(got.dims).toEqual(want.dims);
        expect(Array.from(got.data as Float32Array)).toEqual(Array.from(want.data as Float32Array));
        // the runtime looks ids up in its table instead of calling the session
        expect((rt as unknown as { model: { encode_text: unknown } }).model.encode_text).not.toBe(Object.getPrototypeOf(session).encode_text);
      } finally {
        await rt.dispose();
        await session.dispose();
      }
    }, 60_000);
  }
});

describe('patch embedding as a matrix product', () => {
  const onnxFile = (model: string, suffix: string) => path.join(model, 'onnx', `vision_encoder${suffix}.onnx`);
  const read = (f: string) => new Uint8Array(readFileSync(f));
  const features = async (session: ort.InferenceSession, px: { pixel_values: Tensor; image_grid_thw: Tensor }) => {
    const feeds = {
      pixel_values: new ort.Tensor('float32', px.pixel_values.data as Float32Array, px.pixel_values.dims),
      image_grid_thw: new ort.Tensor('int64', px.image_grid_thw.data as BigInt64Array, px.image_grid_thw.dims),
    };
    return (await session.run(feeds))[session.outputNames[0]!]!.data as Float32Array;
  };

  for (const model of [LOUPE_TINY, TINY_DIR]) {
    it(`gives the ConvInteger's bits on real images (${path.basename(model)}, q8)`, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-patch-embed-'));
      const proc = (await AutoProcessor.from_pretrained(model)) as unknown as { image_processor: Parameters<typeof qwenPatches>[0] };
      const rewritten = rewritePatchEmbed(read(onnxFile(model, '_quantized')));
      expect(rewritten).not.toBeNull();
      const [plain, fast] = await Promise.all([
        ort.InferenceSession.create(onnxFile(model, '_quantized'), { intraOpNumThreads: 1 }),
        ort.InferenceSession.create(rewritten!, { intraOpNumThreads: 1 }),
      ]);
      try {
        for (const [w, h, seed] of [[224, 224, 1], [308, 196, 2]] as const) {
          const px = (await qwenPatches(proc.image_processor, await RawImage.read(await noisePng(dir, `${seed}.png`, w, h, 3, seed))))!;
          const [a, b] = [await features(plain, px), await features(fast, px)];
          expect(b.length).toBe(a.length);
          expect(b.every((v, i) => Object.is(v, a[i]))).toBe(true);
        }
      } finally {
        await Promise.all([plain.release(), fast.release()]);
      }
    }, 60_000);
  }

  it('leaves alone a model without a quantized patch conv, and bytes that are no model', () => {
    expect(rewritePatchEmbed(read(onnxFile(TINY_DIR, '')))).toBeNull(); // fp32: a float Conv
    expect(rewritePatchEmbed(read(path.join(LOUPE_TINY, 'onnx', 'decoder_model_merged_quantized.onnx')))).toBeNull();
    const vision = read(onnxFile(LOUPE_TINY, '_quantized'));
    expect(rewritePatchEmbed(vision.subarray(0, vision.length >> 1))).toBeNull(); // truncated
    expect(rewritePatchEmbed(new Uint8Array(noiseBytes(4096, 9)))).toBeNull();
    expect(rewritePatchEmbed(new Uint8Array(0))).toBeNull();
  });

  it('is what the runtime runs for loupe-tiny q8 on the CPU', async () => {
    const rt = await QwenVLRuntime.load({ modelDir: LOUPE_TINY, dtype: 'q8' });
    try {
      expect(hasMatmulPatchEmbed(rt)).toBe(true);
    } finally {
      await rt.dispose();
    }
    const fp32 = await QwenVLRuntime.load({ modelDir: TINY_DIR, dtype: 'fp32' });
    try {
      expect(hasMatmulPatchEmbed(fp32)).toBe(false);
    } finally {
      await fp32.dispose();
    }
  }, 60_000);
});

/**
 * What batching decode steps across requests would buy on loupe-tiny, and why the engine does not do it. One decoder
 * step (onnxruntime, one intra-op thread) with B rows of past KV (left-padded to the longest, masked) against B = 1,
 * interleaved in rounds: the per-row cost falls with B because a small model's step is mostly per-call overhead.
 * But a row of a batch is not the number the request gets alone: the q8 export quantizes activations per tensor
 * (DynamicQuantizeLinear over all rows), so a row's logits move with its neighbours; even fp32 (tiny-random) differs
 * in the last bits unless a row's padding is a multiple of the kernels' vector width (here pads of 0, 16, 64 and 100
 * matched, 1, 2, 5 and 33 did not: the sums over the context group other positions together). The columns say how many rows
 * of a mixed-length batch equal their solo step bit for bit, and the largest logit difference.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS = [
  { name: 'loupe-tiny q8', file: path.join(REPO, 'models/loupe-tiny/model/onnx/decoder_model_merged_quantized.onnx'), D: 384, kvHeads: 2, headDim: 64, layers: 5, V: 819 },
  { name: 'tiny-random fp32', file: path.join(REPO, 'models/tiny-random-qwen25vl/onnx/decoder_model_merged.onnx'), D: 64, kvHeads: 2, headDim: 16, layers: 2, V: 819 },
];
const T = 300; // past tokens of the longest row (a loupe-tiny prompt with one image is 150–700)
const ROUNDS = 5;
const STEPS = 40;

function rnd(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    a[i] = x / 2 ** 32 - 0.5;
  }
  return a;
}

type M = (typeof MODELS)[number];

/** One step's feeds for rows with these past lengths (row b's inputs depend only on its seed and length). */
function feeds(m: M, lens: number[], seeds: number[]): Record<string, ort.Tensor> {
  const B = lens.length;
  const Tm = Math.max(...lens);
  const emb = new Float32Array(B * m.D);
  lens.forEach((_, b) => emb.set(rnd(m.D, seeds[b]!), b * m.D));
  const mask = new BigInt64Array(B * (Tm + 1));
  const pos = new BigInt64Array(3 * B);
  lens.forEach((n, b) => {
    for (let t = Tm - n; t <= Tm; t++) mask[b * (Tm + 1) + t] = 1n;
    for (let k = 0; k < 3; k++) pos[k * B + b] = BigInt(n);
  });
  const f: Record<string, ort.Tensor> = {
    inputs_embeds: new ort.Tensor('float32', emb, [B, 1, m.D]),
    attention_mask: new ort.Tensor('int64', mask, [B, Tm + 1]),
    position_ids: new ort.Tensor('int64', pos, [3, B, 1]),
    num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.from([1n]), []),
  };
  const { kvHeads: H, headDim: Dh } = m;
  for (let l = 0; l < m.layers; l++) {
    for (const kv of ['key', 'value']) {
      const a = new Float32Array(B * H * Tm * Dh);
      lens.forEach((n, b) => {
        const r = rnd(H * n * Dh, seeds[b]! * 131 + l * 7 + (kv === 'key' ? 1 : 2));
        for (let h = 0; h < H; h++) a.set(r.subarray(h * n * Dh, (h + 1) * n * Dh), ((b * H + h) * Tm + Tm - n) * Dh);
      });
      f[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', a, [B, H, Tm, Dh]);
    }
  }
  return f;
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return (v[(v.length - 1) >> 1]! + v[v.length >> 1]!) / 2;
};

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  for (const m of MODELS) {
    const s = await ort.InferenceSession.create(m.file, { intraOpNumThreads: 1 });
    try {
      // exactness: a batch of 8 mixed lengths against each row alone
      const lens = [T, T - 5, T - 16, T - 33, T - 64, T - 1, T - 100, T - 2];
      const seeds = lens.map((_, b) => b + 1);
      const batch = (await s.run(feeds(m, lens, seeds))).logits!.data as Float32Array;
      let equal = 0;
      let maxDiff = 0;
      for (let b = 0; b < lens.length; b++) {
        const solo = (await s.run(feeds(m, [lens[b]!], [seeds[b]!]))).logits!.data as Float32Array;
        let d = 0;
        for (let i = 0; i < m.V; i++) d = Math.max(d, Math.abs(solo[i]! - batch[b * m.V + i]!));
        if (d === 0) equal++;
        maxDiff = Math.max(maxDiff, d);
      }
      // cost: B rows per step against B steps of one row, interleaved
      const sizes = [1, 2, 4, 8];
      const perStep = new Map<number, number[]>(sizes.map((B) => [B, []]));
      const f = new Map(sizes.map((B) => [B, feeds(m, Array.from({ length: B }, (_, i) => T - 3 * i), Array.from({ length: B }, (_, i) => i + 1))]));
      for (const B of sizes) for (let i = 0; i < 5; i++) await s.run(f.get(B)!);
      for (let r = 0; r < ROUNDS; r++) {
        for (const B of sizes) {
          const t0 = performance.now();
          for (let i = 0; i < STEPS; i++) await s.run(f.get(B)!);
          perStep.get(B)!.push((performance.now() - t0) / STEPS);
        }
      }
      const one = median(perStep.get(1)!);
      for (const B of sizes) {
        const ms = median(perStep.get(B)!);
        rows.push({
          decoder: m.name,
          past_tokens: T,
          rows: B,
          'ms/step': Number(ms.toFixed(2)),
          'ms/row': Number((ms / B).toFixed(2)),
          'rows/s vs B=1': `${((one * B) / ms).toFixed(2)}×`,
          'rows equal alone (of 8)': B === 8 ? equal : '',
          'max |Δlogit|': B === 8 ? Number(maxDiff.toPrecision(3)) : '',
        });
      }
    } finally {
      await s.release();
    }
  }
  return rows;
}

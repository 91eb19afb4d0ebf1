/**
 * Batching decode steps across requests on loupe-tiny q8: what each way of laying out a batch gives against each row's
 * step alone, and what the batched step costs. A row of a batch must be the number the request gets alone (sweeps are
 * scored and compared across runs), so the exactness columns decide; the cost rows say what batching buys.
 *
 * Exactness (random past KV and embeddings, rows of 1–900 tokens, batches of 2–8; one step unless said):
 * - the exported decoder, rows left-padded to the longest (masked): activations are quantized per tensor
 *   (DynamicQuantizeLinear over all rows), so a row moves with its neighbours;
 * - activations quantized per row (rowQuant.ts without its KV part), left padding: most rows exact, not all (the fp32
 *   sums over the context group a shifted row's terms differently);
 * - the same, the context at the start of the row and the new token after the longest row (a gap);
 * - the engine's batched decoder (rowQuant.ts, through decodeBatch.ts's DecodeBatcher): the new token written at the
 *   row's own length, so only masked zeros follow a row's context; run for several steps with the KV carried over, as
 *   the engine does.
 * Cost: one step of B rows of about 300 past tokens (the DecodeBatcher: the KV stays in its buffers, a step writes the
 * new rows in) against the exported decoder's step of one row (its present copied out), interleaved in 20 short
 * rounds (10 steps each) so that other work on the machine falls on every case alike.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import { rewriteRowQuantized } from '../../native/engine/rowQuant';
import { DecodeBatcher, noise as rnd, type SoloKv } from '../../native/engine/decodeBatch';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const FILE = path.join(REPO, 'models/loupe-tiny/model/onnx/decoder_model_merged_quantized.onnx');
const m = { D: 384, H: 2, Dh: 64, layers: 5, V: 819 };
const T = 300;
const ROUNDS = 20;
const STEPS = 10;

type Layout = 'left' | 'gap';
type Feeds = Record<string, ort.Tensor>;

/**
 * One step's feeds for rows with these past lengths. `left`: a row's context ends at the batch's longest past, its
 * new token after it; `gap`: its context starts at 0 and the new token comes after the longest. (The engine's
 * batched decoder is driven through its DecodeBatcher, which lays its rows out itself.)
 */
function feeds(lens: number[], seeds: number[], layout: Layout, Tm = Math.max(...lens), step = 0): Feeds {
  const B = lens.length;
  const emb = new Float32Array(B * m.D);
  const mask = new BigInt64Array(B * (Tm + 1));
  const pos = new BigInt64Array(3 * B);
  lens.forEach((n, b) => {
    emb.set(rnd(m.D, seeds[b]! + 1000 * step), b * m.D);
    const off = layout === 'left' ? Tm - n : 0;
    for (let t = off; t < off + n; t++) mask[b * (Tm + 1) + t] = 1n;
    mask[b * (Tm + 1) + Tm] = 1n;
    for (let k = 0; k < 3; k++) pos[k * B + b] = BigInt(n);
  });
  const f: Feeds = {
    inputs_embeds: new ort.Tensor('float32', emb, [B, 1, m.D]),
    attention_mask: new ort.Tensor('int64', mask, [B, Tm + 1]),
    position_ids: new ort.Tensor('int64', pos, [3, B, 1]),
    num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.from([1n]), []),
  };
  for (let l = 0; l < m.layers; l++) {
    for (const kv of ['key', 'value']) {
      const a = new Float32Array(B * m.H * Tm * m.Dh);
      lens.forEach((n, b) => {
        const off = layout === 'left' ? Tm - n : 0;
        const r = rnd(m.H * n * m.Dh, seeds[b]! * 131 + l * 7 + (kv === 'key' ? 1 : 2));
        for (let h = 0; h < m.H; h++) a.set(r.subarray(h * n * m.Dh, (h + 1) * n * m.Dh), ((b * m.H + h) * Tm + off) * m.Dh);
      });
      f[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', a, [B, m.H, Tm, m.Dh]);
    }
  }
  return f;
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return (v[(v.length - 1) >> 1]! + v[v.length >> 1]!) / 2;
};
const rowDiff = (solo: Float32Array, batch: Float32Array, b: number) => {
  let d = 0;
  for (let i = 0; i < m.V; i++) d = Math.max(d, Math.abs(solo[i]! - batch[b * m.V + i]!));
  return d;
};

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const bytes = new Uint8Array(readFileSync(FILE));
  const opts = { intraOpNumThreads: 1 };
  const exported = await ort.InferenceSession.create(FILE, opts);
  const perRow = await ort.InferenceSession.create(rewriteRowQuantized(bytes, { kvAtRowLength: false })!, opts);
  const batched = await ort.InferenceSession.create(rewriteRowQuantized(bytes)!, opts);
  const rows: Array<Record<string, string | number>> = [];
  try {
    let x = 7;
    const r = (k: number) => {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      return (x >>> 8) % k;
    };
    // one step, three layouts
    const variants: Array<{ name: string; s: ort.InferenceSession; layout: Layout }> = [
      { name: 'exported decoder, left padding', s: exported, layout: 'left' },
      { name: 'per-row quantization, left padding', s: perRow, layout: 'left' },
      { name: 'per-row quantization, gap before the new token', s: perRow, layout: 'gap' },
    ];
    const stats = variants.map(() => ({ n: 0, eq: 0, max: 0 }));
    for (let trial = 0; trial < 30; trial++) {
      const B = 2 + (trial % 7);
      const lens = Array.from({ length: B }, () => 1 + r(900));
      const seeds = lens.map(() => 1 + r(1e6));
      const solo: Float32Array[] = [];
      for (let b = 0; b < B; b++) solo.push((await exported.run(feeds([lens[b]!], [seeds[b]!], 'left'))).logits!.data as Float32Array);
      for (const [i, v] of variants.entries()) {
        const out = (await v.s.run(feeds(lens, seeds, v.layout))).logits!.data as Float32Array;
        for (let b = 0; b < B; b++) {
          const d = rowDiff(solo[b]!, out, b);
          stats[i]!.n++;
          if (d === 0) stats[i]!.eq++;
          stats[i]!.max = Math.max(stats[i]!.max, d);
        }
      }
    }
    variants.forEach((v, i) => rows.push({ decoder: v.name, 'rows equal alone': `${stats[i]!.eq} of ${stats[i]!.n}`, 'max abs Δlogit': Number(stats[i]!.max.toPrecision(3)) }));
    // the engine's batched decoder through its DecodeBatcher: 8 steps, the KV carried from step to step as the engine
    // carries it
    const st = { n: 0, eq: 0, max: 0 };
    const dims = { layers: m.layers, kvHeads: m.H, headDim: m.Dh, hidden: m.D, vocab: m.V };
    const kvOf = (f: Feeds): SoloKv => Object.fromEntries(Object.entries(f).filter(([k]) => k.startsWith('past_key_values.')).map(([k, t]) => [k, { data: t.data as Float32Array, dims: t.dims }]));
    for (let trial = 0; trial < 8; trial++) {
      const B = 2 + (trial % 7);
      const lens = Array.from({ length: B }, () => 1 + r(900));
      const seeds = lens.map(() => 1 + r(1e6));
      const solo: Float32Array[][] = lens.map(() => []);
      const embs: Float32Array[][] = lens.map(() => []);
      for (let b = 0; b < B; b++) {
        let f = feeds([lens[b]!], [seeds[b]!], 'left');
        for (let s = 0; s < 8; s++) {
          embs[b]!.push(f.inputs_embeds!.data as Float32Array);
          const o = await exported.run(f);
          solo[b]!.push(o.logits!.data as Float32Array);
          const n = lens[b]! + s + 1;
          f = { ...feeds([n], [seeds[b]!], 'left', n, s + 1) };
          for (const k of Object.keys(o)) if (k.startsWith('present')) f[k.replace('present', 'past_key_values')] = o[k]!;
        }
      }
      const batcher = new DecodeBatcher(batched, dims, 8);
      const keys = lens.map(() => ({}));
      for (let s = 0; s < 8; s++) {
        const emb = new Float32Array(B * m.D);
        for (let b = 0; b < B; b++) emb.set(embs[b]![s]!, b * m.D);
        const lg = await batcher.step(
          lens.map((n, b) => ({ key: keys[b]!, kvLen: n + s, pos: n + s, ...(s === 0 ? { past: kvOf(feeds([n], [seeds[b]!], 'left')) } : {}) })),
          emb,
        );
        for (let b = 0; b < B; b++) {
          const d = rowDiff(solo[b]![s]!, lg, b);
          st.n++;
          if (d === 0) st.eq++;
          st.max = Math.max(st.max, d);
        }
      }
    }
    rows.push({ decoder: 'batched decoder (per-row quantization, new token at the row length), 8 steps', 'rows equal alone': `${st.eq} of ${st.n}`, 'max abs Δlogit': Number(st.max.toPrecision(3)) });

    // cost: B rows of about T past tokens per batched step (the engine's DecodeBatcher: the KV stays in its buffers,
    // each step writes the new rows in) against one row on the exported decoder (its present copied out each step),
    // interleaved in short rounds
    const sizes = [1, 2, 4, 8];
    const solo1 = feeds([T], [1], 'left');
    const batchers = sizes.map((B) => ({ B, batcher: new DecodeBatcher(batched, dims, 8), keys: Array.from({ length: B }, () => ({})) }));
    const ms = [[] as number[], ...sizes.map(() => [] as number[])];
    const emb = (B: number) => rnd(B * m.D, B);
    for (let round = 0; round < ROUNDS + 1; round++) {
      let t0 = performance.now();
      for (let k = 0; k < STEPS; k++) await exported.run(solo1);
      if (round > 0) ms[0]!.push((performance.now() - t0) / STEPS);
      for (const [i, c] of batchers.entries()) {
        // a fresh batch of rows of T - 3i tokens, its first step untimed (it copies the rows in)
        c.batcher.clear();
        const lens = c.keys.map((_, b) => T - 3 * b);
        await c.batcher.step(c.keys.map((key, b) => ({ key, kvLen: lens[b]!, pos: lens[b]!, past: kvOf(feeds([lens[b]!], [b + 1], 'left')) })), emb(c.B));
        t0 = performance.now();
        for (let k = 1; k <= STEPS; k++) await c.batcher.step(c.keys.map((key, b) => ({ key, kvLen: lens[b]! + k, pos: lens[b]! + k })), emb(c.B));
        if (round > 0) ms[i + 1]!.push((performance.now() - t0) / STEPS);
      }
    }
    const one = median(ms[0]!);
    rows.push({ decoder: `exported decoder, ${T} past tokens`, rows: 1, 'ms/step': Number(one.toFixed(2)), 'rows/s vs exported B=1': '1.00×' });
    sizes.forEach((B, i) => {
      const t = median(ms[i + 1]!);
      rows.push({ decoder: `batched decoder, about ${T} past tokens`, rows: B, 'ms/step': Number(t.toFixed(2)), 'rows/s vs exported B=1': `${((one * B) / t).toFixed(2)}×` });
    });
  } finally {
    await Promise.all([exported.release(), perRow.release(), batched.release()]);
  }
  return rows;
}

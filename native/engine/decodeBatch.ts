/**
 * Decode steps of several requests as one onnxruntime run, each row getting exactly the numbers it gets alone.
 *
 * The session is the q8 decoder rewritten by rowQuant.ts: activations quantized per batch row, and each row's new
 * key/value written at the row's own length instead of after the longest row. The KV of a batch is one
 * [B, kv heads, T, head dim] tensor per layer whose row b holds that request's context at [0, n_b) followed by zeros
 * (masked), so every reduction over a row's context sees the values in the order it sees them alone; rows only ever
 * get zeros appended. (Measured before this was chosen, `npm run bench -- decode-batch`: left padding, the usual
 * layout, gave 121 of 140 rows equal to their solo step; a gap between the context and the new token 128 of 140; this
 * layout every row of 4,320 row-steps, logits and KV.) The present of a step is the next step's past as it is; the
 * tensor is rebuilt only when a request joins or leaves.
 *
 * `loadDecodeBatcher` opens the session and checks it on a probe before anything uses it: one row through both
 * graphs must give the same bits, and a batch of rows of different lengths the bits of each row alone, over steps.
 * Any difference or error: no batching (the engine decodes one request at a time, as before).
 */
import onnxruntime from 'onnxruntime-node';
import { rewriteRowQuantized } from './rowQuant';

type OrtTensor = onnxruntime.Tensor;

/** The shape of the decoder's cache and embeddings. */
export interface DecoderDims {
  layers: number;
  kvHeads: number;
  headDim: number;
  hidden: number;
  vocab: number;
}

/** A request's own KV (as a solo step leaves it): per past input name, [1, H, n, Dh] float32. */
export type SoloKv = Record<string, { data: Float32Array; dims: readonly number[] }>;

/** One row of a batched step. */
export interface BatchRow {
  /** The request (identity only). */
  key: object;
  /** Tokens whose KV exists before this step (the new token goes at this index). */
  kvLen: number;
  /** mRoPE position of the new token (the same in all three components for a text token). */
  pos: number;
  /** The request's KV when it is not yet a member of the batch (its first batched step). */
  past?: SoloKv;
}

/** Positions per row for a longest row of `n` tokens: room for the next token and at least 31 more, in steps of 64. */
export const capacityFor = (n: number) => Math.ceil((n + 32) / 64) * 64;

export class DecodeBatcher {
  private members: object[] = [];
  /** Positions per row of the KV buffers (the attention mask's length): a row's context at [0, n_b), zeros after. */
  private C = 0;
  private lens: number[] = [];
  /** Per past input name, [B, H, C, Dh]: fed to every step as it is, the new rows written in after the step. */
  private kv = new Map<string, Float32Array>();
  /** Per past input name, the step's new rows, [B, H, 1, Dh] (the graph's new_key_values outputs; reused). */
  private fresh = new Map<string, Float32Array>();
  private logits = new Float32Array(0);
  readonly pastNames: string[];

  constructor(
    private readonly session: onnxruntime.InferenceSession,
    readonly dims: DecoderDims,
    /** Most rows a step takes. */
    readonly rows: number,
  ) {
    this.pastNames = session.inputNames.filter((n) => n.startsWith('past_key_values.'));
  }

  /** Whether `key` is a row of the current batch. */
  has(key: object): boolean {
    return this.members.includes(key);
  }

  /** How many requests the batch holds. */
  get size(): number {
    return this.members.length;
  }

  /** A member's KV as its own [1, H, n, Dh] arrays; it stays a member until the next rebuild. */
  take(key: object): SoloKv {
    const b = this.members.indexOf(key);
    if (b < 0) throw new Error('not a member of the batch');
    const { kvHeads: H, headDim: Dh } = this.dims;
    const n = this.lens[b]!;
    const out: SoloKv = {};
    for (const name of this.pastNames) {
      const src = this.kv.get(name)!;
      const dst = new Float32Array(H * n * Dh);
      for (let h = 0; h < H; h++) dst.set(src.subarray((b * H + h) * this.C * Dh, ((b * H + h) * this.C + n) * Dh), h * n * Dh);
      out[name] = { data: dst, dims: [1, H, n, Dh] };
    }
    return out;
  }

  /** Ends the batched session (the engine is unloading). */
  async release(): Promise<void> {
    this.clear();
    this.fresh.clear();
    await this.session.release();
  }

  /** Forget every row (the engine is between bursts, or decodes alone now). */
  clear(): void {
    this.members = [];
    this.kv.clear();
    this.lens = [];
    this.C = 0;
  }

  /**
   * One decode step for `rows` (in this order); `embeds` holds their new tokens' embeddings, [B, hidden]. Returns the
   * next-token logits, [B, vocab] (a buffer the next step overwrites).
   */
  async step(rows: BatchRow[], embeds: Float32Array): Promise<Float32Array> {
    const { kvHeads: H, headDim: Dh, hidden: D, vocab: V } = this.dims;
    const B = rows.length;
    if (embeds.length !== B * D) throw new Error(`embeddings for ${B} rows of ${D}: got ${embeds.length} values`);
    if (rows.length !== this.members.length || rows.some((r, i) => r.key !== this.members[i])) this.rebuild(rows);
    for (let b = 0; b < B; b++) if (rows[b]!.kvLen !== this.lens[b]) throw new Error(`row ${b}: ${rows[b]!.kvLen} tokens of KV expected, the batch holds ${this.lens[b]}`);
    if (Math.max(...this.lens) + 1 > this.C) this.place(this.members, this.lens, capacityFor(Math.max(...this.lens)));
    const C = this.C;
    const mask = new BigInt64Array(B * C);
    const pos = new BigInt64Array(3 * B);
    for (let b = 0; b < B; b++) {
      mask.fill(1n, b * C, b * C + this.lens[b]! + 1);
      for (let k = 0; k < 3; k++) pos[k * B + b] = BigInt(rows[b]!.pos);
    }
    const feeds: Record<string, OrtTensor> = {
      inputs_embeds: new onnxruntime.Tensor('float32', embeds, [B, 1, D]),
      attention_mask: new onnxruntime.Tensor('int64', mask, [B, C]),
      position_ids: new onnxruntime.Tensor('int64', pos, [3, B, 1]),
    };
    if (this.session.inputNames.includes('num_logits_to_keep')) feeds['num_logits_to_keep'] = new onnxruntime.Tensor('int64', BigInt64Array.from([1n]), []);
    const fetches: Record<string, OrtTensor> = {};
    for (const name of this.pastNames) {
      feeds[name] = new onnxruntime.Tensor('float32', this.kv.get(name)!, [B, H, C, Dh]);
      let f = this.fresh.get(name);
      if (!f || f.length < B * H * Dh) this.fresh.set(name, (f = new Float32Array(this.rows * H * Dh)));
      fetches[name.replace('past_key_values', 'new_key_values')] = new onnxruntime.Tensor('float32', f.subarray(0, B * H * Dh), [B, H, 1, Dh]);
    }
    if (this.logits.length < B * V) this.logits = new Float32Array(B * V);
    const logits = this.logits.subarray(0, B * V);
    fetches['logits'] = new onnxruntime.Tensor('float32', logits, [B, 1, V]);
    const res = await this.session.run(feeds, fetches);
    const spare: ArrayBuffer[] = [];
    for (const [k, v] of Object.entries(res)) {
      // onnxruntime-node hands back a copy of every output, also those it wrote into the given buffers: freed now
      const d = (v as { data?: Float32Array }).data;
      const mine = fetches[k]?.data as Float32Array | undefined;
      if (d && mine && d.buffer !== mine.buffer && d.buffer instanceof ArrayBuffer && d.byteOffset === 0 && d.byteLength === d.buffer.byteLength) spare.push(d.buffer);
    }
    freeBuffers(spare);
    // each row's new key/value into its place: position n_b of its context
    for (const name of this.pastNames) {
      const kv = this.kv.get(name)!;
      const f = this.fresh.get(name)!;
      for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) kv.set(f.subarray((b * H + h) * Dh, (b * H + h + 1) * Dh), ((b * H + h) * C + this.lens[b]!) * Dh);
    }
    this.lens = this.lens.map((n) => n + 1);
    return logits;
  }

  /** The batch tensor for a new set of rows: each row's context copied to [0, n), zeros after. */
  private rebuild(rows: BatchRow[]): void {
    const { kvHeads: H, headDim: Dh } = this.dims;
    for (const [b, r] of rows.entries()) {
      const old = this.members.indexOf(r.key);
      if (old >= 0) {
        if (this.lens[old] !== r.kvLen) throw new Error(`row ${b}: ${r.kvLen} tokens of KV expected, the batch holds ${this.lens[old]}`);
        continue;
      }
      for (const name of this.pastNames) {
        const p = r.past?.[name];
        if (!p || p.dims.length !== 4 || p.dims[0] !== 1 || p.dims[1] !== H || p.dims[2] !== r.kvLen || p.dims[3] !== Dh || p.data.length !== H * r.kvLen * Dh) {
          throw new Error(`row ${b}: its ${name} is not [1, ${H}, ${r.kvLen}, ${Dh}] float32`);
        }
      }
    }
    this.place(
      rows.map((r) => r.key),
      rows.map((r) => r.kvLen),
      capacityFor(Math.max(...rows.map((r) => r.kvLen))),
      rows,
    );
  }

  /**
   * New KV buffers of C positions per row for `keys` (of `lens` tokens each): a member's context from the current
   * buffers, a newcomer's from its solo KV in `rows`; zeros after each context.
   */
  private place(keys: object[], lens: number[], C: number, rows?: BatchRow[]): void {
    const { kvHeads: H, headDim: Dh } = this.dims;
    const B = keys.length;
    const kv = new Map<string, Float32Array>();
    for (const name of this.pastNames) kv.set(name, new Float32Array(B * H * C * Dh));
    keys.forEach((key, b) => {
      const n = lens[b]!;
      const old = this.members.indexOf(key);
      for (const name of this.pastNames) {
        const dst = kv.get(name)!;
        if (old >= 0) {
          const src = this.kv.get(name)!;
          for (let h = 0; h < H; h++) dst.set(src.subarray((old * H + h) * this.C * Dh, ((old * H + h) * this.C + n) * Dh), (b * H + h) * C * Dh);
        } else {
          const p = rows![b]!.past![name]!;
          for (let h = 0; h < H; h++) dst.set(p.data.subarray(h * n * Dh, (h + 1) * n * Dh), (b * H + h) * C * Dh);
        }
      }
    });
    this.members = keys;
    this.lens = lens;
    this.kv = kv;
    this.C = C;
  }
}

let freeBuffers: (b: ArrayBuffer[]) => void = () => undefined;
/** The runtime's way of freeing onnxruntime's unused output copies at once (qwenRuntime's freeNow). */
export function setBufferFreer(f: (b: ArrayBuffer[]) => void): void {
  freeBuffers = f;
}

/** Deterministic values in [-1, 1) for the probe (and the tests and bench that check batches the same way). */
export function noise(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    a[i] = (x / 2 ** 32 - 0.5) * 2;
  }
  return a;
}

/** Whether two float arrays hold the same bits (NaN equal to NaN, −0 apart from +0). */
export const same = (a: Float32Array, b: Float32Array) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));

/**
 * One step of the exported decoder for one request (the engine's solo step), on random inputs; returns the logits
 * and its present KV.
 */
async function soloStep(s: onnxruntime.InferenceSession, d: DecoderDims, past: SoloKv, emb: Float32Array, pos: number): Promise<{ logits: Float32Array; kv: SoloKv }> {
  const n = Object.values(past)[0]!.dims[2]!;
  const feeds: Record<string, OrtTensor> = {
    inputs_embeds: new onnxruntime.Tensor('float32', emb, [1, 1, d.hidden]),
    attention_mask: new onnxruntime.Tensor('int64', new BigInt64Array(n + 1).fill(1n), [1, n + 1]),
    position_ids: new onnxruntime.Tensor('int64', BigInt64Array.from([pos, pos, pos].map(BigInt)), [3, 1, 1]),
  };
  if (s.inputNames.includes('num_logits_to_keep')) feeds['num_logits_to_keep'] = new onnxruntime.Tensor('int64', BigInt64Array.from([1n]), []);
  for (const [k, v] of Object.entries(past)) feeds[k] = new onnxruntime.Tensor('float32', v.data, v.dims as number[]);
  const out = await s.run(feeds);
  const kv: SoloKv = {};
  for (const k of Object.keys(past)) {
    const t = out[k.replace('past_key_values', 'present')]!;
    kv[k] = { data: t.data as Float32Array, dims: t.dims };
  }
  return { logits: out['logits']!.data as Float32Array, kv };
}

/**
 * The batched decoder for an exported q8 decoder's bytes, checked against `exported` (the session the engine decodes
 * one request with), or null: no per-tensor activation quantization to rewrite, a graph the rewrite does not
 * handle, or any difference on the probe.
 */
export async function loadDecodeBatcher(
  exported: onnxruntime.InferenceSession,
  decoderBytes: Uint8Array,
  dims: DecoderDims,
  rows: number,
  options: onnxruntime.InferenceSession.SessionOptions,
): Promise<DecodeBatcher | null> {
  if (rows < 2) return null;
  const bytes = rewriteRowQuantized(decoderBytes);
  if (!bytes) return null;
  let session: onnxruntime.InferenceSession | null = null;
  try {
    session = await onnxruntime.InferenceSession.create(bytes, { ...options, executionProviders: ['cpu'] });
    const batcher = new DecodeBatcher(session, dims, rows);
    const { kvHeads: H, headDim: Dh, hidden: D, vocab: V } = dims;
    const names = batcher.pastNames;
    if (names.length !== 2 * dims.layers) return null;
    // three requests of different lengths (one longer than a 256-wide block), two steps each, alone and batched
    const lens = [37, 300, 5];
    const solo = lens.map((n, r) => Object.fromEntries(names.map((k, i) => [k, { data: noise(H * n * Dh, 7 + 31 * r + i), dims: [1, H, n, Dh] }])) as SoloKv);
    const expect: Float32Array[][] = [];
    const pasts = solo.map((p) => p);
    for (let step = 0; step < 2; step++) {
      expect.push([]);
      for (let r = 0; r < lens.length; r++) {
        const o = await soloStep(exported, dims, pasts[r]!, noise(D, 1000 * step + r), lens[r]! + step);
        expect[step]!.push(o.logits);
        pasts[r] = o.kv;
      }
    }
    const keys = lens.map(() => ({}));
    for (let step = 0; step < 2; step++) {
      const emb = new Float32Array(lens.length * D);
      lens.forEach((_, r) => emb.set(noise(D, 1000 * step + r), r * D));
      const rowsNow = lens.map((n, r) => ({ key: keys[r]!, kvLen: n + step, pos: n + step, ...(step === 0 ? { past: solo[r]! } : {}) }));
      const logits = await batcher.step(rowsNow, emb);
      for (let r = 0; r < lens.length; r++) if (!same(logits.subarray(r * V, (r + 1) * V), expect[step]![r]!)) return null;
    }
    // the KV a row leaves with is its solo KV
    const back = batcher.take(keys[1]!);
    for (const k of names) if (!same(back[k]!.data, pasts[1]![k]!.data)) return null;
    // one row alone through the rewritten graph: the exported graph's bits
    batcher.clear();
    const one = await batcher.step([{ key: keys[0]!, kvLen: lens[0]!, pos: lens[0]!, past: solo[0]! }], noise(D, 0));
    if (!same(one.subarray(0, V), expect[0]![0]!)) return null;
    batcher.clear();
    session = null;
    return batcher;
  } catch {
    return null;
  } finally {
    await session?.release().catch(() => undefined);
  }
}

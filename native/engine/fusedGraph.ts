/**
 * The fused decoder: the same text decoder as an exported `decoder_model_merged{suffix}.onnx` (same inputs, outputs
 * and weights), rebuilt from onnxruntime's fused operators so a decode step runs ~17 nodes a layer instead of ~69.
 * On the CUDA execution provider a decode step is bound by the host issuing nodes (≈ 9 µs each; 1,937 nodes a step
 * for the 7B: models/reports/GPU-7B.md), so fewer, larger nodes are the lever left from Node, where onnxruntime-node
 * offers neither CUDA IO binding nor CUDA graphs.
 *
 * A layer: SkipSimplifiedLayerNormalization (residual add + RMSNorm; SimplifiedLayerNormalization for layer 0),
 * one q/k/v MatMul (the three weights packed by Concat nodes onnxruntime folds at load) + bias Add + Split,
 * RotaryEmbedding on q and k, GroupQueryAttention (past/present KV in the exporter's
 * [batch, kv heads, time, head dim] layout), o MatMul, SkipSimplifiedLayerNormalization, gate/up MatMul,
 * Sigmoid·Mul·Mul (SiLU gate), down MatMul. mRoPE: cos/sin are computed once a step from the 3-D position_ids (each
 * frequency band takes its t/h/w component, in fp32 as the exporter does) into a per-token table, and every layer's
 * RotaryEmbedding reads row b·S+s of it. GroupQueryAttention's seqlens_k and total_sequence_length are computed once a
 * step from attention_mask.
 *
 * Restrictions (checked or documented): the mask must be all ones up to each row's length (no left padding; Loupe
 * always feeds ones); float32 or float16 exports only (quantized decoders keep their own graph).
 *
 * Weights are found by the graph's structure, not by names: the MatMuls whose second input is an initializer (through
 * Identity nodes: the TorchScript exporter shares equal tensors) in graph order are q, k, v, o, gate, up, down per
 * layer and the LM head; their shapes are checked against config.json. The initializers' TensorProto bytes are copied
 * verbatim, so a decoder whose weights live in an external data file (`*.onnx_data`, the 7B) keeps pointing at that
 * same file: the fused file beside it holds the graph only.
 */
import { readFile, writeFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { readModelFolder, fields, floatAttr, intAttr, intsAttr, ld, msg, node, readNode, readTensor, str, tensorBytes, text, valueInfo, varints, vi, type Field } from './onnxProto';

/** File stem of the fused decoder (add the dtype suffix and `.onnx`). */
export const FUSED_DECODER = 'decoder_model_merged_fused';

const FLOAT = 1;
const FLOAT16 = 10;
const INT64 = 7;
const INT32 = 6;
const BOOL = 9;
/** The gqa decode loop's KV buffer grows in steps of this many positions (fuseDecoder, the decode loop). */
export const KV_BUCKET = 64;

export interface TextConfig {
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  hidden: number;
  intermediate: number;
  vocab: number;
  eps: number;
  ropeTheta: number;
  mropeSection: number[];
}

/** The text decoder's dimensions from a Qwen2.5-VL config.json (text_config or top level). */
export function textConfig(cfg: Record<string, unknown>): TextConfig {
  const t = (cfg['text_config'] ?? cfg) as Record<string, unknown>;
  const num = (k: string, d?: number): number => {
    const v = t[k] ?? cfg[k] ?? d;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`config.json: no numeric ${k}`);
    return v;
  };
  const rope = (t['rope_parameters'] ?? t['rope_scaling'] ?? cfg['rope_scaling'] ?? {}) as Record<string, unknown>;
  const type = rope['rope_type'] ?? rope['type'] ?? 'default';
  if (type !== 'default' && type !== 'mrope') throw new Error(`config.json: rope type '${String(type)}' is not handled by the fused decoder (default mRoPE only)`);
  const section = rope['mrope_section'];
  if (!Array.isArray(section) || !section.every((x) => typeof x === 'number')) throw new Error('config.json: no mrope_section');
  const heads = num('num_attention_heads');
  const hidden = num('hidden_size');
  const theta = (rope['rope_theta'] ?? t['rope_theta'] ?? cfg['rope_theta']) as unknown;
  if (typeof theta !== 'number') throw new Error('config.json: no rope_theta');
  const headDim = typeof t['head_dim'] === 'number' ? (t['head_dim'] as number) : hidden / heads;
  if ((section as number[]).reduce((a, b) => a + b, 0) * 2 !== headDim) throw new Error(`config.json: mrope_section ${JSON.stringify(section)} does not cover head_dim ${headDim}`);
  return {
    layers: num('num_hidden_layers'),
    heads,
    kvHeads: num('num_key_value_heads', heads),
    headDim,
    hidden,
    intermediate: num('intermediate_size'),
    vocab: num('vocab_size'),
    eps: num('rms_norm_eps', 1e-6),
    ropeTheta: theta,
    mropeSection: section as number[],
  };
}

interface Init {
  name: string;
  dims: number[];
  dataType: number;
  /** The TensorProto bytes (no tag). */
  bytes: Uint8Array;
}
interface GNode {
  op: string;
  domain: string;
  inputs: string[];
  outputs: string[];
}

export interface FusedGraphInfo {
  layers: number;
  /** Nodes in the original and the fused graph. */
  nodesBefore: number;
  nodesAfter: number;
  dtype: 'float32' | 'float16';
  /** Whether the weights stay in an external data file (referenced, not copied). */
  externalData: boolean;
  attention: FusedAttention;
  /** Whether the graph also runs greedy decode steps in one run (the `steps` input; see FuseOptions.decodeLoop). */
  decodeLoop: boolean;
  /** Nodes of one step of the decode loop (its body), when there is one. */
  loopStepNodes?: number;
}

export interface FuseOptions {
  /**
   * The model folder's embed_tokens ONNX bytes (of the same dtype): the fused decoder then also takes a `steps` input
   * (int64 scalar) and returns `tokens`. After the forward pass on the given inputs (whose logits and present KV it
   * returns as before), an ONNX Loop feeds the argmax of the last position's logits back `steps` times, embedding each
   * token with the same Gather the embed_tokens model runs: `tokens` = [argmax, then one token per step], and the
   * present KV covers every token fed (the last token of `tokens` is not fed). With `steps` = 0 the graph is the plain
   * fused decoder plus one ArgMax. On CUDA this keeps the KV cache on the device between greedy steps: a step no
   * longer copies every layer's past in and present out through host memory (onnxruntime-node has no CUDA IO binding).
   */
  decodeLoop?: Uint8Array;
}

/**
 * How the fused decoder computes attention:
 * - `gqa`: one GroupQueryAttention node a layer (onnxruntime's contrib op), the fastest once warm. On CUDA it is slow
 *   the first time a session meets a KV length (~19 tok/s instead of ~70 at 7B: models/reports/GPU-7B.md). In the
 *   decode loop's body it reads the packed q/k/v and rotates q and k itself (do_rotary) from a cos/sin table made once
 *   a run, so a layer's attention is MatMul, Add and that one node.
 * - `ops`: plain ONNX operators. The KV heads are grouped by reshaping the QUERY ([B,S,H·D] → [B,Hkv,G·S,D], G =
 *   H/Hkv), never by repeating K/V: present = Concat(past, new) per layer, scores = FusedMatMul(q, presentᵀ, scale),
 *   plus one additive causal mask [G·S, T] made once a step, Softmax, MatMul(present_v), back to [B,S,H·D].
 *   No first-run cost, ~15 % slower than gqa once warm (more nodes a step).
 * - `mha`: the same query grouping fed to MultiHeadAttention (past/present BNSH, the mask as its attention_bias); on
 *   CUDA as fast as gqa once warm, with the same first-run cost.
 */
export type FusedAttention = 'gqa' | 'ops' | 'mha';
export const FUSED_ATTENTIONS: readonly FusedAttention[] = ['gqa', 'ops', 'mha'];

/** A TensorProto's bytes with its name (field 8) replaced. */
function renameTensor(bytes: Uint8Array, name: string): Uint8Array {
  return msg(...fields(bytes).filter((f) => f.no !== 8).map((f) => bytes.subarray(f.start, f.end)), str(8, name));
}

/** The embedding table of an embed_tokens model (one Gather from a [vocab, hidden] initializer). */
function embedWeight(model: Uint8Array, vocab: number, hidden: number): Init {
  let gf: Field[];
  try {
    const g = fields(model).find((f) => f.no === 7 && f.wire === 2);
    if (!g) throw new Error('no graph');
    gf = fields(model, g.body![0], g.body![1]);
  } catch (e) {
    throw new Error(`embed_tokens: not a whole ONNX model (${(e as Error).message}); export it again`);
  }
  const inits = new Map<string, Init>();
  const gathers: string[] = [];
  for (const f of gf) {
    if (f.wire !== 2) continue;
    if (f.no === 5) {
      const t = readTensor(model, f);
      inits.set(t.name, { name: t.name, dims: t.dims, dataType: t.dataType, bytes: model.subarray(f.body![0], f.body![1]) });
    } else if (f.no === 1) {
      const sub = fields(model, f.body![0], f.body![1]);
      const op = sub.find((y) => y.no === 4);
      const input = sub.find((y) => y.no === 1);
      if (op && text(model, op) === 'Gather' && input) gathers.push(text(model, input));
    }
  }
  if (gathers.length !== 1) throw new Error(`embed_tokens: expected one Gather node, found ${gathers.length}: not an export Loupe's converter wrote`);
  const w = inits.get(gathers[0]!);
  if (!w) throw new Error('embed_tokens: the Gather does not read an initializer (a quantized embedding?): the decode loop takes float32 or float16 exports');
  if (w.dims.length !== 2 || w.dims[0] !== vocab || w.dims[1] !== hidden) throw new Error(`embed_tokens: table ${w.name} is ${w.dims.join('×')}, expected ${vocab}×${hidden} from config.json`);
  if (w.dataType !== FLOAT && w.dataType !== FLOAT16) throw new Error(`embed_tokens: table of ONNX data type ${w.dataType}: the decode loop takes float32 or float16`);
  return w;
}

/** The fused decoder's bytes from the exported decoder's bytes and its config. */
export function fuseDecoder(model: Uint8Array, cfg: TextConfig, attention: FusedAttention = 'ops', opts: FuseOptions = {}): { bytes: Uint8Array; info: FusedGraphInfo } {
  if (!FUSED_ATTENTIONS.includes(attention)) throw new Error(`attention '${String(attention)}': expected one of ${FUSED_ATTENTIONS.join(', ')}`);
  const top = fields(model);
  const graphs = top.filter((f) => f.no === 7 && f.wire === 2);
  if (graphs.length !== 1) throw new Error(`expected one graph in the ONNX model, found ${graphs.length}`);
  const g = graphs[0]!;
  const gf = fields(model, g.body![0], g.body![1]);
  const s = (f: Field | undefined): string => (f ? text(model, f) : '');
  const sub = (f: Field): Field[] => fields(model, f.body![0], f.body![1]);

  const inits = new Map<string, Init>();
  const nodes: GNode[] = [];
  const inputs: Uint8Array[] = [];
  const outputs: Uint8Array[] = [];
  const inputNames: string[] = [];
  const outputNames: string[] = [];
  for (const f of gf) {
    if (f.wire !== 2) continue;
    if (f.no === 1) {
      const { op, domain, inputs: ins, outputs: outs } = readNode(model, f);
      nodes.push({ op, domain, inputs: ins, outputs: outs });
    } else if (f.no === 5) {
      const tf = sub(f);
      const name = s(tf.find((x) => x.no === 8));
      inits.set(name, { name, dims: varints(model, tf, 1), dataType: varints(model, tf, 2)[0] ?? 0, bytes: model.subarray(f.body![0], f.body![1]) });
    } else if (f.no === 11 || f.no === 12) {
      const name = s(sub(f).find((x) => x.no === 1));
      (f.no === 11 ? inputs : outputs).push(model.subarray(f.start, f.end));
      (f.no === 11 ? inputNames : outputNames).push(name);
    }
  }
  if (nodes.some((n) => n.op === 'GroupQueryAttention' || n.op === 'RotaryEmbedding')) throw new Error('the decoder is already fused');
  if (nodes.some((n) => n.op === 'MatMulInteger' || n.op === 'DynamicQuantizeLinear' || n.op === 'MatMulNBits')) {
    throw new Error('a quantized decoder: the fused decoder is made from float32 or float16 exports only');
  }
  const L = cfg.layers;
  const want = ['inputs_embeds', 'attention_mask', 'position_ids'];
  for (const w of want) if (!inputNames.includes(w)) throw new Error(`the decoder has no ${w} input: not an export Loupe's converter wrote`);
  for (let i = 0; i < L; i++) {
    for (const t of ['key', 'value']) {
      if (!inputNames.includes(`past_key_values.${i}.${t}`)) throw new Error(`the decoder has no past_key_values.${i}.${t} input for ${L} layers`);
      if (!outputNames.includes(`present.${i}.${t}`)) throw new Error(`the decoder has no present.${i}.${t} output`);
    }
  }
  if (!outputNames.includes('logits')) throw new Error('the decoder has no logits output');
  const keepInput = inputNames.includes('num_logits_to_keep');

  const producer = new Map<string, GNode>();
  for (const n of nodes) for (const o of n.outputs) producer.set(o, n);
  const resolve = (name: string): Init | undefined => {
    for (let i = 0; i < 64; i++) {
      const hit = inits.get(name);
      if (hit) return hit;
      const p = producer.get(name);
      if (!p || p.op !== 'Identity') return undefined;
      name = p.inputs[0]!;
    }
    return undefined;
  };
  const consumers = (name: string) => nodes.filter((n) => n.inputs.includes(name));

  const mm = nodes.filter((n) => n.op === 'MatMul' && n.inputs[1] !== undefined && resolve(n.inputs[1]) !== undefined);
  if (mm.length !== 7 * L + 1) throw new Error(`found ${mm.length} weight MatMul nodes for ${L} layers (expected ${7 * L + 1}): not an export Loupe's converter wrote`);
  const weight = (n: GNode) => resolve(n.inputs[1]!)!;
  const dt = weight(mm[0]!).dataType;
  if (dt !== FLOAT && dt !== FLOAT16) throw new Error(`weights of ONNX data type ${dt}: the fused decoder takes float32 or float16`);
  const { hidden: H, heads: NH, kvHeads: KV, headDim: HD, intermediate: I, vocab: V } = cfg;
  const expect = (w: Init, dims: number[], what: string) => {
    if (w.dims.length !== 2 || w.dims[0] !== dims[0] || w.dims[1] !== dims[1]) throw new Error(`${what}: weight ${w.name} is ${w.dims.join('×')}, expected ${dims.join('×')} from config.json`);
    if (w.dataType !== dt) throw new Error(`${what}: weight ${w.name} has data type ${w.dataType}, the others ${dt}`);
  };
  const bias = (n: GNode, width: number, what: string): Init | undefined => {
    const add = consumers(n.outputs[0]!).find((c) => c.op === 'Add' && c.inputs.some((x) => x !== n.outputs[0] && resolve(x)));
    if (!add) return undefined;
    const b = resolve(add.inputs.find((x) => x !== n.outputs[0])!)!;
    if (b.dims.length !== 1 || b.dims[0] !== width) throw new Error(`${what}: bias ${b.name} is ${b.dims.join('×')}, expected ${width}`);
    return b;
  };
  // the RMSNorm weights: Mul nodes with a [hidden] initializer, in graph order (input, post-attention per layer; final)
  const norms = nodes.filter((n) => n.op === 'Mul').map((n) => n.inputs.map(resolve).find((w) => w && w.dims.length === 1 && w.dims[0] === H)).filter((w): w is Init => !!w);
  if (norms.length !== 2 * L + 1) throw new Error(`found ${norms.length} RMSNorm weights for ${L} layers (expected ${2 * L + 1})`);

  const used = new Map<string, Init>();
  const use = (w: Init) => (used.set(w.name, w), w.name);
  // constants are shared by every emitted copy of the decoder (the decode loop's body reads them from the outer graph)
  const extraInits = new Map<string, Uint8Array>();
  const add = (name: string, dataType: number, dims: number[], raw: Uint8Array) => {
    if (!extraInits.has(name)) extraInits.set(name, ld(5, tensorBytes(name, dataType, dims, raw)));
    return name;
  };
  const i64c = (name: string, vals: number[], dims = [vals.length]) => {
    const b = Buffer.alloc(vals.length * 8);
    vals.forEach((v, i) => b.writeBigInt64LE(BigInt(v), i * 8));
    return add(name, INT64, dims, b);
  };
  const c = (x: string) => `fused/${x}`;
  const MS = 'com.microsoft';
  const ioSame = (x: string) => x;

  /**
   * The decoder's nodes, its intermediate values named `${prefix}…` and its inputs/outputs through `io` (the exported
   * names: inputs_embeds, attention_mask, position_ids, past_key_values.N.*, num_logits_to_keep; present.N.*, logits).
   */
  /**
   * `decode`: the graph only ever sees one new token of one sequence (the decode loop's body), so with `ops`
   * attention the query needs no grouping transposes (S = 1: [1,1,H·D] is [1,Hkv,G,D] as it lies), k/v no transpose,
   * and no causal mask (its one row sees every position: the mask is all zeros, and x + 0 = x); the row ids and the
   * logits slice are constants. The same numbers, about a fifth fewer nodes a step.
   */
  /**
   * q, k and v as one MatMul: a layer's three weights (and biases) concatenated by Concat nodes at the top of the
   * graph, which read only initializers, so onnxruntime folds them into one packed initializer at load (the three
   * originals then go unused); the projection is one MatMul, one Add and a Split. Both the forward pass and the decode
   * loop's body read the packed weights: three kernels a layer fewer, and one wider matrix-vector product.
   */
  /** RoPE's inverse frequency j of HD/2, in fp32 as the exporter computes it. */
  const invFreq = (j: number) => Math.fround(1 / Math.pow(cfg.ropeTheta, (2 * j) / HD));
  type NodeWriter = (op: string, ins: string[], outs: string[], attrs?: Uint8Array[]) => void;
  /**
   * cos and sin of the fp32 angles `freq`, as `cos`/`sin` in the decoder's dtype: Cos/Sin, then a Reshape to `rows`
   * when given, then a Cast for fp16. The per-step mRoPE nodes and the decode loop's once-a-run table both use it, so
   * both hold the same values.
   */
  const cosSin = (N: NodeWriter, freq: string, cos: string, sin: string, tmp: (x: string) => string, rows?: string) => {
    for (const [op, name] of [['Cos', cos], ['Sin', sin]] as const) {
      const chain: Array<(x: string, y: string) => void> = [(x, y) => N(op, [x], [y])];
      if (rows) chain.push((x, y) => N('Reshape', [x, rows], [y]));
      if (dt === FLOAT16) chain.push((x, y) => N('Cast', [x], [y], [intAttr('to', FLOAT16)]));
      let x = freq;
      chain.forEach((f, i) => {
        const y = i === chain.length - 1 ? name : tmp(`${op.toLowerCase()}_${i}`);
        f(x, y);
        x = y;
      });
    }
  };
  const prelude: Uint8Array[] = [];
  const packed = new Map<number, { w: string; b?: string }>();
  const packQkv = (i: number, q: GNode, kk: GNode, v: GNode): { w: string; b?: string } => {
    const hit = packed.get(i);
    if (hit) return hit;
    const P = (op: string, ins: string[], outs: string[], attrs: Uint8Array[] = []) => prelude.push(node(op, `fused/pack/${op}_${prelude.length}`, ins, outs, attrs));
    const w = c(`l${i}/qkv_w`);
    P('Concat', [use(weight(q)), use(weight(kk)), use(weight(v))], [w], [intAttr('axis', 1)]);
    const bs = [bias(q, NH * HD, `layer ${i} q_proj`), bias(kk, KV * HD, `layer ${i} k_proj`), bias(v, KV * HD, `layer ${i} v_proj`)];
    let b: string | undefined;
    if (bs.every((x) => x)) {
      b = c(`l${i}/qkv_b`);
      P('Concat', bs.map((x) => use(x!)), [b], [intAttr('axis', 0)]);
    } else if (bs.some((x) => x)) throw new Error(`layer ${i}: a bias on some of q/k/v but not all`);
    const r = { w, ...(b ? { b } : {}) };
    packed.set(i, r);
    return r;
  };
  /**
   * `rope`: the decode loop's body with gqa attention: every step's rotary angles come from one table per run
   * (`cos`/`sin` [rows, D/2], row r = the angle of the token at KV index r; made before the Loop), which
   * GroupQueryAttention reads itself (do_rotary, at KV index seqlens_k) from the packed q/k/v: a layer's attention is
   * MatMul, Add and one GroupQueryAttention node (no Split, no RotaryEmbedding), and no per-step cos/sin nodes.
   */
  const emit = (prefix: string, io: (name: string) => string = ioSame, decode = false, rope?: { cos: string; sin: string }): Uint8Array[] => {
    const lean = decode && attention === 'ops';
    const packedRope = decode && attention === 'gqa' && rope !== undefined;
    const out: Uint8Array[] = [];
    const k = (x: string) => `${prefix}${x}`;
    const N = (op: string, ins: string[], outs: string[], attrs: Uint8Array[] = [], domain = '') => {
      out.push(node(op, k(`${op}_${out.length}`), ins, outs, attrs, domain));
    };
    // ---- once a step: mRoPE cos/sin, rotary row ids, GQA lengths
    const half = HD / 2;
    const inv = Buffer.alloc(3 * half * 4);
    const sec: number[] = [];
    cfg.mropeSection.forEach((n, i) => {
      for (let j = 0; j < n; j++) sec.push(i % 3);
    });
    for (let j = 0; j < half; j++) inv.writeFloatLE(invFreq(j), (sec[j]! * half + j) * 4);
    add(c('inv_freq_thw'), FLOAT, [3, 1, 1, half], inv);
    i64c(c('ax0'), [0]);
    i64c(c('ax1'), [1]);
    i64c(c('ax3'), [3]);
    i64c(c('rows'), [-1, half]);
    i64c(c('one'), [1], []);
    i64c(c('zero'), [0], []);
    i64c(c('end'), [2 ** 53]);
    i64c(c('sh1'), [1]);
    if (!packedRope) {
      N('Cast', [io('position_ids')], [k('pos_f')], [intAttr('to', FLOAT)]);
      N('Unsqueeze', [k('pos_f'), c('ax3')], [k('pos_u')]);
      N('Mul', [k('pos_u'), c('inv_freq_thw')], [k('freq_thw')]);
      N('ReduceSum', [k('freq_thw'), c('ax0')], [k('freq')], [intAttr('keepdims', 0)]);
      cosSin(N, k('freq'), k('cos'), k('sin'), k, c('rows'));
    }
    // row ids b·S+s: [B,S] from inputs_embeds' shape ([[0]] for one token)
    const rotPos = packedRope ? '' : decode ? i64c(c('rot_pos_1'), [0], [1, 1]) : k('rot_pos');
    if (!decode) {
      N('Shape', [io('inputs_embeds')], [k('bs')], [intAttr('end', 2)]);
      N('ReduceProd', [k('bs')], [k('n')], [intAttr('keepdims', 0)]);
      N('Range', [c('zero'), k('n'), c('one')], [k('rows_flat')]);
      N('Reshape', [k('rows_flat'), k('bs')], [k('rot_pos')]);
    }
    // GroupQueryAttention: seqlens_k = per-row mask length − 1 (int32 [B]); total_sequence_length = mask width (int32).
    // In the decode loop's body (packedRope) the past KV is the run's whole buffer (padded before the Loop to the
    // length the run ends at) and total_sequence_length is that buffer's length: every step of a run then gives
    // GroupQueryAttention the same shapes (it writes the new key/value at seqlens_k and attends over [0, seqlens_k]),
    // where growing shapes cost onnxruntime's CUDA provider about 33 ms per new length (models/reports/GPU-7B.md).
    if (!lean) {
      N('ReduceSum', [io('attention_mask'), c('ax1')], [k('mask_len')], [intAttr('keepdims', 0)]);
      N('Sub', [k('mask_len'), c('one')], [k('seqlens64')]);
      N('Cast', [k('seqlens64')], [k('seqlens_k')], [intAttr('to', INT32)]);
      if (packedRope) N('Shape', [io('past_key_values.0.key')], [k('total64')], [intAttr('start', 2), intAttr('end', 3)]);
      else N('Shape', [io('attention_mask')], [k('total64')], [intAttr('start', 1), intAttr('end', 2)]);
      N('Cast', [k('total64')], [k('total_1')], [intAttr('to', INT32)]);
      N('Squeeze', [k('total_1')], [k('total')]);
    }
    i64c(c('qkv_split'), [NH * HD, KV * HD, KV * HD]);
    const G = NH / KV;
    if (!Number.isInteger(G)) throw new Error(`config.json: ${NH} attention heads are not a multiple of ${KV} KV heads`);
    if (lean) {
      i64c(c('q_1'), [0, KV, G, HD]); // [1,1,H·D] → [1,Hkv,G,D]
      i64c(c('kv_1'), [0, KV, 1, HD]); // [1,1,Hkv·D] → [1,Hkv,1,D]
      i64c(c('o_1'), [0, 1, -1]); // [1,Hkv,G,D] → [1,1,H·D]
    } else if (attention !== 'gqa') {
      // the causal mask over the grouped query rows r = g·S + s (s = r mod S): row r sees t ≤ T − S + s; [G·S, T]
      const zeroOut = Buffer.alloc(dt === FLOAT ? 4 : 2);
      const minusInf = Buffer.alloc(dt === FLOAT ? 4 : 2);
      if (dt === FLOAT) minusInf.writeFloatLE(-Infinity);
      else minusInf.writeUInt16LE(0xfc00);
      add(c('mask_zero'), dt, [], zeroOut);
      add(c('mask_inf'), dt, [], minusInf);
      i64c(c('groups'), [G], []);
      N('Shape', [io('inputs_embeds')], [k('s_1')], [intAttr('start', 1), intAttr('end', 2)]);
      N('Squeeze', [k('s_1')], [k('s0')]);
      N('Squeeze', [k('total64')], [k('t0')]);
      N('Sub', [k('t0'), k('s0')], [k('p0')]);
      N('Mul', [k('s0'), c('groups')], [k('gs0')]);
      N('Range', [c('zero'), k('gs0'), c('one')], [k('row')]);
      N('Mod', [k('row'), k('s0')], [k('row_s')]);
      N('Add', [k('row_s'), k('p0')], [k('row_lim')]);
      N('Unsqueeze', [k('row_lim'), c('ax1')], [k('row_lim2')]);
      N('Range', [c('zero'), k('t0'), c('one')], [k('col')]);
      N('Greater', [k('col'), k('row_lim2')], [k('masked')]);
      N('Where', [k('masked'), c('mask_inf'), c('mask_zero')], [attention === 'mha' ? k('mask2') : k('mask')]);
      if (attention === 'mha') {
        i64c(c('ax01'), [0, 1]);
        N('Unsqueeze', [k('mask2'), c('ax01')], [k('mask')]);
      }
      // static reshape targets (0 copies the input's dimension)
      i64c(c('q5'), [0, 0, KV, G, HD]);
      i64c(c('kv4'), [0, 0, KV, HD]);
      i64c(c('bhsd'), [0, KV, -1, HD]); // [B,Hkv,G,S,D] → [B,Hkv,G·S,D]
      i64c(c('bhgsd'), [0, KV, G, -1, HD]);
      i64c(c('bsh'), [0, 0, -1]);
      if (attention === 'mha') {
        i64c(c('b_gs_h'), [0, -1, KV * HD]); // [B,G,S,Hkv,D] → [B,G·S,Hkv·D]
        i64c(c('b_g_s_kv_d'), [0, G, -1, KV, HD]);
      }
    }
    /** One layer's attention: q/k (rotated), v [B,S,·] in, [B,S,H·D] out; present.i.* written. */
    const attend = (i: number, q: string, key: string, val: string, l: (x: string) => string): string => {
      const past = [io(`past_key_values.${i}.key`), io(`past_key_values.${i}.value`)];
      const present = [io(`present.${i}.key`), io(`present.${i}.value`)];
      const scale = floatAttr(attention === 'ops' ? 'alpha' : 'scale', 1 / Math.sqrt(HD));
      if (attention === 'gqa') {
        N('GroupQueryAttention', [q, key, val, ...past, k('seqlens_k'), k('total')], [l('attn'), ...present], [intAttr('num_heads', NH), intAttr('kv_num_heads', KV), scale], MS);
        return l('attn');
      }
      if (lean) {
        N('Reshape', [q, c('q_1')], [l('qg')]);
        for (const [j, x] of [key, val].entries()) {
          N('Reshape', [x, c('kv_1')], [l(`kvt_${j}`)]);
          N('Concat', [past[j]!, l(`kvt_${j}`)], [present[j]!], [intAttr('axis', 2)]);
        }
        N('FusedMatMul', [l('qg'), present[0]!], [l('scores')], [intAttr('transB', 1), scale], MS);
        N('Softmax', [l('scores')], [l('probs')], [intAttr('axis', -1)]);
        N('MatMul', [l('probs'), present[1]!], [l('ag')]);
        N('Reshape', [l('ag'), c('o_1')], [l('attn')]);
        return l('attn');
      }
      N('Reshape', [q, c('q5')], [l('q5')]);
      if (attention === 'mha') {
        // [B,S,Hkv,G,D] → [B,G,S,Hkv,D] → [B,G·S,Hkv·D]: MultiHeadAttention with Hkv heads over G·S query rows
        N('Transpose', [l('q5')], [l('qt')], [intsAttr('perm', [0, 3, 1, 2, 4])]);
        N('Reshape', [l('qt'), c('b_gs_h')], [l('qg')]);
        N('MultiHeadAttention', [l('qg'), key, val, '', '', k('mask'), ...past], [l('ag'), ...present], [intAttr('num_heads', KV), scale], MS);
        N('Reshape', [l('ag'), c('b_g_s_kv_d')], [l('a5')]);
        N('Transpose', [l('a5')], [l('at')], [intsAttr('perm', [0, 2, 3, 1, 4])]);
        N('Reshape', [l('at'), c('bsh')], [l('attn')]);
        return l('attn');
      }
      // [B,S,Hkv,G,D] → [B,Hkv,G,S,D] → [B,Hkv,G·S,D]
      N('Transpose', [l('q5')], [l('qt')], [intsAttr('perm', [0, 2, 3, 1, 4])]);
      N('Reshape', [l('qt'), c('bhsd')], [l('qg')]);
      for (const [j, x] of [key, val].entries()) {
        N('Reshape', [x, c('kv4')], [l(`kv4_${j}`)]);
        N('Transpose', [l(`kv4_${j}`)], [l(`kvt_${j}`)], [intsAttr('perm', [0, 2, 1, 3])]);
        N('Concat', [past[j]!, l(`kvt_${j}`)], [present[j]!], [intAttr('axis', 2)]);
      }
      N('FusedMatMul', [l('qg'), present[0]!], [l('scores')], [intAttr('transB', 1), scale], MS);
      N('Add', [l('scores'), k('mask')], [l('scores_m')]);
      N('Softmax', [l('scores_m')], [l('probs')], [intAttr('axis', -1)]);
      N('MatMul', [l('probs'), present[1]!], [l('ag')]);
      N('Reshape', [l('ag'), c('bhgsd')], [l('a5')]);
      N('Transpose', [l('a5')], [l('at')], [intsAttr('perm', [0, 3, 1, 2, 4])]);
      N('Reshape', [l('at'), c('bsh')], [l('attn')]);
      return l('attn');
    };

    const eps = floatAttr('epsilon', cfg.eps);
    let resid = io('inputs_embeds');
    let pending = ''; // the last block's output, still to be added to resid
    for (let i = 0; i < L; i++) {
      const [q, kk, v, o, gate, up, down] = mm.slice(7 * i, 7 * i + 7) as [GNode, GNode, GNode, GNode, GNode, GNode, GNode];
      expect(weight(q), [H, NH * HD], `layer ${i} q_proj`);
      expect(weight(kk), [H, KV * HD], `layer ${i} k_proj`);
      expect(weight(v), [H, KV * HD], `layer ${i} v_proj`);
      expect(weight(o), [NH * HD, H], `layer ${i} o_proj`);
      expect(weight(gate), [H, I], `layer ${i} gate_proj`);
      expect(weight(up), [H, I], `layer ${i} up_proj`);
      expect(weight(down), [I, H], `layer ${i} down_proj`);
      const l = (x: string) => k(`l${i}/${x}`);
      if (i === 0) {
        N('SimplifiedLayerNormalization', [resid, use(norms[0]!)], [l('h')], [eps, intAttr('axis', -1), intAttr('stash_type', 1)]);
      } else {
        N('SkipSimplifiedLayerNormalization', [pending, resid, use(norms[2 * i]!)], [l('h'), '', '', l('x')], [eps], MS);
        resid = l('x');
      }
      const { w: qkvW, b: qkvB } = packQkv(i, q, kk, v);
      N('MatMul', [l('h'), qkvW], [qkvB ? l('qkv_mm') : l('qkv')]);
      if (qkvB) N('Add', [l('qkv_mm'), qkvB], [l('qkv')]);
      let attn: string;
      if (packedRope) {
        const past = [io(`past_key_values.${i}.key`), io(`past_key_values.${i}.value`)];
        const present = [io(`present.${i}.key`), io(`present.${i}.value`)];
        N(
          'GroupQueryAttention',
          [l('qkv'), '', '', ...past, k('seqlens_k'), k('total'), rope!.cos, rope!.sin],
          [l('attn'), ...present],
          [intAttr('num_heads', NH), intAttr('kv_num_heads', KV), floatAttr('scale', 1 / Math.sqrt(HD)), intAttr('do_rotary', 1), intAttr('rotary_interleaved', 0)],
          MS,
        );
        attn = l('attn');
      } else {
        N('Split', [l('qkv'), c('qkv_split')], [l('q'), l('k'), l('v')], [intAttr('axis', -1)]);
        const [qo, ko, vo] = [l('q'), l('k'), l('v')];
        N('RotaryEmbedding', [qo, rotPos, k('cos'), k('sin')], [l('q_rot')], [intAttr('interleaved', 0)], MS);
        N('RotaryEmbedding', [ko, rotPos, k('cos'), k('sin')], [l('k_rot')], [intAttr('interleaved', 0)], MS);
        attn = attend(i, l('q_rot'), l('k_rot'), vo, l);
      }
      N('MatMul', [attn, use(weight(o))], [l('o')]);
      N('SkipSimplifiedLayerNormalization', [l('o'), resid, use(norms[2 * i + 1]!)], [l('h2'), '', '', l('x2')], [eps], MS);
      resid = l('x2');
      N('MatMul', [l('h2'), use(weight(gate))], [l('gate')]);
      N('MatMul', [l('h2'), use(weight(up))], [l('up')]);
      N('Sigmoid', [l('gate')], [l('sig')]);
      N('Mul', [l('gate'), l('sig')], [l('silu')]);
      N('Mul', [l('silu'), l('up')], [l('act')]);
      N('MatMul', [l('act'), use(weight(down))], [l('down')]);
      pending = l('down');
    }
    const head = mm[7 * L]!;
    expect(weight(head), [H, V], 'lm_head');
    N('SkipSimplifiedLayerNormalization', [pending, resid, use(norms[2 * L]!)], [k('hn')], [eps], MS);
    let last = k('hn');
    if (keepInput && !decode) {
      // keep the last K positions (K = 0: all): Slice from −K, and −0 = 0 is the whole sequence
      N('Reshape', [io('num_logits_to_keep'), c('sh1')], [k('keep1')]);
      N('Neg', [k('keep1')], [k('keep_start')]);
      N('Slice', [k('hn'), k('keep_start'), c('end'), c('ax1')], [k('hn_keep')]);
      last = k('hn_keep');
    }
    N('MatMul', [last, use(weight(head))], [dt === FLOAT ? io('logits') : k('logits16')]);
    if (dt === FLOAT16) N('Cast', [k('logits16')], [io('logits')], [intAttr('to', FLOAT)]);
    return out;
  };

  const initBytes = () => [...used.values()].map((w) => ld(5, w.bytes));
  const ir = top.find((f) => f.no === 1 && f.wire === 0)?.value ?? 8;
  const opset = (domain: string, v: number) => ld(8, msg(...(domain ? [str(1, domain)] : []), vi(2, v)));
  const model_ = (graph: Uint8Array) => msg(vi(1, ir), str(2, 'loupe'), ld(7, graph), opset('', 18), opset(MS, 1));
  const externalData = () => [...used.values()].some((w) => fields(w.bytes).some((f) => f.no === 13));
  const dtype = dt === FLOAT ? 'float32' : 'float16';

  if (!opts.decodeLoop) {
    const out = emit('fused/');
    const graph = msg(...prelude, ...out, str(2, 'loupe_fused_decoder'), ...initBytes(), ...extraInits.values(), ...inputs, ...outputs);
    return { bytes: model_(graph), info: { layers: L, nodesBefore: nodes.length, nodesAfter: prelude.length + out.length, dtype, externalData: externalData(), attention, decodeLoop: false } };
  }

  // ---- the decode loop: after the forward pass on the given inputs, `steps` greedy tokens inside one run
  const emb = embedWeight(opts.decodeLoop, V, H);
  const embName = c('embed_tokens.weight');
  extraInits.set(embName, ld(5, renameTensor(emb.bytes, embName)));
  const main: Uint8Array[] = [];
  const M = (op: string, ins: string[], outs: string[], attrs: Uint8Array[] = [], domain = '') => main.push(node(op, `fused/next/${op}_${main.length}`, ins, outs, attrs, domain));
  const fwd = (x: string) => (x.startsWith('present.') ? `fused/fwd/${x}` : x);
  main.push(...emit('fused/', fwd));
  i64c(c('last'), [-1], []);
  i64c(c('one11'), [1], [1, 1]);
  i64c(c('flat'), [-1]);
  add(c('true'), BOOL, [], Buffer.from([1]));
  // the next token (argmax of the last position), its position (the last position + 1), the mask after it is fed
  M('Gather', ['logits', c('last')], ['fused/next/last_logits'], [intAttr('axis', 1)]);
  M('ArgMax', ['fused/next/last_logits'], ['fused/next/t0'], [intAttr('axis', -1), intAttr('keepdims', 1)]);
  M('Gather', ['position_ids', c('zero')], ['fused/next/pos_t'], [intAttr('axis', 0)]);
  M('Gather', ['fused/next/pos_t', c('last')], ['fused/next/pos_last'], [intAttr('axis', 1)]);
  M('Add', ['fused/next/pos_last', c('one')], ['fused/next/pos0']);
  M('Concat', ['attention_mask', c('one11')], ['fused/next/mask0'], [intAttr('axis', 1)]);
  // gqa: the KV buffer every step of this run works in (emit's `rope` body): the forward pass's KV padded with zeros to
  // P = T + steps rounded up to a multiple of KV_BUCKET (T = the given mask's width), so that the body's
  // GroupQueryAttention meets one shape a run, and the same shape in every run ending in the same bucket: onnxruntime's
  // CUDA provider pays about 33 ms the first time a session meets a shape (models/reports/GPU-7B.md). After the Loop
  // the KV is cut back to T + steps, what the unpadded loop gives.
  // The rotary table the steps read: row r is the angle of the token at KV index r. The loop feeds KV index T + j at
  // position pos0 + j, and a text token's t/h/w positions are equal, so row r = position r + pos0 - T, rows [0, P).
  // Each angle is the product the per-step mRoPE nodes form (position in fp32 × the same fp32 inverse frequency;
  // their sum over t/h/w adds zeros), so the table holds the very cos/sin values a step would compute.
  let rope: { cos: string; sin: string } | undefined;
  if (attention === 'gqa') {
    const half = HD / 2;
    const inv1 = Buffer.alloc(half * 4);
    for (let j = 0; j < half; j++) inv1.writeFloatLE(invFreq(j), j * 4);
    add(c('inv_freq_1'), FLOAT, [half], inv1);
    i64c(c('ax_last'), [-1]);
    i64c(c('bucket'), [KV_BUCKET]);
    i64c(c('bucket_less1'), [KV_BUCKET - 1]);
    M('Shape', ['attention_mask'], ['fused/next/t_1'], [intAttr('start', 1), intAttr('end', 2)]);
    i64c(c('zero_1'), [0]);
    // a negative `steps` runs no step (the Loop's trip count), so it must not shrink the KV either
    M('Reshape', ['steps', c('sh1')], ['fused/next/steps_given']);
    M('Max', ['fused/next/steps_given', c('zero_1')], ['fused/next/steps_1']);
    M('Add', ['fused/next/t_1', 'fused/next/steps_1'], ['fused/next/end_1']);
    M('Add', ['fused/next/end_1', c('bucket_less1')], ['fused/next/end_up']);
    M('Div', ['fused/next/end_up', c('bucket')], ['fused/next/buckets']);
    M('Mul', ['fused/next/buckets', c('bucket')], ['fused/next/kv_len']);
    M('Sub', ['fused/next/kv_len', 'fused/next/t_1'], ['fused/next/kv_extra']);
    M('Sub', ['fused/next/pos0', 'fused/next/t_1'], ['fused/next/rope_from_1']);
    M('Add', ['fused/next/pos0', 'fused/next/kv_extra'], ['fused/next/rope_to_1']);
    M('Squeeze', ['fused/next/rope_from_1'], ['fused/next/rope_from']);
    M('Squeeze', ['fused/next/rope_to_1'], ['fused/next/rope_to']);
    M('Range', ['fused/next/rope_from', 'fused/next/rope_to', c('one')], ['fused/next/rope_pos']);
    M('Cast', ['fused/next/rope_pos'], ['fused/next/rope_pos_f'], [intAttr('to', FLOAT)]);
    M('Unsqueeze', ['fused/next/rope_pos_f', c('ax_last')], ['fused/next/rope_pos_col']);
    M('Mul', ['fused/next/rope_pos_col', c('inv_freq_1')], ['fused/next/rope_freq']);
    cosSin(M, 'fused/next/rope_freq', 'fused/next/rope_cos', 'fused/next/rope_sin', (x) => `fused/next/rope_${x}`);
    rope = { cos: 'fused/next/rope_cos', sin: 'fused/next/rope_sin' };
  }

  // gqa: the forward pass's KV padded (zeros) to the run's buffer length (above); the Loop's KV is cut back after it
  const loopKv = (i: number, t: string) => (rope ? `fused/next/padded.${i}.${t}` : `fused/fwd/present.${i}.${t}`);
  const loopOut = (i: number, t: string) => (rope ? `fused/next/looped.${i}.${t}` : pres(i, t));
  if (rope) {
    i64c(c('pads_head'), [0, 0, 0, 0, 0, 0]);
    i64c(c('pads_tail'), [0]);
    i64c(c('ax2'), [2]);
    M('Concat', [c('pads_head'), 'fused/next/kv_extra', c('pads_tail')], ['fused/next/kv_pads'], [intAttr('axis', 0)]);
    for (let i = 0; i < L; i++) for (const t of ['key', 'value']) M('Pad', [`fused/fwd/present.${i}.${t}`, 'fused/next/kv_pads'], [loopKv(i, t)]);
  }

  // the body: feed `token` at `pos`, return the argmax as the next token (also scanned out)
  const body: Uint8Array[] = [];
  const B = (op: string, ins: string[], outs: string[], attrs: Uint8Array[] = []) => body.push(node(op, `loop/${op}_${body.length}`, ins, outs, attrs));
  const past = (i: number, t: string) => `past_key_values.${i}.${t}`;
  const pres = (i: number, t: string) => `present.${i}.${t}`;
  const loopIo = (x: string) => `loop/${x}`;
  if (emb.dataType === dt) B('Gather', [embName, 'loop/token'], ['loop/inputs_embeds'], [intAttr('axis', 0)]);
  else {
    B('Gather', [embName, 'loop/token'], ['loop/embeds_raw'], [intAttr('axis', 0)]);
    B('Cast', ['loop/embeds_raw'], ['loop/inputs_embeds'], [intAttr('to', dt)]);
  }
  if (!rope) {
    i64c(c('one111'), [1, 1, 1]);
    i64c(c('three11'), [3, 1, 1]);
    B('Reshape', ['loop/pos', c('one111')], ['loop/pos111']);
    B('Expand', ['loop/pos111', c('three11')], ['loop/position_ids']);
  }
  body.push(...emit('loop/', loopIo, true, rope));
  B('ArgMax', ['loop/logits'], ['loop/next'], [intAttr('axis', -1), intAttr('keepdims', 0)]);
  B('Add', ['loop/pos', c('one')], ['loop/pos_next']);
  B('Concat', ['loop/attention_mask', c('one11')], ['loop/mask_next'], [intAttr('axis', 1)]);
  B('Identity', ['loop/cond'], ['loop/cond_out']);
  B('Identity', ['loop/next'], ['loop/next_scan']);
  const kv = (i: number, t: string, name: string) => valueInfo(name, dt, [1, KV, `${t}_len`, HD]);
  const layersKv = <T,>(f: (i: number, t: string) => T): T[] => Array.from({ length: L }, (_, i) => ['key', 'value'].map((t) => f(i, t))).flat();
  const bodyGraph = msg(
    ...body,
    str(2, 'loupe_decode_loop_body'),
    ld(11, valueInfo('loop/iter', INT64, [])),
    ld(11, valueInfo('loop/cond', BOOL, [])),
    ld(11, valueInfo('loop/token', INT64, [1, 1])),
    ld(11, valueInfo('loop/pos', INT64, [1])),
    ld(11, valueInfo('loop/attention_mask', INT64, [1, 'total'])),
    ...layersKv((i, t) => ld(11, kv(i, 'past', `loop/${past(i, t)}`))),
    ld(12, valueInfo('loop/cond_out', BOOL, [])),
    ld(12, valueInfo('loop/next', INT64, [1, 1])),
    ld(12, valueInfo('loop/pos_next', INT64, [1])),
    ld(12, valueInfo('loop/mask_next', INT64, [1, 'total_next'])),
    ...layersKv((i, t) => ld(12, kv(i, 'present', `loop/${pres(i, t)}`))),
    ld(12, valueInfo('loop/next_scan', INT64, [1, 1])),
  );
  M(
    'Loop',
    ['steps', c('true'), 'fused/next/t0', 'fused/next/pos0', 'fused/next/mask0', ...layersKv(loopKv)],
    ['fused/next/last_token', 'fused/next/last_pos', 'fused/next/last_mask', ...layersKv(loopOut), 'fused/next/scan'],
    [ld(5, msg(str(1, 'body'), ld(6, bodyGraph), vi(20, 5)))],
  );
  if (rope) for (let i = 0; i < L; i++) for (const t of ['key', 'value']) M('Slice', [loopOut(i, t), c('zero_1'), 'fused/next/end_1', c('ax2')], [pres(i, t)]);
  M('Reshape', ['fused/next/t0', c('flat')], ['fused/next/t0_flat']);
  M('Reshape', ['fused/next/scan', c('flat')], ['fused/next/scan_flat']);
  M('Concat', ['fused/next/t0_flat', 'fused/next/scan_flat'], ['tokens'], [intAttr('axis', 0)]);
  const graph = msg(
    ...prelude,
    ...main,
    str(2, 'loupe_fused_decoder_loop'),
    ...initBytes(),
    ...extraInits.values(),
    ...inputs,
    ld(11, valueInfo('steps', INT64, [])),
    ...outputs,
    ld(12, valueInfo('tokens', INT64, ['tokens'])),
  );
  return { bytes: model_(graph), info: { layers: L, nodesBefore: nodes.length, nodesAfter: prelude.length + main.length, dtype, externalData: externalData(), attention, decodeLoop: true, loopStepNodes: body.length } };
}


/**
 * Writes `dst` (atomically) as the fused decoder of `src`; `config` is the model folder's config.json; `embed`: the
 * embed_tokens model file of the same dtype, for a decoder with the decode loop (FuseOptions.decodeLoop).
 */
export async function writeFusedDecoder(src: string, dst: string, config: Record<string, unknown>, attention: FusedAttention = 'ops', embed?: string): Promise<FusedGraphInfo> {
  let made: { bytes: Uint8Array; info: FusedGraphInfo };
  try {
    made = fuseDecoder(await readFile(src), textConfig(config), attention, embed ? { decodeLoop: await readFile(embed) } : {});
  } catch (e) {
    // name the file: the graph editor's messages speak of "the decoder" and "embed_tokens"
    const msg = (e as Error).message;
    throw new Error(msg.startsWith('embed_tokens:') && embed ? `${path.basename(embed)}${msg.slice('embed_tokens'.length)}` : `${path.basename(src)}: ${msg}`, { cause: e });
  }
  const { bytes, info } = made;
  const tmp = `${dst}.tmp-${process.pid}`;
  await writeFile(tmp, bytes);
  await rename(tmp, dst);
  return info;
}

/**
 * Adds a fused decoder beside every float decoder in a model folder (`onnx/decoder_model_merged{suffix}.onnx` →
 * `onnx/decoder_model_merged_fused{suffix}.onnx`, for fp32 and fp16; quantized ones are left as they are). With
 * `decodeLoop`, each also runs greedy steps in one run (FuseOptions.decodeLoop), from `onnx/embed_tokens{suffix}.onnx`.
 */
export async function addFusedDecoders(modelDir: string, attention: FusedAttention = 'ops', decodeLoop = false): Promise<Array<{ file: string; bytes: number } & FusedGraphInfo>> {
  const { config: cfg, onnxDir, names } = await readModelFolder(modelDir);
  const src = names.filter((n) => /^decoder_model_merged(_fp16)?\.onnx$/.test(n));
  if (!src.length) throw new Error(`${onnxDir}: no float32 or float16 decoder (decoder_model_merged.onnx or decoder_model_merged_fp16.onnx)`);
  const out: Array<{ file: string; bytes: number } & FusedGraphInfo> = [];
  for (const n of src.sort()) {
    const dst = path.join(onnxDir, n.replace('decoder_model_merged', FUSED_DECODER));
    const embed = n.replace('decoder_model_merged', 'embed_tokens');
    if (decodeLoop && !names.includes(embed)) throw new Error(`${onnxDir}: no ${embed} beside ${n} (the decode loop embeds its tokens with the same table; --no-decode-loop writes the fused decoder without it)`);
    const info = await writeFusedDecoder(path.join(onnxDir, n), dst, cfg, attention, decodeLoop ? path.join(onnxDir, embed) : undefined);
    out.push({ file: path.relative(modelDir, dst), bytes: (await stat(dst)).size, ...info });
  }
  return out;
}

/**
 * The q8 decoder with its activations quantized per batch row instead of per tensor, so that several requests' decode
 * steps can run as one batch and each row still gets exactly the numbers it gets alone.
 *
 * A q8 export (onnxruntime's dynamic quantization) feeds every quantized MatMul through a DynamicQuantizeLinear: one
 * scale and one zero point for the whole activation tensor, taken from its min and max. Over a batch those span all
 * rows, so a row's logits move with its neighbours. `rewriteRowQuantized` runs each DynamicQuantizeLinear once per
 * row of the batch axis instead, through a Scan over axis 0: a row's whole [S, K] slab goes through the very operator
 * it meets alone, so each row gets its own scale and zero point, bit for bit (a one-request batch is quantized exactly
 * as before). (Until 2026-11-28 the same arithmetic was spelled out in 18 elementwise nodes per quantization point,
 * ReduceMin/ReduceMax … QuantizeLinear; the Scan gives the same bits in 4 nodes, and a batched step of 4 rows took
 * 6.8 ms instead of 8.0 ms on loupe-tiny.) onnxruntime's MatMulInteger
 * takes only one zero point for A, so each MatMulInteger that read the tensor's zero point now gets none (0) and the
 * row's share is taken off in int32, exactly: Σ_k (a - z)(w - wz) = Σ_k a (w - wz) - z · Σ_k (w - wz), the column
 * sums of the weight computed here once. The scale multiplications after it are the graph's own, now broadcast over
 * a [B, 1, 1] scale.
 *
 * Rows of a batch have different lengths. The exported graph appends each step's key/value after the past
 * (Concat on the time axis), so with rows padded to the longest, a row's new token sits at another index than alone,
 * and the fp32 sums over the context (softmax, attention × V) group its terms differently: some rows come out a few
 * ulps off (decode-batch bench). So the past comes with room ([B, H, C, head dim], C the mask's length, a row's
 * context left-aligned at [0, n_b), zeros after it; a Shape read of it is told C - 1, the length the exported graph
 * expects for that mask), each Concat becomes a ScatterND writing the new key/value at the row's own length
 * n_b = Σ attention_mask_b - 1, and the graph outputs only the new key/value rows (`new_key_values.*`, [B, H, 1,
 * head dim]), which the caller writes into its buffers (decodeBatch.ts). A row's context sits where it sits alone,
 * with only masked zeros after it, and the context is copied once a step instead of three times (Concat, ScatterND,
 * then onnxruntime-node's copy of each present output): `npm run bench -- decode-batch` on loupe-tiny, 300 past
 * tokens, 2 cores, ms per step for 1/2/4/8 rows went from 2.07/2.61/4.26/8.36 to 1.55/1.76/2.74/5.34 (the exported
 * decoder's one-row step: 1.65–1.77), every row still equal to its step alone (296 of 296 over 8 steps).
 *
 * Everything else is kept byte for byte. Anything this does not recognise (a zero point read by another node, a weight
 * outside the file or not int8/uint8, a per-column weight zero point) returns null: the caller keeps decoding one
 * request at a time. The engine uses the rewritten session only for batches, after checking on a probe that it gives
 * the exported decoder's bits for one row (see QwenVLRuntime).
 */
import { fields, intAttr, ld, msg, node, readNode, readTensor, str, tensorBytes, text, valueInfo, vi, type Field, type NodeInfo, type TensorInfo } from './onnxProto';



const UINT8 = 2;
const INT8 = 3;
const INT32 = 6;
const INT64 = 7;
const FLOAT = 1;

/** One integer value of a scalar (or one-element) int8/uint8 tensor, raw or int32_data. */
function scalarInt(t: TensorInfo): number | null {
  if (t.external || (t.dataType !== INT8 && t.dataType !== UINT8)) return null;
  if (t.dims.length > 1 || (t.dims.length === 1 && t.dims[0] !== 1)) return null;
  if (t.raw) {
    if (t.raw.length !== 1) return null;
    return t.dataType === INT8 ? (t.raw[0]! << 24) >> 24 : t.raw[0]!;
  }
  if (t.int32s.length !== 1) return null;
  // int32_data holds int8 values sign-extended in a varint (as uint64 two's complement for negatives)
  const v = t.int32s[0]!;
  return v >= 2 ** 31 ? Math.round(v - 2 ** 64) : v;
}

/** A graph's inputs (field 11) or outputs (field 12) by name, each with its ValueInfo field. */
function valueInfos(b: Uint8Array, g: Field[], no: 11 | 12): Map<string, Field> {
  const out = new Map<string, Field>();
  for (const f of g) {
    if (f.no !== no || f.wire !== 2) continue;
    const nf = fields(b, f.body![0], f.body![1]).find((x) => x.no === 1 && x.wire === 2);
    if (nf) out.set(text(b, nf), f);
  }
  return out;
}


const initializer = (name: string, dataType: number, dims: number[], raw: Uint8Array) => ld(5, tensorBytes(name, dataType, dims, raw));
const i64 = (xs: number[]) => new Uint8Array(BigInt64Array.from(xs.map(BigInt)).buffer);

/**
 * The decoder with per-row activation quantization and each row's new key/value at its own length (see the file
 * comment), or null when it has no DynamicQuantizeLinear or anything about one is not the plain case. Never throws on
 * bytes it cannot read. `kvAtRowLength: false` keeps the exported KV append (for measurements only: rows then need
 * equal lengths).
 */
export function rewriteRowQuantized(model: Uint8Array, opts: { kvAtRowLength?: boolean } = {}): Uint8Array | null {
  try {
    return rewrite(model, opts.kvAtRowLength ?? true);
  } catch {
    return null;
  }
}

function rewrite(b: Uint8Array, kvAtRowLength: boolean): Uint8Array | null {
  const top = fields(b);
  const gf = top.find((f) => f.no === 7 && f.wire === 2);
  if (!gf) return null;
  const gFields = fields(b, gf.body![0], gf.body![1]);
  const inits = new Map<string, TensorInfo>();
  for (const f of gFields) {
    if (f.no !== 5 || f.wire !== 2) continue;
    const t = readTensor(b, f);
    inits.set(t.name, t);
  }
  const nodes = gFields.filter((f) => f.no === 1 && f.wire === 2).map((f) => readNode(b, f));
  const consumers = new Map<string, NodeInfo[]>();
  for (const n of nodes) for (const i of n.inputs) if (i) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  // (the KV part below declares other outputs in the place of the presents)
  const graphOutputs = valueInfos(b, gFields, 12);

  const P = 'rowquant';
  const replace = new Map<Field, Uint8Array>();
  // shared constants
  const added: Uint8Array[] = [
    initializer(`${P}/axis1`, INT64, [1], i64([1])),
    initializer(`${P}/i0`, INT64, [1], i64([0])),
    initializer(`${P}/i1`, INT64, [1], i64([1])),
    initializer(`${P}/b11`, INT64, [3], i64([-1, 1, 1])),
    initializer(`${P}/zero64`, INT64, [], i64([0])),
    initializer(`${P}/one64`, INT64, [], i64([1])),
  ];
  const colsums = new Map<string, string>();
  let k = 0;
  for (const n of nodes) {
    if (n.op !== 'DynamicQuantizeLinear' || (n.domain !== '' && n.domain !== 'ai.onnx')) continue;
    if (n.inputs.length !== 1 || n.outputs.length !== 3 || n.attrs.size) return null;
    const [x] = n.inputs as [string];
    const [q, s, zp] = n.outputs as [string, string, string];
    if (graphOutputs.has(q) || graphOutputs.has(s) || graphOutputs.has(zp)) return null;
    const p = `${P}/${k++}`;
    // every reader of the zero point must be a MatMulInteger over (q, constant weight, zp, scalar weight zp)
    const mms = consumers.get(zp) ?? [];
    for (const m of mms) {
      if (m.op !== 'MatMulInteger' || m.inputs[0] !== q || m.inputs[2] !== zp || m.inputs[0] === zp || m.outputs.length !== 1) return null;
      const w = inits.get(m.inputs[1] ?? '');
      if (!w || !w.raw || w.external || (w.dataType !== INT8 && w.dataType !== UINT8) || w.dims.length !== 2) return null;
      if (w.raw.length !== w.dims[0]! * w.dims[1]!) return null;
      const wzName = m.inputs[3] ?? '';
      let wz = 0;
      if (wzName) {
        const z = inits.get(wzName);
        const v = z ? scalarInt(z) : null;
        if (v === null) return null;
        wz = v;
      }
      const key = `${w.name}|${wzName}`;
      if (!colsums.has(key)) {
        const [K, N] = w.dims as [number, number];
        const sums = new Int32Array(N);
        const signed = w.dataType === INT8;
        for (let r = 0; r < K; r++) for (let c = 0; c < N; c++) sums[c]! += (signed ? (w.raw[r * N + c]! << 24) >> 24 : w.raw[r * N + c]!) - wz;
        const cs = `${P}/colsum${colsums.size}`;
        added.push(initializer(cs, INT32, [N], new Uint8Array(sums.buffer)));
        colsums.set(key, cs);
      }
    }
    // the quantized tensor may only go to those MatMulIntegers; the scale goes anywhere (it keeps its meaning)
    if ((consumers.get(q) ?? []).some((m) => !mms.includes(m))) return null;
    // one DynamicQuantizeLinear per row, run by a Scan over the batch axis: the very operator a row meets alone
    const body = msg(
      node('DynamicQuantizeLinear', `${p}/row_dql`, [`${p}/x_row`], [`${p}/q_row`, `${p}/s_row`, `${p}/zp_row`]),
      str(2, `${p}/row_quantize`),
      ld(11, valueInfo(`${p}/x_row`, FLOAT, ['s', 'k'])),
      ld(12, valueInfo(`${p}/q_row`, UINT8, ['s', 'k'])),
      ld(12, valueInfo(`${p}/s_row`, FLOAT, [])),
      ld(12, valueInfo(`${p}/zp_row`, UINT8, [])),
    );
    replace.set(
      n.field,
      msg(
        node('Scan', `${p}/rows`, [x], [q, `${p}/scale`, `${p}/zp`], [intAttr('num_scan_inputs', 1), ld(5, msg(str(1, 'body'), ld(6, body), vi(20, 5)))]),
        // [B] → [B, 1, 1] for the scale and the zero point, so they broadcast over each row of a decoder's [B, S, K]
        // activations (a graph whose activations have another rank fails the engine's probe and is not batched)
        node('Reshape', `${p}/scale_b`, [`${p}/scale`, `${P}/b11`], [s]),
        node('Cast', `${p}/zp_i32`, [`${p}/zp`], [`${p}/zp32`], [intAttr('to', INT32)]),
        node('Reshape', `${p}/zp_b`, [`${p}/zp32`, `${P}/b11`], [`${p}/zp_b`]),
      ),
    );
    for (const m of mms) {
      const out = m.outputs[0]!;
      const mp = `${p}/${m.name || out}`;
      const cs = colsums.get(`${m.inputs[1]}|${m.inputs[3] ?? ''}`)!;
      replace.set(
        m.field,
        msg(
          node('MatMulInteger', m.name ? `${m.name}/row_zp` : `${mp}/mm`, [q, m.inputs[1]!, '', m.inputs[3] ?? ''], [`${mp}/raw`]),
          node('Mul', `${mp}/zp_share`, [`${p}/zp_b`, cs], [`${mp}/zp_share`]),
          node('Sub', `${mp}/minus_zp`, [`${mp}/raw`, `${mp}/zp_share`], [out]),
        ),
      );
    }
  }
  if (k === 0) return null;
  const assemble = () => msg(...top.flatMap((f) => (f === gf ? [ld(7, msg(...gFields.map((x) => replace.get(x) ?? b.subarray(x.start, x.end)), ...added))] : [b.subarray(f.start, f.end)])));
  // without the KV part (the decode-batch bench measures what per-row quantization alone gives)
  if (!kvAtRowLength) return assemble();
  // each layer's KV append. The exported Concat(past, new) on the time axis puts the new token at index T (the batch's
  // longest past) for every row, and copies the whole context into a fresh tensor on every step, which onnxruntime-node
  // then copies out again as the present. Instead the past arrives with room: [B, H, C, head dim], C the mask's length,
  // a row's context left-aligned at [0, n_b) and zeros after it; each row's new key/value is written at n_b =
  // Σ attention_mask_b - 1 (ScatterND), so the row's context sits where it sits alone, followed by masked zeros only;
  // and the graph's outputs are the new rows alone ([B, H, 1, head dim], `new_key_values.*` for `present.*`), which
  // the caller writes into its own buffer at n_b. The whole context is copied once a step (into the attention's
  // input), not three times, and nothing of its size crosses into JavaScript.
  const concats = nodes.filter((n) => n.op === 'Concat' && n.inputs.length === 2 && n.inputs[0]!.startsWith('past_key_values.') && n.outputs[0]!.startsWith('present.'));
  if (!valueInfos(b, gFields, 11).has('attention_mask') || concats.length === 0) return null;
  for (const c of concats) if (c.attrs.size !== 1 || c.attrs.get('axis')?.i !== 2) return null;
  const first = concats[0]!;
  added.push(
    initializer(`${P}/i2`, INT64, [1], i64([2])),
    initializer(`${P}/shape_b111`, INT64, [4], i64([-1, 1, 1, 1])),
    initializer(`${P}/shape_1h11`, INT64, [4], i64([1, -1, 1, 1])),
    initializer(`${P}/room`, INT64, [4], i64([0, 0, 1, 0])),
  );
  // anything else that reads a past input may only take its shape: it then sees the length without the room (C - 1,
  // the exported graph's past length for a mask of length C)
  const concatOf = new Set(concats);
  for (const [name, readers] of consumers) {
    if (!name.startsWith('past_key_values.')) continue;
    for (const r of readers) {
      if (concatOf.has(r)) continue;
      if (r.op !== 'Shape' || r.attrs.size || r.inputs.length !== 1 || r.outputs.length !== 1) return null;
      const o = r.outputs[0]!;
      replace.set(r.field, msg(node('Shape', `${o}/with_room`, [name], [`${o}/with_room`]), node('Sub', `${o}/without_room`, [`${o}/with_room`, `${P}/room`], [o])));
    }
  }
  // indices [B, H, 1, 3] = (b, h, n_b), made once from the first layer's new key/value (every layer has the same B, H)
  const idx = msg(
    node('ReduceSum', `${P}/kv/len`, ['attention_mask', `${P}/axis1`], [`${P}/kv/len`], [intAttr('keepdims', 0)]),
    node('Sub', `${P}/kv/at`, [`${P}/kv/len`, `${P}/one64`], [`${P}/kv/at`]),
    node('Shape', `${P}/kv/shape`, [first.inputs[1]!], [`${P}/kv/shape`]),
    node('Slice', `${P}/kv/b`, [`${P}/kv/shape`, `${P}/i0`, `${P}/i1`], [`${P}/kv/nb`]),
    node('Slice', `${P}/kv/h`, [`${P}/kv/shape`, `${P}/i1`, `${P}/i2`], [`${P}/kv/nh`]),
    node('Squeeze', `${P}/kv/b0`, [`${P}/kv/nb`, `${P}/i0`], [`${P}/kv/nb0`]),
    node('Squeeze', `${P}/kv/h0`, [`${P}/kv/nh`, `${P}/i0`], [`${P}/kv/nh0`]),
    node('Range', `${P}/kv/brange`, [`${P}/zero64`, `${P}/kv/nb0`, `${P}/one64`], [`${P}/kv/br`]),
    node('Range', `${P}/kv/hrange`, [`${P}/zero64`, `${P}/kv/nh0`, `${P}/one64`], [`${P}/kv/hr`]),
    node('Reshape', `${P}/kv/b4`, [`${P}/kv/br`, `${P}/shape_b111`], [`${P}/kv/b4`]),
    node('Reshape', `${P}/kv/h4`, [`${P}/kv/hr`, `${P}/shape_1h11`], [`${P}/kv/h4`]),
    node('Reshape', `${P}/kv/n4`, [`${P}/kv/at`, `${P}/shape_b111`], [`${P}/kv/n4`]),
    node('Concat', `${P}/kv/bh1`, [`${P}/kv/nb`, `${P}/kv/nh`, `${P}/i1`, `${P}/i1`], [`${P}/kv/bh11`], [intAttr('axis', 0)]),
    node('Expand', `${P}/kv/bx`, [`${P}/kv/b4`, `${P}/kv/bh11`], [`${P}/kv/bx`]),
    node('Expand', `${P}/kv/hx`, [`${P}/kv/h4`, `${P}/kv/bh11`], [`${P}/kv/hx`]),
    node('Expand', `${P}/kv/nx`, [`${P}/kv/n4`, `${P}/kv/bh11`], [`${P}/kv/nx`]),
    node('Concat', `${P}/kv/idx`, [`${P}/kv/bx`, `${P}/kv/hx`, `${P}/kv/nx`], [`${P}/kv/idx`], [intAttr('axis', 3)]),
  );
  for (const c of concats) {
    const [past, fresh] = c.inputs as [string, string];
    const out = c.outputs[0]!;
    const declared = graphOutputs.get(out);
    if (!declared) return null;
    const row = out.replace(/^present\./, 'new_key_values.');
    // the full tensor keeps the present's name inside the graph (its readers stay as they are); the graph's output is
    // the new row
    replace.set(c.field, msg(...(c === first ? [idx] : []), node('ScatterND', `${out}/at_row_length`, [past, `${P}/kv/idx`, fresh], [out]), node('Identity', `${row}/out`, [fresh], [row])));
    replace.set(declared, ld(12, valueInfo(row, FLOAT, ['batch_size', 'num_key_value_heads', 1, 'head_dim'])));
  }
  return assemble();
}

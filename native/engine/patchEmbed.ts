/**
 * The vision encoder's patch embedding as a matrix product. A Qwen2-VL vision tower embeds each patch with a Conv3d
 * whose kernel is the whole patch (stride = kernel, no padding), so each output is one dot product of the patch's
 * C·T·H·W values with a filter: a matrix product of [patches, C·T·H·W] by [C·T·H·W, filters]. Quantized (q8), that
 * conv is a ConvInteger, which onnxruntime's CPU provider runs through its general im2col path, about twice as slow
 * as a MatMulInteger over the same uint8 values. The integer sums are exact either way, so the rewritten graph gives
 * the same bits (the engine also checks that on a probe image before it uses it; see QwenVLRuntime.load).
 *
 * `rewritePatchEmbed` edits the ONNX protobuf bytes directly: each such ConvInteger becomes Reshape → MatMulInteger →
 * Reshape with the filter transposed once, every other byte of the model is kept as it is. The reshapes take the
 * patch count from the input's shape, so an input that is not one patch per row fails loudly instead of mixing rows.
 */

/* ---- protobuf wire format, only what an ONNX graph edit needs ---- */

interface Field {
  no: number;
  wire: number;
  /** the whole field, key included */
  start: number;
  end: number;
  /** varint value (wire 0) */
  int?: bigint;
  /** payload bounds (wire 2) */
  p0?: number;
  p1?: number;
}

function readVarint(b: Uint8Array, at: number): [bigint, number] {
  let v = 0n;
  let shift = 0n;
  for (let i = at; i < b.length && shift < 70n; i++) {
    const x = b[i]!;
    v |= BigInt(x & 0x7f) << shift;
    if (!(x & 0x80)) return [v, i + 1];
    shift += 7n;
  }
  throw new Error('truncated varint');
}

function fields(b: Uint8Array, from = 0, to = b.length): Field[] {
  const out: Field[] = [];
  let at = from;
  while (at < to) {
    const start = at;
    const [key, a1] = readVarint(b, at);
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    at = a1;
    const f: Field = { no, wire, start, end: 0 };
    if (wire === 0) [f.int, at] = readVarint(b, at);
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const [len, a2] = readVarint(b, at);
      f.p0 = a2;
      f.p1 = a2 + Number(len);
      at = f.p1;
    } else throw new Error(`unsupported wire type ${wire}`);
    if (at > to) throw new Error('field runs past its message');
    f.end = at;
    out.push(f);
  }
  return out;
}

const utf8 = new TextDecoder();
const str = (b: Uint8Array, f: Field) => utf8.decode(b.subarray(f.p0!, f.p1!));

function varint(v: bigint | number): number[] {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  do {
    let byte = Number(x & 0x7fn);
    x >>= 7n;
    if (x) byte |= 0x80;
    out.push(byte);
  } while (x);
  return out;
}

const bytes = (parts: Array<Uint8Array | number[]>): Uint8Array => {
  const n = parts.reduce((a, p) => a + p.length, 0);
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const lenField = (no: number, payload: Uint8Array) => bytes([varint((no << 3) | 2), varint(payload.length), payload]);
const strField = (no: number, s: string) => lenField(no, new TextEncoder().encode(s));
const intField = (no: number, v: number | bigint) => bytes([varint(no << 3), varint(v)]);

/* ---- the ONNX messages used (field numbers from onnx.proto) ---- */

interface NodeInfo {
  inputs: string[];
  outputs: string[];
  name: string;
  op: string;
  domain: string;
  ints: Map<string, bigint[]>;
  intAttr: Map<string, bigint>;
}

function readInts(b: Uint8Array, f: Field): bigint[] {
  if (f.wire === 0) return [f.int!];
  const out: bigint[] = [];
  for (let at = f.p0!; at < f.p1!; ) {
    const [v, next] = readVarint(b, at);
    out.push(BigInt.asIntN(64, v));
    at = next;
  }
  return out;
}

function readNode(b: Uint8Array, f: Field): NodeInfo {
  const n: NodeInfo = { inputs: [], outputs: [], name: '', op: '', domain: '', ints: new Map(), intAttr: new Map() };
  for (const x of fields(b, f.p0, f.p1)) {
    if (x.no === 1 && x.wire === 2) n.inputs.push(str(b, x));
    else if (x.no === 2 && x.wire === 2) n.outputs.push(str(b, x));
    else if (x.no === 3 && x.wire === 2) n.name = str(b, x);
    else if (x.no === 4 && x.wire === 2) n.op = str(b, x);
    else if (x.no === 7 && x.wire === 2) n.domain = str(b, x);
    else if (x.no === 5 && x.wire === 2) {
      let name = '';
      const ints: bigint[] = [];
      let i: bigint | undefined;
      for (const a of fields(b, x.p0, x.p1)) {
        if (a.no === 1 && a.wire === 2) name = str(b, a);
        else if (a.no === 3 && a.wire === 0) i = BigInt.asIntN(64, a.int!);
        else if (a.no === 8) ints.push(...readInts(b, a));
      }
      if (ints.length) n.ints.set(name, ints);
      if (i !== undefined) n.intAttr.set(name, i);
    }
  }
  return n;
}

interface TensorInfo {
  name: string;
  dims: bigint[];
  dataType: number;
  raw: Uint8Array | null;
  /** values stored as int32_data (small integer tensors often are) */
  int32s: number;
  /** data kept outside the file (not handled here) */
  external: boolean;
}

function readTensor(b: Uint8Array, f: Field): TensorInfo {
  const t: TensorInfo = { name: '', dims: [], dataType: 0, raw: null, int32s: 0, external: false };
  for (const x of fields(b, f.p0, f.p1)) {
    if (x.no === 1) t.dims.push(...readInts(b, x));
    else if (x.no === 2 && x.wire === 0) t.dataType = Number(x.int!);
    else if (x.no === 8 && x.wire === 2) t.name = str(b, x);
    else if (x.no === 9 && x.wire === 2) t.raw = b.subarray(x.p0!, x.p1!);
    else if (x.no === 5) t.int32s += readInts(b, x).length;
    else if (x.no === 13 || (x.no === 14 && x.int === 1n)) t.external = true;
  }
  return t;
}

function nodeBytes(op: string, name: string, inputs: string[], outputs: string[]): Uint8Array {
  return lenField(1, bytes([...inputs.map((s) => strField(1, s)), ...outputs.map((s) => strField(2, s)), strField(3, name), strField(4, op)]));
}

function tensorBytes(name: string, dims: number[], dataType: number, raw: Uint8Array): Uint8Array {
  return lenField(5, bytes([...dims.map((d) => intField(1, d)), intField(2, dataType), strField(8, name), lenField(9, raw)]));
}

const int64Raw = (xs: number[]) => new Uint8Array(BigInt64Array.from(xs.map(BigInt)).buffer);

const UINT8 = 2;
const INT8 = 3;

/**
 * The model with every whole-patch ConvInteger replaced by a MatMulInteger (see the file comment), or null when it has
 * none (or anything about it is not the plain case: padding, dilation, groups, a per-channel zero point, weights
 * outside the file). Never throws on bytes it cannot read: those come back as null too.
 */
export function rewritePatchEmbed(model: Uint8Array): Uint8Array | null {
  try {
    return rewrite(model);
  } catch {
    return null;
  }
}

function rewrite(b: Uint8Array): Uint8Array | null {
  const top = fields(b);
  const gf = top.find((f) => f.no === 7 && f.wire === 2);
  if (!gf) return null;
  const gFields = fields(b, gf.p0, gf.p1);
  const inits = new Map<string, { field: Field; t: TensorInfo }>();
  for (const f of gFields) {
    if (f.no !== 5 || f.wire !== 2) continue;
    const t = readTensor(b, f);
    inits.set(t.name, { field: f, t });
  }
  const nodes = gFields.filter((f) => f.no === 1 && f.wire === 2).map((f) => ({ field: f, n: readNode(b, f) }));
  const replace = new Map<Field, Uint8Array>();
  const added: Uint8Array[] = [];
  const replacedWeights = new Set<string>();
  let k = 0;
  for (const { field, n } of nodes) {
    if (n.op !== 'ConvInteger' || (n.domain !== '' && n.domain !== 'ai.onnx') || n.inputs.length < 2 || n.outputs.length !== 1) continue;
    const [x, w, xzp = '', wzp = ''] = n.inputs as [string, string, string?, string?];
    const wi = inits.get(w)?.t;
    if (!wi || !wi.raw || wi.external || (wi.dataType !== UINT8 && wi.dataType !== INT8) || wi.dims.length < 3) continue;
    const dims = wi.dims.map(Number);
    const [O, C, ...kern] = dims as [number, number, ...number[]];
    const K = C * kern.reduce((a, v) => a * v, 1);
    if (wi.raw.length !== O * K) continue;
    const ks = n.ints.get('kernel_shape')?.map(Number) ?? kern;
    const st = n.ints.get('strides')?.map(Number) ?? [];
    const pads = n.ints.get('pads')?.map(Number) ?? [];
    const dil = n.ints.get('dilations')?.map(Number) ?? [];
    const same = (a: number[], e: number[]) => a.length === e.length && a.every((v, i) => v === e[i]);
    if (!same(ks, kern) || !same(st, kern) || !pads.every((p) => p === 0) || !dil.every((d) => d === 1) || (n.intAttr.get('group') ?? 1n) !== 1n) continue;
    if ([...n.intAttr.keys()].some((a) => a !== 'group') || [...n.ints.keys()].some((a) => !['kernel_shape', 'strides', 'pads', 'dilations'].includes(a))) continue;
    // the filter's zero point must be one value (MatMulInteger's per-column form would also do, but is not needed)
    if (wzp) {
      const z = inits.get(wzp)?.t;
      if (!z || z.dims.length > 1 || (z.dims.length === 1 && z.dims[0] !== 1n) || (z.raw ? z.raw.length : z.int32s) !== 1) continue;
    }
    // [O, K] → [K, O]
    const wt = new Uint8Array(O * K);
    for (let o = 0; o < O; o++) for (let j = 0; j < K; j++) wt[j * O + o] = wi.raw[o * K + j]!;
    const p = `${n.name || `conv${k}`}/as_matmul`;
    k++;
    const out = n.outputs[0]!;
    added.push(
      tensorBytes(`${p}/weight`, [K, O], wi.dataType, wt),
      tensorBytes(`${p}/k`, [1], 7, int64Raw([K])),
      tensorBytes(`${p}/o111`, [1 + kern.length], 7, int64Raw([O, ...kern.map(() => 1)])),
      tensorBytes(`${p}/zero`, [1], 7, int64Raw([0])),
      tensorBytes(`${p}/one`, [1], 7, int64Raw([1])),
    );
    // rows = shape(x)[0:1]; x → [rows, K] (fails unless each row is exactly one patch); y → [rows, O, 1, …]
    replace.set(
      field,
      bytes([
        nodeBytes('Shape', `${p}/shape`, [x], [`${p}/x_shape`]),
        nodeBytes('Slice', `${p}/rows`, [`${p}/x_shape`, `${p}/zero`, `${p}/one`], [`${p}/rows`]),
        concatNode(`${p}/in_shape`, [`${p}/rows`, `${p}/k`], `${p}/in_shape`),
        nodeBytes('Reshape', `${p}/flatten`, [x, `${p}/in_shape`], [`${p}/x2d`]),
        nodeBytes('MatMulInteger', `${p}/matmul`, [`${p}/x2d`, `${p}/weight`, xzp, wzp], [`${p}/y2d`]),
        concatNode(`${p}/out_shape`, [`${p}/rows`, `${p}/o111`], `${p}/out_shape`),
        nodeBytes('Reshape', `${p}/unflatten`, [`${p}/y2d`, `${p}/out_shape`], [out]),
      ]),
    );
    replacedWeights.add(w);
  }
  if (replace.size === 0) return null;
  // the conv filters nothing else reads are left out (onnxruntime would warn about them, and they take memory)
  const stillUsed = new Set(nodes.filter(({ field }) => !replace.has(field)).flatMap(({ n }) => n.inputs));
  const graph = bytes([
    ...gFields.flatMap((f) => {
      const r = replace.get(f);
      if (r) return [r];
      if (f.no === 5 && f.wire === 2) {
        const name = readTensor(b, f).name;
        if (replacedWeights.has(name) && !stillUsed.has(name)) return [];
      }
      return [b.subarray(f.start, f.end)];
    }),
    ...added,
  ]);
  return bytes(top.flatMap((f) => (f === gf ? [lenField(7, graph)] : [b.subarray(f.start, f.end)])));
}

function concatNode(name: string, inputs: string[], output: string): Uint8Array {
  const axis = lenField(5, bytes([strField(1, 'axis'), intField(3, 0), intField(20, 2 /* INT */)]));
  const body = bytes([...inputs.map((s) => strField(1, s)), strField(2, output), strField(3, name), strField(4, 'Concat'), axis]);
  return lenField(1, body);
}

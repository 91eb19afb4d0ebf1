/**
 * The vision encoder's patch embedding as a matrix product. A Qwen2-VL vision tower embeds each patch with a Conv3d
 * whose kernel is the whole patch (stride = kernel, no padding), so each output is one dot product of the patch's
 * C·T·H·W values with a filter: a matrix product of [patches, C·T·H·W] by [C·T·H·W, filters]. Quantized (q8), that
 * conv is a ConvInteger, which onnxruntime's CPU provider runs through its general im2col path, about twice as slow
 * as a MatMulInteger over the same uint8 values. The integer sums are exact either way, so the rewritten graph gives
 * the same bits (the engine also checks that on a probe image before it uses it; see QwenVLRuntime.load).
 *
 * `rewritePatchEmbed` edits the ONNX protobuf bytes directly: each such ConvInteger becomes Reshape → MatMulInteger →
 * Reshape with the filter transposed once, every other byte of the model is kept as it is (the protobuf pieces are
 * onnxProto.ts', shared with the other graph editors). The reshapes take the patch count from the input's shape, so
 * an input that is not one patch per row fails loudly instead of mixing rows.
 */
import { fields, intAttr, ld, msg, node, readNode, readTensor, tensorBytes, type Field, type TensorInfo } from './onnxProto';



const initializer = (name: string, dataType: number, dims: number[], raw: Uint8Array) => ld(5, tensorBytes(name, dataType, dims, raw));
const int64Raw = (xs: number[]) => new Uint8Array(BigInt64Array.from(xs.map(BigInt)).buffer);

const UINT8 = 2;
const INT8 = 3;
const INT64 = 7;

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
  const gFields = fields(b, gf.body![0], gf.body![1]);
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
    const ints = (a: string) => {
      const v = n.attrs.get(a)?.ints;
      return v?.length ? v.map(Number) : undefined;
    };
    const ks = ints('kernel_shape') ?? kern;
    const st = ints('strides') ?? [];
    const pads = ints('pads') ?? [];
    const dil = ints('dilations') ?? [];
    const same = (a: number[], e: number[]) => a.length === e.length && a.every((v, i) => v === e[i]);
    if (!same(ks, kern) || !same(st, kern) || !pads.every((p) => p === 0) || !dil.every((d) => d === 1) || (n.attrs.get('group')?.i ?? 1) !== 1) continue;
    const attrs = [...n.attrs];
    if (attrs.some(([a, v]) => v.i !== undefined && a !== 'group') || attrs.some(([a, v]) => v.ints.length > 0 && !['kernel_shape', 'strides', 'pads', 'dilations'].includes(a))) continue;
    // the filter's zero point must be one value (MatMulInteger's per-column form would also do, but is not needed)
    if (wzp) {
      const z = inits.get(wzp)?.t;
      if (!z || z.dims.length > 1 || (z.dims.length === 1 && z.dims[0] !== 1) || (z.raw ? z.raw.length : z.int32s.length) !== 1) continue;
    }
    // [O, K] → [K, O]
    const wt = new Uint8Array(O * K);
    for (let o = 0; o < O; o++) for (let j = 0; j < K; j++) wt[j * O + o] = wi.raw[o * K + j]!;
    const p = `${n.name || `conv${k}`}/as_matmul`;
    k++;
    const out = n.outputs[0]!;
    added.push(
      initializer(`${p}/weight`, wi.dataType, [K, O], wt),
      initializer(`${p}/k`, INT64, [1], int64Raw([K])),
      initializer(`${p}/o111`, INT64, [1 + kern.length], int64Raw([O, ...kern.map(() => 1)])),
      initializer(`${p}/zero`, INT64, [1], int64Raw([0])),
      initializer(`${p}/one`, INT64, [1], int64Raw([1])),
    );
    // rows = shape(x)[0:1]; x → [rows, K] (fails unless each row is exactly one patch); y → [rows, O, 1, …]
    replace.set(
      field,
      msg(
        node('Shape', `${p}/shape`, [x], [`${p}/x_shape`]),
        node('Slice', `${p}/rows`, [`${p}/x_shape`, `${p}/zero`, `${p}/one`], [`${p}/rows`]),
        node('Concat', `${p}/in_shape`, [`${p}/rows`, `${p}/k`], [`${p}/in_shape`], [intAttr('axis', 0)]),
        node('Reshape', `${p}/flatten`, [x, `${p}/in_shape`], [`${p}/x2d`]),
        node('MatMulInteger', `${p}/matmul`, [`${p}/x2d`, `${p}/weight`, xzp, wzp], [`${p}/y2d`]),
        node('Concat', `${p}/out_shape`, [`${p}/rows`, `${p}/o111`], [`${p}/out_shape`], [intAttr('axis', 0)]),
        node('Reshape', `${p}/unflatten`, [`${p}/y2d`, `${p}/out_shape`], [out]),
      ),
    );
    replacedWeights.add(w);
  }
  if (replace.size === 0) return null;
  // the conv filters nothing else reads are left out (onnxruntime would warn about them, and they take memory)
  const stillUsed = new Set(nodes.filter(({ field }) => !replace.has(field)).flatMap(({ n }) => n.inputs));
  const graph = msg(
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
  );
  return msg(...top.flatMap((f) => (f === gf ? [ld(7, graph)] : [b.subarray(f.start, f.end)])));
}


/**
 * The few protobuf pieces Loupe needs to read and write ONNX files without Python or the `onnx` package: a reader of
 * one message's fields (by byte range, so nothing is copied) and writers for length-delimited and varint fields.
 * Used by the analysis decoder (attentionGraph.ts), the fused decoder (fusedGraph.ts), the vision encoder's patch
 * embedding rewrite (patchEmbed.ts) and the batched decoder (rowQuant.ts).
 */

export interface Field {
  no: number;
  wire: number;
  /** Start of the tag; end of the whole field. */
  start: number;
  end: number;
  /** For length-delimited fields: the payload range. */
  body?: [number, number];
  value?: number;
}

export function varint(b: Uint8Array, i: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (;;) {
    if (i >= b.length) throw new Error('truncated varint');
    const x = b[i++]!;
    v += (x & 0x7f) * mul;
    if (!(x & 0x80)) return [v, i];
    mul *= 128;
    if (mul > 2 ** 63) throw new Error('varint too long');
  }
}

/** The fields of one protobuf message between `start` and `end`. */
export function fields(b: Uint8Array, start = 0, end = b.length): Field[] {
  const out: Field[] = [];
  let i = start;
  while (i < end) {
    const s = i;
    const [tag, j] = varint(b, i);
    i = j;
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) {
      const [v, k] = varint(b, i);
      out.push({ no, wire, start: s, end: k, value: v });
      i = k;
    } else if (wire === 2) {
      const [n, k] = varint(b, i);
      if (k + n > end) throw new Error(`field ${no} runs past its message`);
      out.push({ no, wire, start: s, end: k + n, body: [k, k + n] });
      i = k + n;
    } else if (wire === 5) {
      out.push({ no, wire, start: s, end: i + 4 });
      i += 4;
    } else if (wire === 1) {
      out.push({ no, wire, start: s, end: i + 8 });
      i += 8;
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
  }
  if (i !== end) throw new Error('message overruns its length');
  return out;
}

export const text = (b: Uint8Array, f: Field): string => Buffer.from(b.subarray(f.body![0], f.body![1])).toString('utf8');

/** What the graph editors read of a TensorProto (an initializer). */
export interface TensorInfo {
  name: string;
  dims: number[];
  dataType: number;
  /** raw_data, when the values are stored there */
  raw: Uint8Array | null;
  /** int32_data (small integer tensors often use it) */
  int32s: number[];
  /** data kept outside the file (not read here) */
  external: boolean;
}

/** TensorProto: dims 1, data_type 2, int32_data 5, name 8, raw_data 9, external_data 13, data_location 14. */
export function readTensor(b: Uint8Array, f: Field): TensorInfo {
  const tf = fields(b, f.body![0], f.body![1]);
  const name = tf.find((x) => x.no === 8 && x.wire === 2);
  const raw = tf.find((x) => x.no === 9 && x.wire === 2);
  return {
    name: name ? text(b, name) : '',
    dims: varints(b, tf, 1),
    dataType: tf.find((x) => x.no === 2 && x.wire === 0)?.value ?? 0,
    raw: raw ? b.subarray(raw.body![0], raw.body![1]) : null,
    int32s: varints(b, tf, 5),
    external: tf.some((x) => x.no === 13 || (x.no === 14 && x.value === 1)),
  };
}

/** The values of a repeated varint field, packed (wire 2) or not. */
export function varints(b: Uint8Array, fs: Field[], no: number): number[] {
  const out: number[] = [];
  for (const f of fs) {
    if (f.no !== no) continue;
    if (f.wire === 0) out.push(f.value!);
    else if (f.wire === 2) {
      let i = f.body![0];
      while (i < f.body![1]) {
        const [v, k] = varint(b, i);
        out.push(v);
        i = k;
      }
    }
  }
  return out;
}

export function encVarint(v: number): number[] {
  const out: number[] = [];
  // negative int64 values (an attribute such as axis = -1) are their 64-bit two's complement: ten bytes
  let x = v < 0 ? BigInt.asUintN(64, BigInt(v)) : BigInt(v);
  while (x >= 128n) {
    out.push(Number(x % 128n) | 0x80);
    x /= 128n;
  }
  out.push(Number(x));
  return out;
}
export const ld = (no: number, payload: Uint8Array): Uint8Array => Buffer.concat([Buffer.from(encVarint(no * 8 + 2)), Buffer.from(encVarint(payload.length)), payload]);
export const vi = (no: number, v: number): Uint8Array => Buffer.from([...encVarint(no * 8), ...encVarint(v)]);
export const str = (no: number, s: string): Uint8Array => ld(no, Buffer.from(s, 'utf8'));
export const msg = (...parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);

/** AttributeProto: an int (type 2). */
export const intAttr = (name: string, v: number): Uint8Array => ld(5, msg(str(1, name), vi(3, v), vi(20, 2)));
/** AttributeProto: a list of ints (type 7), one `ints` field (8) each. */
export const intsAttr = (name: string, v: number[]): Uint8Array => ld(5, msg(str(1, name), ...v.map((x) => vi(8, x)), vi(20, 7)));
/** AttributeProto: a float (type 1). */
export function floatAttr(name: string, v: number): Uint8Array {
  const f = Buffer.alloc(4);
  f.writeFloatLE(v);
  return ld(5, msg(str(1, name), Buffer.from([(2 << 3) | 5]), f, vi(20, 1)));
}
/** NodeProto (as GraphProto field 1). */
/** A NodeProto as the graph editors read it. */
export interface NodeInfo {
  field: Field;
  inputs: string[];
  outputs: string[];
  name: string;
  op: string;
  domain: string;
  /** Every attribute by name: its int (`i`, when set) and its ints (empty when none). */
  attrs: Map<string, { i?: number; ints: number[] }>;
}

/** NodeProto: input 1, output 2, name 3, op_type 4, attribute 5 (AttributeProto: name 1, i 3, ints 8), domain 7. */
export function readNode(b: Uint8Array, f: Field): NodeInfo {
  const n: NodeInfo = { field: f, inputs: [], outputs: [], name: '', op: '', domain: '', attrs: new Map() };
  for (const x of fields(b, f.body![0], f.body![1])) {
    if (x.no === 1 && x.wire === 2) n.inputs.push(text(b, x));
    else if (x.no === 2 && x.wire === 2) n.outputs.push(text(b, x));
    else if (x.no === 3 && x.wire === 2) n.name = text(b, x);
    else if (x.no === 4 && x.wire === 2) n.op = text(b, x);
    else if (x.no === 7 && x.wire === 2) n.domain = text(b, x);
    else if (x.no === 5 && x.wire === 2) {
      const af = fields(b, x.body![0], x.body![1]);
      const nameField = af.find((a) => a.no === 1 && a.wire === 2);
      const i = af.find((a) => a.no === 3 && a.wire === 0);
      n.attrs.set(nameField ? text(b, nameField) : '', { ...(i ? { i: i.value! } : {}), ints: varints(b, af, 8) });
    }
  }
  return n;
}

/** ValueInfoProto of a tensor: element type and dims (a string dim is a symbolic one). */
export function valueInfo(name: string, elem: number, dims: Array<number | string>): Uint8Array {
  const shape = msg(...dims.map((d) => ld(1, typeof d === 'number' ? vi(1, d) : str(2, d))));
  return msg(str(1, name), ld(2, ld(1, msg(vi(1, elem), ld(2, shape)))));
}

export function node(op: string, name: string, inputs: string[], outputs: string[], attrs: Uint8Array[] = [], domain = ''): Uint8Array {
  return ld(1, msg(...inputs.map((x) => str(1, x)), ...outputs.map((x) => str(2, x)), str(3, name), str(4, op), ...attrs, ...(domain ? [str(7, domain)] : [])));
}
/** TensorProto bytes (no field tag) of a small tensor: dims, data_type, raw_data. */
export function tensorBytes(name: string, dataType: number, dims: number[], raw: Uint8Array): Uint8Array {
  return msg(...dims.map((d) => vi(1, d)), vi(2, dataType), str(8, name), ld(9, raw));
}
export function int64Constant(name: string, values: number[]): Uint8Array {
  const raw = Buffer.alloc(values.length * 8);
  values.forEach((v, i) => raw.writeBigInt64LE(BigInt(v), i * 8));
  // TensorProto: dims (1), data_type (2) = INT64 (7), raw_data (9)
  const tensor = msg(...(values.length ? [vi(1, values.length)] : []), vi(2, 7), ld(9, raw));
  const attr = ld(5, msg(str(1, 'value'), ld(5, tensor), vi(20, 4)));
  return node('Constant', `${name}_node`, [], [name], [attr]);
}

/**
 * A model folder's config.json and the file names in its onnx/ folder, for the graph editors that add files beside
 * the exported decoder (`loupe convert --attention`, `--fused`). The errors name the folder and what is missing.
 */
export async function readModelFolder(modelDir: string): Promise<{ config: Record<string, unknown>; onnxDir: string; names: string[] }> {
  const { readFile, readdir } = await import('node:fs/promises');
  const path = await import('node:path');
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(await readFile(path.join(modelDir, 'config.json'), 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${modelDir}: cannot read config.json (${(e as Error).message}); is this a model folder?`);
  }
  const onnxDir = path.join(modelDir, 'onnx');
  try {
    return { config, onnxDir, names: await readdir(onnxDir) };
  } catch {
    throw new Error(`${modelDir}: no onnx/ folder (convert the checkpoint first)`);
  }
}

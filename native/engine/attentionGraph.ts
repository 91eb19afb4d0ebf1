/**
 * The analysis decoder: a copy of an exported `decoder_model_merged*.onnx` whose graph also outputs, per text layer,
 * the attention probabilities averaged over the heads (`attentions.{i}`: [batch, query positions, key positions],
 * float32). It sits beside the fast decoder as `decoder_model_merged_attn{suffix}.onnx`, so a normal run loads and
 * pays nothing; only an attention request opens it. The weights, and so the logits, are the fast decoder's.
 *
 * Made by editing the ONNX protobuf directly (no Python, no `onnx` package): the exporter in
 * models/make_tiny_qwen25vl.py writes one Softmax per text layer over [batch, kv heads, query groups, S, T]
 * (`Decoder.forward`; older exports: over [batch, heads, S, T]), in layer order; each is reshaped to
 * [batch, all heads, S, T], averaged over the heads (ReduceMean) and cast to float32, and the result is appended to
 * the graph's outputs. Protobuf repeated fields may appear anywhere in a message, so the new
 * nodes and outputs are appended to the GraphProto bytes and the graph's length prefix rewritten; nothing else moves.
 */
import { readFile, writeFile, rename } from 'node:fs/promises';
import { readModelFolder, fields, int64Constant, intAttr, ld, msg, node, str, text, vi } from './onnxProto';

/** Output name of layer i's head-averaged attention in the analysis decoder. */
export const attentionOutput = (layer: number): string => `attentions.${layer}`;
/** File stem of the analysis decoder (add the dtype suffix and `.onnx`). */
export const ATTN_DECODER = 'decoder_model_merged_attn';

/** ValueInfoProto for a float tensor of rank 3 with symbolic dims. */
function floatOutput(name: string): Uint8Array {
  const dim = (p: string) => ld(1, str(2, p));
  const shape = ld(2, msg(dim('batch_size'), dim('sequence_length'), dim('total_sequence_length')));
  return ld(12, msg(str(1, name), ld(2, ld(1, msg(vi(1, 1), shape)))));
}

export interface AttentionGraphInfo {
  /** Softmax nodes found (= text layers). */
  layers: number;
  opset: number;
}

/**
 * The analysis decoder's bytes from the fast decoder's. `layers`: the text layer count (config.json); the graph must
 * hold exactly that many Softmax nodes, else this is not an export it knows (an error says so).
 */
export function addAttentionOutputs(model: Uint8Array, layers: number): { bytes: Uint8Array; info: AttentionGraphInfo } {
  const top = fields(model);
  const graphs = top.filter((f) => f.no === 7 && f.wire === 2);
  if (graphs.length !== 1) throw new Error(`expected one graph in the ONNX model, found ${graphs.length}`);
  const g = graphs[0]!;
  let opset = 0;
  for (const f of top.filter((x) => x.no === 8 && x.wire === 2)) {
    const sub = fields(model, f.body![0], f.body![1]);
    const domain = sub.find((x) => x.no === 1 && x.wire === 2);
    const version = sub.find((x) => x.no === 2 && x.wire === 0);
    if ((!domain || text(model, domain) === '' || text(model, domain) === 'ai.onnx') && version) opset = version.value!;
  }
  if (!opset) throw new Error('the ONNX model declares no default-domain opset');
  const gf = fields(model, g.body![0], g.body![1]);
  const outputsExisting = new Set<string>();
  for (const f of gf.filter((x) => x.no === 12 && x.wire === 2)) {
    const name = fields(model, f.body![0], f.body![1]).find((x) => x.no === 1 && x.wire === 2);
    if (name) outputsExisting.add(text(model, name));
  }
  if (outputsExisting.has(attentionOutput(0))) throw new Error(`the model already has an ${attentionOutput(0)} output (is it an analysis decoder already?)`);
  const softmax: string[] = [];
  for (const f of gf.filter((x) => x.no === 1 && x.wire === 2)) {
    const nf = fields(model, f.body![0], f.body![1]);
    const op = nf.find((x) => x.no === 4 && x.wire === 2);
    if (op && text(model, op) === 'Softmax') {
      const out = nf.find((x) => x.no === 2 && x.wire === 2);
      if (!out) throw new Error('a Softmax node without an output');
      softmax.push(text(model, out));
    }
  }
  if (softmax.length !== layers) {
    throw new Error(
      `found ${softmax.length} Softmax node(s) in the decoder graph for ${layers} text layer(s): only decoders exported by Loupe's converter (loupe convert) can carry attention outputs`,
    );
  }
  const extra: Uint8Array[] = [];
  // Rank-agnostic: [batch, heads..., S, T] is reshaped to [batch, -1, S, T] and averaged over axis 1, so a decoder
  // whose Softmax runs over [B, H, S, T] (older exports) and one over [B, KV heads, groups, S, T] both work.
  const k = (n: string) => `loupe_attn_${n}`;
  extra.push(int64Constant(k('c0'), [0]), int64Constant(k('c1'), [1]), int64Constant(k('cm2'), [-2]), int64Constant(k('cend'), [2 ** 53]), int64Constant(k('cm1'), [-1]));
  if (opset >= 18) extra.push(int64Constant(k('axes'), [1]));
  softmax.forEach((s, i) => {
    const n = (x: string) => k(`${x}_${i}`);
    extra.push(node('Shape', n('shape_node'), [s], [n('shape')]));
    extra.push(node('Slice', n('batch_node'), [n('shape'), k('c0'), k('c1')], [n('batch')]));
    extra.push(node('Slice', n('st_node'), [n('shape'), k('cm2'), k('cend')], [n('st')]));
    extra.push(node('Concat', n('newshape_node'), [n('batch'), k('cm1'), n('st')], [n('newshape')], [intAttr('axis', 0)]));
    extra.push(node('Reshape', n('flat_node'), [s, n('newshape')], [n('flat')]));
    const attrs = [intAttr('keepdims', 0)];
    // ReduceMean takes its axes as an input from opset 18 on, as an attribute before
    const axesAttr = ld(5, msg(str(1, 'axes'), vi(8, 1), vi(20, 7)));
    extra.push(node('ReduceMean', n('mean_node'), opset >= 18 ? [n('flat'), k('axes')] : [n('flat')], [n('mean')], opset >= 18 ? attrs : [...attrs, axesAttr]));
    extra.push(node('Cast', n('cast_node'), [n('mean')], [attentionOutput(i)], [intAttr('to', 1)]));
  });
  for (let i = 0; i < layers; i++) extra.push(floatOutput(attentionOutput(i)));
  const graphBody = Buffer.concat([Buffer.from(model.subarray(g.body![0], g.body![1])), ...extra]);
  const bytes = Buffer.concat([Buffer.from(model.subarray(0, g.start)), ld(7, graphBody), Buffer.from(model.subarray(g.end))]);
  return { bytes, info: { layers, opset } };
}

/** Writes `dst` (atomically: a temp file renamed) as the analysis decoder of `src`. */
export async function writeAttentionDecoder(src: string, dst: string, layers: number): Promise<AttentionGraphInfo> {
  const { bytes, info } = addAttentionOutputs(await readFile(src), layers);
  const tmp = `${dst}.tmp-${process.pid}`;
  await writeFile(tmp, bytes);
  await rename(tmp, dst);
  return info;
}

/**
 * Adds an analysis decoder beside every fast decoder in a model folder (`onnx/decoder_model_merged{suffix}.onnx` →
 * `onnx/decoder_model_merged_attn{suffix}.onnx`); the text layer count comes from config.json. Returns what it wrote.
 */
export async function addAnalysisDecoders(modelDir: string): Promise<Array<{ file: string; bytes: number; layers: number }>> {
  const { stat } = await import('node:fs/promises');
  const path = await import('node:path');
  const { config, onnxDir, names } = await readModelFolder(modelDir);
  const cfg = config as { num_hidden_layers?: unknown; text_config?: { num_hidden_layers?: unknown } };
  const layers = cfg.text_config?.num_hidden_layers ?? cfg.num_hidden_layers;
  if (typeof layers !== 'number' || !(layers > 0)) throw new Error(`${modelDir}/config.json: no num_hidden_layers`);
  const fast = names.filter((n) => /^decoder_model_merged(_[a-z0-9]+)?\.onnx$/.test(n) && !n.startsWith(`${ATTN_DECODER}`));
  if (!fast.length) throw new Error(`${onnxDir}: no decoder_model_merged*.onnx`);
  const out: Array<{ file: string; bytes: number; layers: number }> = [];
  for (const n of fast.sort()) {
    const dst = path.join(onnxDir, n.replace('decoder_model_merged', ATTN_DECODER));
    await writeAttentionDecoder(path.join(onnxDir, n), dst, layers);
    out.push({ file: path.relative(modelDir, dst), bytes: (await stat(dst)).size, layers });
  }
  return out;
}

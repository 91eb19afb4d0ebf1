/**
 * Model folder checks for the local engine: is this a Qwen-VL model in the transformers.js layout, which precisions
 * are present, how big is it, and roughly how much memory will it take. Errors name the file and what to do.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { EngineDtype, EngineDtypeSpec } from '../types';

export const ONNX_PARTS = ['embed_tokens', 'vision_encoder', 'decoder_model_merged'] as const;
export type OnnxPart = (typeof ONNX_PARTS)[number];

/** transformers.js file suffix per dtype (`utils/dtypes.js`). */
export const DTYPE_SUFFIX: Record<EngineDtype, string> = {
  fp32: '',
  fp16: '_fp16',
  q8: '_quantized',
  int8: '_int8',
  uint8: '_uint8',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};

const SUPPORTED_TYPES = ['qwen2_5_vl', 'qwen2_vl', 'qwen3_vl'];
const PROCESSOR_CLASSES = ['Qwen2_5_VLProcessor', 'Qwen2VLProcessor', 'Qwen3VLProcessor'];

export interface ModelFolderReport {
  ok: boolean;
  dir: string;
  /** Problems that stop loading, each naming the file. */
  errors: string[];
  /** Things that load but may surprise (e.g. no generation_config.json). */
  warnings: string[];
  modelType?: string;
  /** dtypes for which all three ONNX parts (and their external data) are present. */
  dtypes: EngineDtype[];
  /** Bytes of every file in the folder (recursive one level into onnx/). */
  sizeBytes: number;
  /** Bytes of the ONNX files (+ external data) of each complete dtype. */
  dtypeBytes: Partial<Record<EngineDtype, number>>;
  /** Rough resident memory for `dtype` (weights × 1.2 + KV cache for `contextTokens`); undefined when not loadable. */
  memoryEstimateBytes?: number;
  /** When `dir` is not a model but one of its sub-folders is (a model's card folder with the weights in `model/`): that folder. */
  suggestion?: string;
  text?: { layers: number; kvHeads: number; headDim: number; hidden: number; vocab: number };
}

async function fileSize(p: string): Promise<number | null> {
  try {
    const s = await stat(p);
    return s.isFile() ? s.size : null;
  } catch {
    return null;
  }
}

async function readJson(dir: string, name: string, errors: string[]): Promise<Record<string, unknown> | null> {
  const p = path.join(dir, name);
  let raw: string;
  try {
    raw = await readFile(p, 'utf8');
  } catch {
    errors.push(`${name}: missing in ${dir}`);
    return null;
  }
  try {
    const v = JSON.parse(raw) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (e) {
    errors.push(`${name}: not valid JSON (${(e as Error).message}) in ${dir}`);
    return null;
  }
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function dtypeFor(spec: EngineDtypeSpec, part: OnnxPart): EngineDtype {
  return typeof spec === 'string' ? spec : (spec[part] ?? 'fp32');
}

/**
 * Checks a folder. `dtype` (default: the first complete one, else fp32) selects what must be present and what the
 * memory estimate is for.
 */
export async function validateModelFolder(
  dir: string,
  opts: { dtype?: EngineDtypeSpec; contextTokens?: number } = {},
): Promise<ModelFolderReport> {
  const errors: string[] = [];
  const warnings: string[] = [];
  const report: ModelFolderReport = { ok: false, dir, errors, warnings, dtypes: [], sizeBytes: 0, dtypeBytes: {} };
  try {
    const s = await stat(dir);
    if (!s.isDirectory()) {
      errors.push(`${dir}: not a folder`);
      return report;
    }
  } catch {
    errors.push(`${dir}: folder not found`);
    return report;
  }

  const config = await readJson(dir, 'config.json', errors);
  const pre = await readJson(dir, 'preprocessor_config.json', errors);
  const tokc = await readJson(dir, 'tokenizer_config.json', errors);
  const tok = await readJson(dir, 'tokenizer.json', errors);
  if ((await fileSize(path.join(dir, 'generation_config.json'))) === null) {
    warnings.push('generation_config.json: missing; generation stops only at the tokenizer eos token');
  }

  let imageTokenId: number | undefined;
  if (config) {
    const mt = config.model_type;
    report.modelType = typeof mt === 'string' ? mt : undefined;
    if (!SUPPORTED_TYPES.includes(String(mt))) {
      errors.push(`config.json: model_type is ${JSON.stringify(mt)}; the local engine runs ${SUPPORTED_TYPES.join(', ')}`);
    }
    imageTokenId = num(config.image_token_id);
    if (imageTokenId === undefined) errors.push('config.json: image_token_id missing (a Qwen-VL config has it at top level)');
    const vc = config.vision_config as Record<string, unknown> | undefined;
    if (!vc || typeof vc !== 'object') errors.push('config.json: vision_config missing');
    const tc = (config.text_config && typeof config.text_config === 'object' ? config.text_config : config) as Record<string, unknown>;
    const hidden = num(tc.hidden_size);
    const heads = num(tc.num_attention_heads);
    const layers = num(tc.num_hidden_layers);
    const kvHeads = num(tc.num_key_value_heads) ?? heads;
    const vocab = num(tc.vocab_size);
    if (hidden === undefined || heads === undefined || layers === undefined || vocab === undefined || kvHeads === undefined) {
      errors.push('config.json: text_config needs hidden_size, num_attention_heads, num_hidden_layers, vocab_size');
    } else {
      report.text = { layers, kvHeads, headDim: num(tc.head_dim) ?? hidden / heads, hidden, vocab };
    }
  }
  if (pre) {
    if (!PROCESSOR_CLASSES.includes(String(pre.processor_class))) {
      errors.push(
        `preprocessor_config.json: processor_class is ${JSON.stringify(pre.processor_class)}; set it to "Qwen2_5_VLProcessor" (without it transformers.js loads no tokenizer with the image processor)`,
      );
    }
    for (const k of ['patch_size', 'merge_size', 'temporal_patch_size']) {
      if (num(pre[k]) === undefined) errors.push(`preprocessor_config.json: ${k} missing`);
    }
  }
  if (tokc && !tokc.chat_template) {
    errors.push('tokenizer_config.json: chat_template missing (Qwen processors in transformers.js ignore chat_template.jinja; copy it into tokenizer_config.json)');
  }
  if (tok && imageTokenId !== undefined) {
    const added = Array.isArray(tok.added_tokens) ? (tok.added_tokens as Array<{ id?: number; content?: string }>) : [];
    const pad = added.find((t) => t.content === '<|image_pad|>');
    if (!pad) errors.push('tokenizer.json: no <|image_pad|> added token');
    else if (pad.id !== imageTokenId) {
      errors.push(`tokenizer.json: <|image_pad|> is id ${pad.id} but config.json image_token_id is ${imageTokenId} (tokenizer and model do not match)`);
    }
    const maxId = Math.max(-1, ...added.map((t) => t.id ?? -1));
    if (report.text && maxId >= report.text.vocab) {
      errors.push(`tokenizer.json: token id ${maxId} is outside the model's vocab_size ${report.text.vocab}`);
    }
  }

  // sizes and dtypes
  const onnxDir = path.join(dir, 'onnx');
  let onnxFiles: string[] = [];
  try {
    onnxFiles = await readdir(onnxDir);
  } catch {
    errors.push(`onnx/: missing in ${dir} (expected onnx/embed_tokens.onnx, onnx/vision_encoder.onnx, onnx/decoder_model_merged.onnx)`);
  }
  for (const f of await readdir(dir).catch(() => [] as string[])) report.sizeBytes += (await fileSize(path.join(dir, f))) ?? 0;
  for (const f of onnxFiles) report.sizeBytes += (await fileSize(path.join(onnxDir, f))) ?? 0;
  const ext = (config?.['transformers.js_config'] as Record<string, unknown> | undefined)?.use_external_data_format;
  const chunksFor = (file: string, part: string): number => {
    if (!ext) return 0;
    if (typeof ext === 'object') {
      const e = ext as Record<string, unknown>;
      return Number(e[file] ?? e[part] ?? 0);
    }
    return Number(ext);
  };
  const partial: string[] = [];
  for (const [dt, suffix] of Object.entries(DTYPE_SUFFIX) as Array<[EngineDtype, string]>) {
    let bytes = 0;
    const missing: string[] = [];
    for (const part of ONNX_PARTS) {
      const file = `${part}${suffix}.onnx`;
      const sz = onnxFiles.includes(file) ? await fileSize(path.join(onnxDir, file)) : null;
      if (sz === null) {
        missing.push(file);
        continue;
      }
      bytes += sz;
      for (let i = 0; i < chunksFor(file, part); i++) {
        const data = `${file}_data${i === 0 ? '' : `_${i}`}`;
        const dsz = await fileSize(path.join(onnxDir, data));
        if (dsz === null) missing.push(`${data} (config.json transformers.js_config.use_external_data_format names it)`);
        else bytes += dsz;
      }
    }
    if (missing.length === 0) {
      report.dtypes.push(dt);
      report.dtypeBytes[dt] = bytes;
    } else if (missing.length < ONNX_PARTS.length) partial.push(`${dt}: missing onnx/${missing.join(', onnx/')}`);
  }
  const want = opts.dtype ?? report.dtypes[0] ?? 'fp32';
  const needMissing: string[] = [];
  let weightBytes = 0;
  for (const part of ONNX_PARTS) {
    const dt = dtypeFor(want, part);
    const file = `${part}${DTYPE_SUFFIX[dt] ?? ''}.onnx`;
    if (!(dt in DTYPE_SUFFIX)) needMissing.push(`${part}: unknown dtype ${JSON.stringify(dt)}`);
    else if (!onnxFiles.includes(file)) needMissing.push(`onnx/${file}`);
    else {
      weightBytes += (await fileSize(path.join(onnxDir, file))) ?? 0;
      for (let i = 0; i < chunksFor(file, part); i++) {
        const data = `${file}_data${i === 0 ? '' : `_${i}`}`;
        const dsz = await fileSize(path.join(onnxDir, data));
        if (dsz === null) needMissing.push(`onnx/${data}`);
        else weightBytes += dsz;
      }
    }
  }
  if (onnxFiles.length && needMissing.length) {
    const have = report.dtypes.length ? `present: ${report.dtypes.join(', ')}` : 'no dtype is complete';
    errors.push(`onnx/: dtype ${JSON.stringify(want)} needs ${needMissing.join(', ')} (${have}${partial.length ? `; ${partial.join('; ')}` : ''})`);
  }
  if (errors.length === 0 && report.text) {
    const ctx = opts.contextTokens ?? 8192;
    const kv = report.text.layers * 2 * report.text.kvHeads * report.text.headDim * 4 * ctx;
    report.memoryEstimateBytes = Math.round(weightBytes * 1.2 + kv);
  }
  report.ok = errors.length === 0;
  if (!report.ok && config === null) {
    const sub = await modelSubfolder(dir);
    if (sub) {
      report.suggestion = sub;
      // Every file of the model would be listed as missing here; the one useful line is where the model is.
      errors.splice(0, errors.length, `${dir} holds no model itself, but ${sub} does: use that folder`);
      warnings.length = 0;
    }
  }
  return report;
}

/** The first sub-folder (name order) that has a config.json and an onnx/ folder: where a card folder keeps its weights. */
export async function modelSubfolder(dir: string): Promise<string | null> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name);
  } catch {
    return null;
  }
  for (const n of names.sort()) {
    const sub = path.join(dir, n);
    if ((await fileSize(path.join(sub, 'config.json'))) !== null && (await stat(path.join(sub, 'onnx')).then((s) => s.isDirectory()).catch(() => false))) return sub;
  }
  return null;
}

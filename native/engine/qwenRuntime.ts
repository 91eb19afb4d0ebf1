/**
 * The local Qwen2.5-VL-family runtime over transformers.js + onnxruntime-node. It runs inside the engine worker (or
 * in-thread for tests, the bench and `serve-model`).
 *
 * transformers.js' own `generate()` cannot serve Loupe: its processor takes one image per call, its cached-turn path
 * drops new images (`prepare_inputs_for_generation` nulls `pixel_values` once a cache exists), and it has no stop
 * strings or cancel. So this file keeps transformers.js for what it does well — tokenizer, chat template, image
 * processor, ONNX sessions and `model.forward` (embed → vision → merge → decoder) — and drives the loop itself:
 * per-image preprocessing with the caller's MIN/MAX_PIXELS, `<|image_pad|>` expansion per image, the vision encoder
 * run once per image (the exported encoder takes one image's grid), mrope positions from `get_rope_index` over the
 * whole conversation, a KV cache kept across turns (longest safe shared prefix), sampling, stop strings and cancel.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { AutoModelForImageTextToText, AutoProcessor, RawImage, Tensor, cat, env } from '@huggingface/transformers';
import onnxruntime from 'onnxruntime-node';
import type { AttentionRequest, AttentionResult, RgbPixels, EngineDevice, EngineDtype, EngineDtypeSpec, EngineImage, EngineInfo, GenerateResult } from '../../app/engines/types';
import { SMALL_MODEL_BYTES } from '../../app/engines/local/protocol';
import type { LoadOptions, WireGenerateRequest } from '../../app/engines/local/protocol';
import { EngineError } from '../../app/engines/errors';
import { explainDeviceError } from './deviceErrors';
import {
  collectImages,
  expandImagePads,
  imageRuns,
  reusablePrefix,
  toTemplateMessages,
  videoBlocksToImages,
  videoFrameCounts,
  IMAGE_PAD,
} from '../../app/engines/local/prompt';
import { StopStrings, sampleToken, seededRandom } from '../../app/engines/local/sampling';
import { DTYPE_SUFFIX, validateModelFolder } from '../../app/engines/local/modelFolder';
import { ATTN_DECODER, attentionOutput } from './attentionGraph';
import { FUSED_DECODER, textConfig } from './fusedGraph';
import { rewritePatchEmbed } from './patchEmbed';
import { loadDecodeBatcher, setBufferFreer, type DecodeBatcher, type SoloKv } from './decodeBatch';

/* The slices of transformers.js' untyped-at-runtime objects this file uses. */
type AnyTensor = Tensor;
interface Tok {
  encode(text: string, opts?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], opts?: { skip_special_tokens?: boolean }): string;
  apply_chat_template(messages: unknown[], opts: Record<string, unknown>): unknown;
  eos_token_id?: number;
  model: { convert_tokens_to_ids?(t: string[]): Array<number | undefined> };
}
interface ImageProc {
  (images: unknown): Promise<{ pixel_values: AnyTensor; image_grid_thw: AnyTensor }>;
  min_pixels: number;
  max_pixels: number;
  config: { merge_size?: number; patch_size?: number; temporal_patch_size?: number };
  resize(image: RawImage): Promise<RawImage>;
  do_convert_rgb?: boolean;
  do_resize?: boolean;
  do_rescale?: boolean;
  rescale_factor?: number;
  do_normalize?: boolean;
  image_mean?: number | number[];
  image_std?: number | number[];
  do_crop_margin?: boolean;
  do_thumbnail?: boolean;
  do_center_crop?: boolean;
  do_pad?: boolean;
  do_flip_channel_order?: boolean;
}
interface Proc {
  tokenizer: Tok;
  image_processor: ImageProc;
}
interface QwenModel {
  config: { image_token_id: number; model_type: string; text_config?: { vocab_size?: number } };
  generation_config?: { eos_token_id?: number | number[] };
  forward(inputs: Record<string, unknown>): Promise<Record<string, AnyTensor>>;
  get_rope_index(ids: AnyTensor, image_grid_thw: AnyTensor | null, video_grid_thw: AnyTensor | null, mask: AnyTensor): [AnyTensor, AnyTensor];
  encode_image(args: { pixel_values: AnyTensor; image_grid_thw: AnyTensor }): Promise<AnyTensor>;
  encode_text(args: { input_ids: AnyTensor }): Promise<AnyTensor>;
  sessions: Record<string, { run(feeds: Record<string, unknown>): Promise<Record<string, unknown>> }>;
  dispose(): Promise<unknown>;
}

interface PreparedImage {
  key: string;
  pixelValues: AnyTensor;
  grid: [number, number, number];
  tokens: number;
}

interface KvState {
  ids: number[];
  /** Tokens of `ids` that were the request's prompt (the rest were generated): only a continuation reuses the cache. */
  promptLength: number;
  imageKeys: string[];
  past: Record<string, AnyTensor>;
}

/** A request being generated: its prompt, its sampling state, its next-token logits and (decoding alone) its KV. */
interface Seq {
  req: WireGenerateRequest;
  hooks: RuntimeHooks;
  ids: number[];
  L: number;
  delta: number;
  keys: string[];
  reused: number;
  t0: number;
  t1: number;
  rand: () => number;
  stops: StopStrings;
  generated: number[];
  emitted: number;
  text: string;
  finish: GenerateResult['finishReason'];
  stream: boolean;
  /** Next-token logits: row `offset .. offset + V` of `logits` (a buffer the next step overwrites). */
  logits: Float32Array;
  offset: number;
  V: number;
  /** The last step's whole output when it decoded alone (its presents become `past` once sampled). */
  out: Record<string, AnyTensor> | null;
  /** Its KV when it decodes alone; null while it is a row of the batch. */
  past: Record<string, AnyTensor> | null;
  failed: boolean;
  /**
   * Greedy turns on a decoder with the decode loop (fused, CUDA): each run also computes the next tokens on the device
   * (`ahead`: the argmax of its logits, then one token a step); they are taken one by one (`pending`), exactly as if
   * sampled here. Never with batching (that is the exported q8 decoder on the CPU).
   */
  loop: boolean;
  chunk: number;
  ahead: { tokens: number[]; fed: number } | null;
  pending: number[];
  resolve: (r: GenerateResult) => void;
  reject: (e: unknown) => void;
}

export interface RuntimeHooks {
  onToken?: (delta: string) => void;
  isCancelled?: () => boolean;
  /** Each step's next-token logits, before sampling (a view into a buffer the next step overwrites: copy to keep). */
  onLogits?: (row: Float32Array) => void;
}

const i64 = (xs: ArrayLike<number | bigint>, dims: number[]) =>
  new Tensor('int64', BigInt64Array.from(Array.from(xs, (x) => BigInt(x))), dims);
/** The onnxruntime tensor inside a transformers.js tensor. */
const ort = (t: AnyTensor): unknown => (t as unknown as { ort_tensor: unknown }).ort_tensor;
/** The slice of onnxruntime's InferenceSession that decodeStep uses (fetches: outputs written into given tensors). */
interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  run(feeds: Record<string, unknown>, fetches: Record<string, unknown>): Promise<Record<string, unknown>>;
}
/** A KV buffer: float32, or float16 as 16-bit words (onnxruntime's Float16Array or Uint16Array). */
type KvArray = Float32Array | Uint16Array;
type KvArrayCtor = new (n: number) => KvArray;
/** An all-ones int64 [1, n] attention mask. */
const ones = (n: number) => new Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);

/** Embedding tables up to this many floats are read once and looked up in JS (a session run per token costs more). */
const EMBED_TABLE_MAX_FLOATS = 16 * 2 ** 20;

/**
 * Greedy tokens a decode-loop run computes ahead (FuseOptions.decodeLoop): the first run of a turn takes 8, each next
 * one twice as many up to 32. A turn that stops early (end of turn, a stop string) wastes at most that many steps; a
 * longer one pays the host copies of the KV cache once per run instead of once per token.
 */
const LOOP_CHUNK_FIRST = 8;
const LOOP_CHUNK_MAX = 32;

/**
 * The fused decoder with the decode loop, as transformers.js sees it: without the `steps` input (fed 0: a plain
 * forward pass) and the `tokens` output, so `model.forward` runs it as it runs any decoder.
 */
function withoutSteps(s: onnxruntime.InferenceSession): onnxruntime.InferenceSession {
  const zero = new onnxruntime.Tensor('int64', [0n], []);
  return new Proxy(s, {
    get(t, key) {
      if (key === 'inputNames') return t.inputNames.filter((n) => n !== 'steps');
      if (key === 'outputNames') return t.outputNames.filter((n) => n !== 'tokens');
      if (key === 'inputMetadata') return t.inputMetadata.filter((m) => m.name !== 'steps');
      if (key === 'outputMetadata') return t.outputMetadata.filter((m) => m.name !== 'tokens');
      if (key === 'run') {
        return async (feeds: Record<string, unknown>, ...rest: unknown[]) => {
          const out = await (t.run as (...a: unknown[]) => Promise<Record<string, unknown>>)({ ...feeds, steps: zero }, ...rest);
          delete out['tokens'];
          return out;
        };
      }
      const v = Reflect.get(t, key, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

export class QwenVLRuntime {
  private cache: KvState | null = null;
  /**
   * The KV of the last prompt's head (its text before the first image: the system prompt, the user turn's opening),
   * always prefilled as a chunk of its own, so a new request with the same head reuses it and still computes exactly
   * what a fresh engine computes (see reusablePrefix: another chunking changes q8's numbers).
   */
  private head: { ids: number[]; past: Record<string, AnyTensor> } | null = null;
  private readonly images = new Map<string, PreparedImage>();
  /** Decode steps on reused output buffers (see decodeStep); 'off' after an export it cannot handle. */
  private kvReuse: 'on' | 'off' = 'on';
  private readonly arena = { kv: new Map<string, [KvArray, KvArray]>(), logits: new Float32Array(0), mask: new BigInt64Array(0) };
  private queue: Promise<unknown> = Promise.resolve();
  /** The fused decoder with the decode loop (`loupe convert --fused`, unless --no-decode-loop), run directly for greedy turns. */
  private loopSession: onnxruntime.InferenceSession | null = null;
  /** Batched decode steps (LoadOptions.batch), when the decoder allows them exactly; else null. */
  private batcher: DecodeBatcher | null = null;
  private readonly waiting: Array<{ req: WireGenerateRequest; hooks: RuntimeHooks; resolve: (r: GenerateResult) => void; reject: (e: unknown) => void }> = [];
  private scheduling = false;
  /** The analysis decoder (attention outputs), opened on the first attention request only. */
  private attnSession: Promise<onnxruntime.InferenceSession> | null = null;

  private constructor(
    private readonly processor: Proc,
    private readonly model: QwenModel,
    readonly info: EngineInfo,
    private readonly kvCache: boolean,
    private readonly eos: Set<number>,
  ) {
    // The exported vision encoder takes one image's grid per call (as the onnx-community exports do): run it per
    // image and concatenate, instead of sending all images at once.
    const encodeOne = model.encode_image.bind(model);
    model.encode_image = async ({ pixel_values, image_grid_thw }) => {
      const grids = image_grid_thw.tolist() as bigint[][];
      if (grids.length <= 1) return encodeOne({ pixel_values, image_grid_thw });
      const feats: AnyTensor[] = [];
      let row = 0;
      for (const g of grids) {
        const n = Number(g[0]) * Number(g[1]) * Number(g[2]);
        feats.push(await encodeOne({ pixel_values: pixel_values.slice([row, row + n], null), image_grid_thw: i64(g, [1, 3]) }));
        row += n;
      }
      return cat(feats, 0);
    };
  }

  /**
   * Replaces the embed_tokens session by a lookup in its own output for every id, when the table is small (loupe-tiny:
   * 819 × 384). Each row is what the session gives for that id alone (a Gather: rows do not depend on each other), so
   * the numbers are the same; a decode step then skips one session run. Large vocabularies keep the session.
   */
  private async tableEmbeddings(vocab: number | undefined): Promise<void> {
    if (!vocab || vocab < 1) return;
    const encode = this.model.encode_text.bind(this.model);
    const all = await encode({ input_ids: i64(Array.from({ length: vocab }, (_, i) => i), [1, vocab]) });
    const D = all.dims.at(-1)!;
    if (all.type !== 'float32' || all.dims.length !== 3 || vocab * D > EMBED_TABLE_MAX_FLOATS) return;
    const table = all.data as Float32Array;
    this.model.encode_text = async ({ input_ids }) => {
      const ids = input_ids.data as BigInt64Array;
      const out = new Float32Array(ids.length * D);
      for (let i = 0; i < ids.length; i++) {
        const id = Number(ids[i]);
        if (!(id >= 0 && id < vocab)) return encode({ input_ids });
        out.set(table.subarray(id * D, (id + 1) * D), i * D);
      }
      return new Tensor('float32', out, [...input_ids.dims, D]);
    };
  }

  /** Validates the folder, loads processor + model on the requested device, falling back to CPU with the reason. */
  static async load(opts: LoadOptions): Promise<QwenVLRuntime> {
    const dir = path.resolve(opts.modelDir);
    const requested: EngineDevice = opts.device ?? 'cpu';
    // No dtype asked for: the most precise one the folder has (fp32, fp16, q8, q4) — a folder shipped as q8 only
    // (loupe-tiny) loads as it is rather than failing on missing fp32 files.
    let dtype: EngineDtypeSpec = opts.dtype ?? 'fp32';
    if (opts.dtype === undefined) {
      const present = (await validateModelFolder(dir)).dtypes;
      dtype = (['fp32', 'fp16', 'q8', 'q4'] as const).find((d) => present.includes(d)) ?? 'fp32';
    }
    const report = await validateModelFolder(dir, { dtype });
    if (!report.ok) throw new EngineError('model_folder', report.errors.join('\n'));
    const threads = intraOpThreads(opts.threads, dtype, report.dtypeBytes);
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = '';
    let processor: Proc;
    try {
      processor = (await AutoProcessor.from_pretrained(dir)) as unknown as Proc;
    } catch (e) {
      throw new EngineError('load', `${dir}: could not load the processor/tokenizer: ${(e as Error).message}`, { cause: e });
    }
    // LOUPE_ORT_PROFILE=PREFIX: onnxruntime's profiler on for every session (a JSON trace per session, named
    // PREFIX_<date>.json, written when the session ends; models/ort_profile_summary.py sums them). A diagnostic switch.
    const profile = process.env.LOUPE_ORT_PROFILE;
    const sessionOptions = {
      ...(threads ? { intraOpNumThreads: threads } : {}),
      ...(profile ? { enableProfiling: true, profileFilePrefix: profile } : {}),
      ...extraSessionOptions(),
    };
    // The fused decoder (LoadOptions.decoder): transformers.js names its session files itself, so the exported decoder
    // loads first and its session is then replaced by one on the fused file, with the same inputs and outputs.
    const decoderDtype = typeof dtype === 'string' ? dtype : (dtype.decoder_model_merged ?? 'fp32');
    const fusedFile = path.join(dir, 'onnx', `${FUSED_DECODER}${DTYPE_SUFFIX[decoderDtype]}.onnx`);
    const haveFused = await stat(fusedFile).then(
      () => true,
      () => false,
    );
    const wantDecoder = opts.decoder ?? 'auto';
    if (wantDecoder === 'fused' && !haveFused) {
      throw new EngineError('model_folder', `${dir}: no fused decoder (onnx/${path.basename(fusedFile)}); add one with \`loupe convert --fused ${dir}\``);
    }
    const loaded: { decoder: 'fused' | 'exported'; loop: onnxruntime.InferenceSession | null } = { decoder: 'exported', loop: null };
    const tryLoad = async (device: EngineDevice): Promise<QwenModel> => {
      const m = (await AutoModelForImageTextToText.from_pretrained(dir, {
        device,
        dtype: dtype as never,
        ...(Object.keys(sessionOptions).length ? { session_options: sessionOptions } : {}),
      })) as unknown as QwenModel;
      loaded.decoder = 'exported';
      loaded.loop = null;
      if (wantDecoder === 'fused' || (wantDecoder === 'auto' && haveFused && device === 'cuda')) {
        const exported = m.sessions['decoder_model_merged'] as unknown as { release?: () => Promise<void> } | undefined;
        const fused = await onnxruntime.InferenceSession.create(fusedFile, {
          executionProviders: [device] as never,
          ...sessionOptions,
        });
        // a fused decoder with the decode loop: transformers.js runs its plain forward pass (steps = 0), greedy turns
        // run it directly (decodeLoop)
        if (fused.inputNames.includes('steps') && fused.outputNames.includes('tokens')) loaded.loop = fused;
        m.sessions['decoder_model_merged'] = (loaded.loop ? withoutSteps(fused) : fused) as never;
        await exported?.release?.();
        loaded.decoder = 'fused';
      }
      // a one-token smoke run: a provider that loads but cannot execute fails here, not mid-answer
      await m.encode_text({ input_ids: i64([0], [1, 1]) });
      return m;
    };
    let model: QwenModel;
    let device = requested;
    let fallbackReason: string | undefined;
    let fallbackDetails: string | undefined;
    try {
      model = await tryLoad(requested);
    } catch (e) {
      if (requested === 'cpu') throw new EngineError('load', `${dir}: could not load the ONNX model: ${(e as Error).message}`, { cause: e });
      // One line for people (the Models table, the status bar, the CLI's warning); onnxruntime's text kept apart.
      fallbackDetails = (e as Error).message.trim();
      fallbackReason = `device '${requested}' unavailable: ${explainDeviceError(requested, fallbackDetails)}`;
      device = 'cpu';
      try {
        model = await tryLoad('cpu');
      } catch (e2) {
        throw new EngineError('load', `${dir}: could not load the ONNX model on '${requested}' or 'cpu': ${(e2 as Error).message}`, { cause: e2 });
      }
    }
    const eos = new Set<number>();
    const g = model.generation_config?.eos_token_id;
    for (const x of Array.isArray(g) ? g : g === undefined ? [] : [g]) eos.add(x);
    const te = processor.tokenizer.eos_token_id;
    if (typeof te === 'number') eos.add(te);
    const info: EngineInfo = {
      id: `local:${path.basename(dir)}`,
      kind: 'local',
      model: dir,
      device,
      dtype,
      threads,
      ...(loaded.decoder === 'fused' ? { decoder: loaded.decoder } : {}),
      ...(loaded.loop ? { decodeLoop: true } : {}),
      ...(fallbackReason ? { requestedDevice: requested, fallbackReason, ...(fallbackDetails ? { fallbackDetails } : {}) } : {}),
    };
    if (device === 'cpu') await matmulPatchEmbed(model, processor.image_processor, dir, dtype, sessionOptions);
    const rt = new QwenVLRuntime(processor, model, info, opts.kvCache ?? true, eos);
    rt.loopSession = loaded.loop;
    await rt.tableEmbeddings(model.config.text_config?.vocab_size);
    if (device === 'cpu' && threads === 1 && (opts.batch ?? 1) > 1 && loaded.decoder === 'exported') {
      rt.batcher = await batchedDecoder(model, dir, decoderDtype, Math.floor(opts.batch!), sessionOptions);
      if (rt.batcher) rt.info.batch = rt.batcher.rows;
    }
    return rt;
  }

  get tokenizer(): Tok {
    return this.processor.tokenizer;
  }

  /** The chat template's rendering of a conversation (videos as frames), ready for generation. */
  renderPrompt(req: Pick<WireGenerateRequest, 'messages' | 'prompt'>): string {
    if (req.prompt !== undefined) return videoBlocksToImages(req.prompt, videoFrameCounts(req.messages));
    const msgs = toTemplateMessages(req.messages);
    const last = msgs.at(-1);
    // a trailing assistant message is a prefix to continue, not a finished turn
    if (last && last.role === 'assistant') {
      const head = this.tokenizer.apply_chat_template(msgs.slice(0, -1), { tokenize: false, add_generation_prompt: true }) as string;
      return head + last.content.map((c) => c.text ?? '').join('');
    }
    return this.tokenizer.apply_chat_template(msgs, { tokenize: false, add_generation_prompt: true }) as string;
  }

  private async prepareImage(img: EngineImage, minPixels?: number, maxPixels?: number): Promise<PreparedImage> {
    let key: string;
    let source: RgbPixels | string;
    if (img.path === undefined) {
      // A held image comes as its pixels: the same RGB a decode of its PNG gives, without the file or the decode.
      const rgb = img.rgb ?? (img.pixels ? await img.pixels() : undefined);
      if (!rgb || rgb.data.length !== rgb.width * rgb.height * 3) throw new EngineError('bad_request', `image ${img.id} has neither a file nor whole RGB pixels`);
      source = rgb;
      // Held ids are random and never reused for other pixels.
      key = `${img.id}|${minPixels ?? ''}|${maxPixels ?? ''}`;
    } else {
      let st;
      try {
        st = await stat(img.path);
      } catch {
        throw new EngineError('bad_request', `image ${img.id} not found at ${img.path}`);
      }
      source = img.path;
      key = `${img.path}|${st.size}|${st.mtimeMs}|${minPixels ?? ''}|${maxPixels ?? ''}`;
    }
    const hit = this.images.get(key);
    if (hit) return hit;
    const ip = this.processor.image_processor;
    const saved = [ip.min_pixels, ip.max_pixels] as const;
    let out;
    try {
      if (minPixels !== undefined) ip.min_pixels = minPixels;
      if (maxPixels !== undefined) ip.max_pixels = maxPixels;
      const raw = typeof source === 'string' ? await RawImage.read(source) : new RawImage(source.data, source.width, source.height, 3);
      out = (await qwenPatches(ip, raw)) ?? (await ip(raw));
    } catch (e) {
      throw new EngineError('bad_request', `image ${img.id} (${img.path ?? 'held in memory'}) could not be preprocessed: ${(e as Error).message}`, { cause: e });
    } finally {
      [ip.min_pixels, ip.max_pixels] = saved;
    }
    const g = (out.image_grid_thw.tolist() as bigint[][])[0]!.map(Number) as [number, number, number];
    const merge = ip.config.merge_size ?? 2;
    const p: PreparedImage = { key, pixelValues: out.pixel_values, grid: g, tokens: (g[0] * g[1] * g[2]) / (merge * merge) };
    if (this.images.size >= 64) this.images.delete(this.images.keys().next().value!);
    this.images.set(key, p);
    return p;
  }

  /** Prompt token ids exactly as `generate` would feed them (image pads expanded). */
  async encode(req: WireGenerateRequest): Promise<{ ids: number[]; images: PreparedImage[] }> {
    const prompt = this.renderPrompt(req);
    const imgs = collectImages(req.messages);
    const prepared: PreparedImage[] = [];
    for (const im of imgs) prepared.push(await this.prepareImage(im, req.minPixels, req.maxPixels));
    const ids = this.tokenizer.encode(expandImagePads(prompt, prepared.map((p) => p.tokens)), { add_special_tokens: false });
    const runs = imageRuns(ids, this.model.config.image_token_id);
    const want = prepared.reduce((a, p) => a + p.tokens, 0);
    const got = runs.reduce((a, [s, e]) => a + e - s, 0);
    if (runs.length !== prepared.length || got !== want) {
      throw new EngineError('bad_request', `tokenized prompt holds ${runs.length} image run(s) of ${got} tokens; expected ${prepared.length} of ${want} (is ${IMAGE_PAD} written inside other text?)`);
    }
    return { ids, images: prepared };
  }

  /**
   * Requests run one at a time (one model, one cache), unless the engine batches decode steps (LoadOptions.batch):
   * then requests that arrive while others decode are prefilled between steps and join them (see `schedule`).
   */
  generate(req: WireGenerateRequest, hooks: RuntimeHooks = {}): Promise<GenerateResult> {
    if (this.batcher) {
      return new Promise((resolve, reject) => {
        this.waiting.push({ req, hooks, resolve, reject });
        if (!this.scheduling) {
          this.scheduling = true;
          const run = this.queue.then(() => this.schedule());
          this.queue = run.catch(() => undefined);
        }
      });
    }
    const run = this.queue.then(() => this.generateNow(req, hooks));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async generateNow(req: WireGenerateRequest, hooks: RuntimeHooks): Promise<GenerateResult> {
    const s = await this.startSeq(req, hooks);
    while (!this.advance(s)) await this.soloStep(s);
    return this.finishSeq(s);
  }

  /**
   * Continuous batching of decode steps: every request waiting is prefilled (one at a time, in arrival order, up to
   * the batch's rows), then one step decodes all requests in flight together, each sampling its own next token from
   * its own row; a request leaves as soon as it ends (stop, length, cancel), and one that arrives meanwhile joins at
   * the next step. A row's numbers are those of the request decoding alone (DecodeBatcher), so answers do not depend
   * on what else runs. One request in flight decodes alone, on the exported decoder. A prefill that fails rejects
   * that request only; a batched step that fails turns batching off and the requests go on one step each, in turn.
   */
  private async schedule(): Promise<void> {
    const active: Seq[] = [];
    const settle = (s: Seq): boolean => {
      let done: boolean;
      try {
        done = this.advance(s);
      } catch (e) {
        s.reject(e);
        return true;
      }
      if (!done) return false;
      try {
        if (this.batcher?.has(s) && this.kvCache) s.past = wrapKv(this.batcher.take(s));
        s.resolve(this.finishSeq(s));
      } catch (e) {
        s.reject(e);
      }
      return true;
    };
    try {
      while (this.waiting.length || active.length) {
        const rows = this.batcher?.rows ?? 1;
        while (this.waiting.length && active.length < rows) {
          const w = this.waiting.shift()!;
          let s: Seq;
          try {
            s = await this.startSeq(w.req, w.hooks);
          } catch (e) {
            w.reject(e);
            continue;
          }
          s.resolve = w.resolve;
          s.reject = w.reject;
          if (!settle(s)) active.push(s);
        }
        if (!active.length) continue;
        if (active.length === 1 || !this.batcher) {
          // alone (or batching turned off): the exported decoder, one request after the other
          for (const s of active) {
            if (this.batcher?.has(s)) s.past = wrapKv(this.batcher.take(s));
          }
          this.batcher?.clear();
          for (const s of active) {
            try {
              // several requests in turn (batching turned off) must not share the step buffers decodeStep reuses
              await this.soloStep(s, active.length > 1);
            } catch (e) {
              s.reject(e);
              s.failed = true;
            }
          }
        } else {
          try {
            await this.batchStep(active);
          } catch {
            // a batched step that fails (onnxruntime refusing a shape, say): the requests keep their KV (a step
            // writes only into the other buffer) and go on alone
            const dead = this.batcher;
            for (const s of active) if (dead.has(s)) s.past = wrapKv(dead.take(s));
            this.batcher = null;
            this.info.batch = undefined;
            await dead.release().catch(() => undefined);
            continue;
          }
        }
        for (let i = active.length - 1; i >= 0; i--) {
          const s = active[i]!;
          if (s.failed || settle(s)) active.splice(i, 1);
        }
      }
    } catch (e) {
      // nothing above should throw (each request's errors are its own); if something does, no request is left
      // waiting on an answer that never comes
      for (const s of active) s.reject(e);
    } finally {
      this.batcher?.clear();
      this.scheduling = false;
      // a request that came in as the loop ended starts it again
      if (this.waiting.length) {
        this.scheduling = true;
        const run = this.queue.then(() => this.schedule());
        this.queue = run.catch(() => undefined);
      }
    }
  }

  /** One batched decode step for every request in `active` (each has sampled its next token). */
  private async batchStep(active: Seq[]): Promise<void> {
    const b = this.batcher!;
    const toks = active.map((s) => s.generated.at(-1)!);
    const embeds = await this.model.encode_text({ input_ids: i64(toks, [toks.length, 1]) });
    const rows = active.map((s) => {
      const kvLen = s.L + s.generated.length - 1;
      const row = { key: s, kvLen, pos: kvLen + s.delta };
      if (b.has(s)) return row;
      const past: SoloKv = {};
      for (const name of b.pastNames) {
        const t = s.past?.[name];
        if (!t || t.type !== 'float32') throw new Error(`no float32 ${name} to batch`);
        past[name] = { data: t.data as Float32Array, dims: t.dims };
      }
      return { ...row, past };
    });
    const logits = await b.step(rows, embeds.data as Float32Array);
    const V = b.dims.vocab;
    active.forEach((s, i) => {
      s.logits = logits;
      s.offset = i * V;
      s.V = V;
      s.out = null;
      s.past = null;
    });
  }

  /** Encodes a request and prefills its prompt (reusing the cached KV where that gives the same numbers). */
  private async startSeq(req: WireGenerateRequest, hooks: RuntimeHooks): Promise<Seq> {
    const t0 = performance.now();
    const { ids, images } = await this.encode(req);
    const L = ids.length;
    const imageTok = this.model.config.image_token_id;
    const keys = images.map((p) => p.key);
    const gridT = images.length ? i64(images.flatMap((p) => p.grid), [images.length, 3]) : null;
    const [pos, deltaT] = this.model.get_rope_index(i64(ids, [1, L]), gridT, null, i64(new Array(L).fill(1), [1, L]));
    const delta = Number((deltaT.tolist() as Array<Array<number | bigint>>)[0]![0]!);

    let start = 0;
    let past: Record<string, AnyTensor> | null = null;
    if (this.kvCache && this.cache) {
      start = reusablePrefix(this.cache, { ids, imageKeys: keys }, imageTok);
      if (start > 0) {
        past = {};
        for (const [k, v] of Object.entries(this.cache.past)) past[k] = v.dims[2] === start ? v : v.slice(null, null, [0, start], null);
      }
    }
    this.cache = null;
    let reused = start;
    const H = imageRuns(ids, imageTok)[0]?.[0] ?? 0;
    if (start === 0 && this.kvCache && H > 1 && H < L) {
      if (this.head && this.head.ids.length === H && this.head.ids.every((t, i) => t === ids[i])) {
        past = this.head.past;
        reused = H;
      } else {
        let headOut: Record<string, AnyTensor>;
        try {
          headOut = await this.model.forward({
            input_ids: i64(ids.slice(0, H), [1, H]),
            attention_mask: ones(H),
            position_ids: pos.slice(null, null, [0, H]),
            past_key_values: null,
            num_logits_to_keep: new Tensor('int64', [1n], []),
          });
        } catch (e) {
          throw new EngineError('load', `prefill failed: ${(e as Error).message}`, { cause: e });
        }
        past = presentToPast(headOut);
        this.head = { ids: ids.slice(0, H), past };
      }
      start = H;
    }
    const runsAfter = imageRuns(ids, imageTok).map(([s], i) => [s, i] as const).filter(([s]) => s >= start).map(([, i]) => images[i]!);
    const feeds: Record<string, unknown> = {
      input_ids: i64(ids.slice(start), [1, L - start]),
      attention_mask: ones(L),
      position_ids: pos.slice(null, null, [start, L]),
      past_key_values: past,
      // only the last position's logits are needed (fed only if the exported decoder declares it)
      num_logits_to_keep: new Tensor('int64', [1n], []),
    };
    if (runsAfter.length) {
      feeds.pixel_values = cat(runsAfter.map((p) => p.pixelValues), 0);
      feeds.image_grid_thw = i64(runsAfter.flatMap((p) => p.grid), [runsAfter.length, 3]);
    }
    let out: Record<string, AnyTensor>;
    try {
      out = await this.model.forward(feeds);
    } catch (e) {
      throw new EngineError('load', `prefill failed: ${(e as Error).message}`, { cause: e });
    }
    const t1 = performance.now();
    const logits = out.logits!;
    const [, S, V] = logits.dims as [number, number, number];
    return {
      req,
      hooks,
      ids,
      L,
      delta,
      keys,
      reused,
      t0,
      t1,
      rand: seededRandom(req.seed ?? (Math.random() * 2 ** 32) >>> 0),
      stops: new StopStrings(req.stop),
      generated: [],
      emitted: 0,
      text: '',
      finish: 'length',
      stream: !!(req.stream !== false && hooks.onToken),
      logits: logits.data as Float32Array,
      offset: (S - 1) * V,
      V,
      out,
      past,
      failed: false,
      loop: this.loopSession !== null && !(req.temperature > 0) && !hooks.onLogits,
      chunk: LOOP_CHUNK_FIRST,
      ahead: null,
      pending: [],
      resolve: () => undefined,
      reject: () => undefined,
    };
  }

  /** Samples the request's next token from its logits; true when the request has ended. */
  private advance(s: Seq): boolean {
    const { req, hooks } = s;
    if (req.maxTokens <= 0) return true;
    let tok: number;
    if (s.pending.length) tok = s.pending.shift()!;
    else {
      hooks.onLogits?.(s.logits.subarray(s.offset, s.offset + s.V));
      tok = sampleToken(s.logits, s.offset, s.V, req, s.rand);
      if (s.out) s.past = presentToPast(s.out);
      if (s.ahead) {
        if (s.ahead.tokens[0] === tok) s.pending = s.ahead.tokens.slice(1);
        else if (s.past) {
          // the device's argmax chose another of tied logits: keep the KV of the tokens fed before its steps and
          // decode step by step from here
          const keep = s.ahead.fed;
          s.past = Object.fromEntries(Object.entries(s.past).map(([k, v]) => [k, v.dims[2] === keep ? v : v.slice(null, null, [0, keep], null)]));
          s.loop = false;
        }
        s.ahead = null;
      }
    }
    s.generated.push(tok);
    if (this.eos.has(tok)) {
      s.finish = 'stop';
      s.text = this.tokenizer.decode(s.generated, { skip_special_tokens: true });
      return true;
    }
    s.text = this.tokenizer.decode(s.generated, { skip_special_tokens: true });
    const cut = s.stops.check(s.text, s.emitted);
    if (cut >= 0) {
      s.text = s.text.slice(0, cut);
      s.finish = 'stop';
      return true;
    }
    if (s.stream) {
      const safe = s.stops.safeLength(s.text);
      if (safe > s.emitted) {
        hooks.onToken!(s.text.slice(s.emitted, safe));
        s.emitted = safe;
      }
    }
    if (s.generated.length >= req.maxTokens) return true;
    if (hooks.isCancelled?.()) {
      s.finish = 'cancelled';
      return true;
    }
    return false;
  }

  /**
   * One decode step of one request (its sampled token in, its next logits out), or one run of the decode loop;
   * `fresh`: into new output arrays (model.forward) rather than the buffers decodeStep reuses, which hold one
   * request's KV only.
   */
  private async soloStep(s: Seq, fresh = false): Promise<void> {
    if (s.pending.length) return; // the next token is known already (decode loop)
    const tok = s.generated.at(-1)!;
    const n = s.L + s.generated.length; // tokens whose KV will exist after this step
    const p = s.L + s.generated.length - 1 + s.delta;
    const past = s.past;
    if (!past) throw new EngineError('load', 'decode: no KV cache after the prefill');
    const steps = s.loop ? Math.min(s.chunk, s.req.maxTokens - s.generated.length - 1) : 0;
    if (steps > 0) {
      const r = await this.decodeLoop(tok, n, p, past, steps);
      const [, S, V] = r.out.logits!.dims as [number, number, number];
      s.out = r.out;
      s.logits = r.out.logits!.data as Float32Array;
      s.offset = (S - 1) * V;
      s.V = V;
      s.ahead = { tokens: r.tokens, fed: n };
      s.chunk = Math.min(s.chunk * 2, LOOP_CHUNK_MAX);
      return;
    }
    const out =
      (fresh ? null : await this.decodeStep(tok, n, p, past)) ??
      (await this.model.forward({
        input_ids: i64([tok], [1, 1]),
        attention_mask: ones(n),
        position_ids: i64([p, p, p], [3, 1, 1]),
        past_key_values: past,
        num_logits_to_keep: new Tensor('int64', [1n], []),
      }));
    const [, S, V] = out.logits!.dims as [number, number, number];
    s.out = out;
    s.logits = out.logits!.data as Float32Array;
    s.offset = (S - 1) * V;
    s.V = V;
  }

  /** The result of an ended request; its KV becomes the cache a continuation can reuse. */
  private finishSeq(s: Seq): GenerateResult {
    if (s.stream && s.text.length > s.emitted) s.hooks.onToken!(s.text.slice(s.emitted));
    if (s.past && this.kvCache) {
      // the cache holds the prompt plus every generated token except the last one sampled (never fed back)
      this.cache = { ids: s.ids.concat(s.generated.slice(0, -1)), promptLength: s.L, imageKeys: s.keys, past: s.past };
    }
    const t2 = performance.now();
    return {
      text: s.text,
      promptTokens: s.L,
      completionTokens: s.generated.length,
      finishReason: s.finish,
      latencyMs: t2 - s.t0,
      tokens: s.generated,
      cachedTokens: s.reused,
      prefillMs: s.t1 - s.t0,
      decodeMs: t2 - s.t1,
    };
  }

  /**
   * One decode step run on the decoder session itself, its outputs (every layer's present key/value and the logits)
   * written by onnxruntime into buffers this runtime keeps, instead of `model.forward`, whose outputs are fresh
   * arrays on every step: a step's KV is the whole context (past + 1), so those copies were most of the engine
   * worker's garbage. Two buffers per present output, used in turn: a step reads the past from one (or from the
   * prefill's outputs) and writes the present into the other; they grow (doubling) when the context outgrows them.
   * Returns null (and the caller uses `model.forward`) where the decoder's inputs are not the ones handled here, or
   * where onnxruntime refused the bound outputs once (then never tried again).
   */
  private async decodeStep(tok: number, n: number, p: number, past: Record<string, AnyTensor>): Promise<Record<string, AnyTensor> | null> {
    if (this.kvReuse === 'off') return null;
    const session = this.model.sessions['decoder_model_merged'] as unknown as OrtSession | undefined;
    const known = new Set(['inputs_embeds', 'attention_mask', 'position_ids', 'num_logits_to_keep']);
    if (!session || !session.inputNames.every((k) => known.has(k) || k in past) || !session.outputNames.includes('logits')) {
      this.kvReuse = 'off';
      return null;
    }
    const embeds = await this.model.encode_text({ input_ids: i64([tok], [1, 1]) });
    const a = this.arena;
    if (a.mask.length < n) a.mask = new BigInt64Array(Math.max(n, a.mask.length * 2)).fill(1n);
    const feeds: Record<string, unknown> = {
      inputs_embeds: ort(embeds),
      attention_mask: ort(new Tensor('int64', a.mask.subarray(0, n), [1, n])),
      position_ids: ort(i64([p, p, p], [3, 1, 1])),
    };
    if (session.inputNames.includes('num_logits_to_keep')) feeds['num_logits_to_keep'] = ort(new Tensor('int64', [1n], []));
    const fetches: Record<string, unknown> = {};
    const bound: Record<string, AnyTensor> = {};
    for (const name of session.outputNames) {
      if (name === 'logits') continue;
      const pastName = name.replace('present', 'past_key_values');
      const prev = past[pastName];
      // float32 only. fp16 exports (the CUDA path) decode faster through model.forward: with these bound host buffers
      // the random 7B ran at 39.6 tok/s against 57.1 through forward on an H200, and the 0.5B at 75.8/67.2 against
      // 80.9/77.1 (models/reports/GPU-7B.md). onnxruntime-node cannot keep CUDA outputs on the device, so binding host
      // buffers only adds work there.
      const type = prev?.type;
      if (!prev || type !== 'float32' || prev.dims.length !== 4) {
        this.kvReuse = 'off';
        return null;
      }
      feeds[pastName] = ort(prev);
      const [b, h, t, d] = prev.dims as [number, number, number, number];
      const size = b * h * (t + 1) * d;
      const Ctor = (prev.data as KvArray).constructor as KvArrayCtor;
      let pair = a.kv.get(name);
      if (!pair || pair[0].length < size || pair[0].constructor !== Ctor) {
        // room for twice this context, so the next steps (and turns) reuse it
        pair = [new Ctor(size * 2), new Ctor(size * 2)];
        a.kv.set(name, pair);
      }
      const target = (prev.data as KvArray).buffer === pair[0].buffer ? pair[1] : pair[0];
      const view = target.subarray(0, size);
      // onnxruntime-node writes into a given output only if it is its own Tensor class (transformers.js' tensors wrap
      // another copy of onnxruntime-common's)
      fetches[name] = new onnxruntime.Tensor(type, view as never, [b, h, t + 1, d]);
      bound[name] = new Tensor(type, view as never, [b, h, t + 1, d]);
    }
    const V = this.model.config.text_config?.vocab_size ?? (this.model.config as { vocab_size?: number }).vocab_size;
    if (V) {
      if (a.logits.length !== V) a.logits = new Float32Array(V);
      fetches['logits'] = new onnxruntime.Tensor('float32', a.logits, [1, 1, V]);
      bound['logits'] = new Tensor('float32', a.logits, [1, 1, V]);
    } else {
      fetches['logits'] = null;
    }
    let res: Record<string, unknown>;
    try {
      res = await session.run(feeds, fetches);
    } catch {
      // e.g. an export whose output shapes differ from the ones bound here: forward() takes over, for good
      this.kvReuse = 'off';
      return null;
    }
    const out: Record<string, AnyTensor> = {};
    const spare: ArrayBuffer[] = [];
    for (const [k, v] of Object.entries(res)) {
      const r = v as { type: string; data: Float32Array; dims: number[] };
      const mine = bound[k];
      out[k] = mine ?? new Tensor(r.type as 'float32', r.data, r.dims);
      // onnxruntime-node returns every output as a fresh copy, also those it wrote into the bound buffers: a step
      // allocates the whole present KV again (3 MB at 600 tokens of loupe-tiny). Unused, those copies are freed now
      // (see freeNow) rather than left to push V8 into a full GC every ~20 steps.
      const b = r.data?.buffer;
      if (mine && b instanceof ArrayBuffer && b !== (mine.data as Float32Array).buffer && r.data.byteOffset === 0 && r.data.byteLength === b.byteLength) spare.push(b);
    }
    freeNow(spare);
    return out;
  }

  /**
   * One run of the decode loop (FuseOptions.decodeLoop): feeds `tok` at position `p` on `past` (n − 1 tokens), then
   * `steps` greedy tokens on the device. Returns the run's outputs (logits of `tok`'s step; present KV of every token
   * fed) and its `tokens` (the argmax of those logits, then one a step; the last one not fed).
   */
  private async decodeLoop(tok: number, n: number, p: number, past: Record<string, AnyTensor>, steps: number): Promise<{ out: Record<string, AnyTensor>; tokens: number[] }> {
    const session = this.loopSession!;
    const embeds = await this.model.encode_text({ input_ids: i64([tok], [1, 1]) });
    const feeds: Record<string, unknown> = {
      inputs_embeds: ort(embeds),
      attention_mask: ort(ones(n)),
      position_ids: ort(i64([p, p, p], [3, 1, 1])),
      steps: new onnxruntime.Tensor('int64', [BigInt(steps)], []),
    };
    if (session.inputNames.includes('num_logits_to_keep')) feeds['num_logits_to_keep'] = ort(new Tensor('int64', [1n], []));
    for (const [k, v] of Object.entries(past)) feeds[k] = ort(v);
    let res: Record<string, unknown>;
    try {
      res = await session.run(feeds as never);
    } catch (e) {
      throw new EngineError('load', `decode failed: ${(e as Error).message}`, { cause: e });
    }
    const out: Record<string, AnyTensor> = {};
    let tokens: number[] = [];
    for (const [k, v] of Object.entries(res)) {
      const r = v as { type: string; data: Float32Array | BigInt64Array; dims: number[] };
      if (k === 'tokens') tokens = Array.from(r.data as BigInt64Array, Number);
      else out[k] = new Tensor(r.type as 'float32', r.data as Float32Array, r.dims);
    }
    if (tokens.length !== steps + 1) throw new EngineError('load', `decode loop returned ${tokens.length} tokens for ${steps} steps`);
    return { out, tokens };
  }

  /** Attention maps for one turn (see Engine.attention); queued like generate, and leaves the generation cache alone. */
  attention(req: AttentionRequest): Promise<AttentionResult> {
    const run = this.queue.then(() => this.attentionNow(req));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private analysisDecoder(): Promise<onnxruntime.InferenceSession> {
    if (!this.attnSession) {
      const spec = this.info.dtype ?? 'fp32';
      const dt = typeof spec === 'string' ? spec : (spec.decoder_model_merged ?? 'fp32');
      const file = path.join(this.info.model, 'onnx', `${ATTN_DECODER}${DTYPE_SUFFIX[dt]}.onnx`);
      this.attnSession = (async () => {
        try {
          await stat(file);
        } catch {
          throw new EngineError('unavailable', `this model has no analysis decoder (${path.basename(file)}); add one with \`loupe convert --attention ${this.info.model}\``);
        }
        return onnxruntime.InferenceSession.create(file, { executionProviders: ['cpu'], ...(this.info.threads ? { intraOpNumThreads: this.info.threads } : {}) });
      })();
      this.attnSession.catch(() => (this.attnSession = null));
    }
    return this.attnSession;
  }

  private async attentionNow(req: AttentionRequest): Promise<AttentionResult> {
    const session = await this.analysisDecoder();
    const { ids, images } = await this.encode({ ...req, maxTokens: 0, temperature: 0, topP: 1, topK: -1, stop: [] });
    const imageTok = this.model.config.image_token_id;
    const runs = imageRuns(ids, imageTok);
    const run = runs[req.imageIndex];
    const img = images[req.imageIndex];
    if (!Number.isInteger(req.imageIndex) || !run || !img) {
      throw new EngineError('bad_request', `imageIndex ${req.imageIndex} is not one of the conversation's ${images.length} image(s)`);
    }
    const comp = this.tokenizer.encode(req.completion, { add_special_tokens: false });
    if (comp.length === 0) throw new EngineError('bad_request', 'the completion is empty: there are no tokens to take attention from');
    // which completion tokens the span covers: token k spans [len(decode(0..k-1)), len(decode(0..k)))
    const [s0, s1] = req.span ?? [0, req.completion.length];
    const rows: number[] = [];
    let before = 0;
    for (let k = 0; k < comp.length; k++) {
      const after = this.tokenizer.decode(comp.slice(0, k + 1), { skip_special_tokens: false }).length;
      if (after > s0 && before < s1) rows.push(k);
      before = after;
    }
    if (!rows.length) throw new EngineError('bad_request', `span [${s0}, ${s1}) covers no token of the completion (${req.completion.length} characters)`);
    const L = ids.length;
    const all = ids.concat(comp);
    const N = all.length;
    const gridT = i64(images.flatMap((p) => p.grid), [images.length, 3]);
    const [pos] = this.model.get_rope_index(i64(all, [1, N]), gridT, null, i64(new Array(N).fill(1), [1, N]));
    // prefill all but the prompt's last token on the fast decoder; then the analysis decoder takes that token and the
    // completion (but its last token) as one chunk, so chunk row k is the position whose logits chose completion token k
    const P = L - 1;
    if (run[1] > P) throw new EngineError('bad_request', 'the prompt ends inside an image: nothing to attend from');
    let past: Record<string, AnyTensor>;
    try {
      const pre = await this.model.forward({
        input_ids: i64(ids.slice(0, P), [1, P]),
        attention_mask: ones(P),
        position_ids: pos.slice(null, null, [0, P]),
        past_key_values: null,
        pixel_values: cat(images.map((p) => p.pixelValues), 0),
        image_grid_thw: gridT,
        num_logits_to_keep: new Tensor('int64', [1n], []),
      });
      past = presentToPast(pre);
    } catch (e) {
      throw new EngineError('load', `attention prefill failed: ${(e as Error).message}`, { cause: e });
    }
    const G = comp.length;
    const chunk = all.slice(P, P + G);
    const embeds = await this.model.encode_text({ input_ids: i64(chunk, [1, G]) });
    const feeds: Record<string, unknown> = {
      inputs_embeds: ort(embeds),
      attention_mask: ort(ones(P + G)),
      position_ids: ort(pos.slice(null, null, [P, P + G])),
    };
    if (session.inputNames.includes('num_logits_to_keep')) feeds['num_logits_to_keep'] = ort(new Tensor('int64', [1n], []));
    for (const name of session.inputNames) {
      if (name in feeds) continue;
      const t = past[name];
      if (!t) throw new EngineError('load', `the analysis decoder wants an input ${name} that the fast decoder's cache does not have`);
      feeds[name] = ort(t);
    }
    let out: Record<string, { dims: readonly number[]; data: unknown }>;
    try {
      out = (await session.run(feeds as never)) as unknown as typeof out;
    } catch (e) {
      throw new EngineError('load', `the analysis decoder failed: ${(e as Error).message}`, { cause: e });
    }
    const merge = this.processor.image_processor.config.merge_size ?? 2;
    const patch = this.processor.image_processor.config.patch_size ?? 14;
    const [, gh, gw] = img.grid;
    const grid = { h: gh / merge, w: gw / merge };
    const cells = run[1] - run[0];
    if (cells !== grid.h * grid.w) throw new EngineError('load', `image run of ${cells} tokens does not match its ${grid.h}×${grid.w} merged grid`);
    const layers: number[][] = [];
    const imageMass: number[] = [];
    const rowSums: number[] = [];
    for (let l = 0; ; l++) {
      const a = out[attentionOutput(l)];
      if (!a) break;
      const [, S, T] = a.dims as [number, number, number];
      if (a.dims.length !== 3 || S !== G || T !== P + G) throw new EngineError('load', `${attentionOutput(l)} has shape [${a.dims.join(', ')}], expected [1, ${G}, ${P + G}]`);
      const d = a.data as Float32Array;
      const map = new Float64Array(cells);
      let mass = 0;
      let total = 0;
      for (const r of rows) {
        const o = r * T;
        for (let c = 0; c < cells; c++) map[c]! += d[o + run[0] + c]!;
        for (let t = 0; t < T; t++) total += d[o + t]!;
      }
      let sum = 0;
      for (let c = 0; c < cells; c++) sum += map[c]!;
      mass = sum / rows.length;
      layers.push(Array.from(map, (v) => (sum > 0 ? v / sum : 1 / cells)));
      imageMass.push(mass);
      rowSums.push(total / rows.length);
    }
    if (!layers.length) throw new EngineError('load', `the analysis decoder has no ${attentionOutput(0)} output`);
    return {
      grid,
      imageSize: [gw * patch, gh * patch],
      layers,
      imageMass,
      rowSums,
      queryTokens: rows.length,
      queryText: this.tokenizer.decode(rows.map((r) => comp[r]!), { skip_special_tokens: false }),
    };
  }

  /** Drops the cross-turn KV cache (e.g. before a new episode). */
  resetCache(): void {
    this.cache = null;
    this.head = null;
  }

  async dispose(): Promise<void> {
    this.cache = null;
    this.head = null;
    this.loopSession = null; // the same session as the model's decoder: released with it
    const attn = this.attnSession;
    this.attnSession = null;
    await attn?.then((s) => s.release()).catch(() => undefined);
    const batcher = this.batcher;
    this.batcher = null;
    await batcher?.release().catch(() => undefined);
    this.images.clear();
    await this.model.dispose();
  }
}

/**
 * Qwen2-VL's image processing for one image, as transformers.js' Qwen2VLImageProcessor does it (the same resize, then
 * rescale, normalize and the patch order of its 9-d permute), in one pass over the pixels: transformers.js permutes
 * element by element through generic index arithmetic, which cost ~40 ms per image here. The floats are the same
 * (`tests/integration/engines/localEngine.test.ts` compares both). Returns null for a processor this does not cover.
 */
export async function qwenPatches(ip: ImageProc, image: RawImage): Promise<{ pixel_values: AnyTensor; image_grid_thw: AnyTensor } | null> {
  const cfg = ip.config;
  const ps = cfg.patch_size, ms = cfg.merge_size, tp = cfg.temporal_patch_size;
  if (!ps || !ms || !tp || ip.constructor.name !== 'Qwen2VLImageProcessor') return null;
  if (!ip.do_resize || ip.do_crop_margin || ip.do_thumbnail || ip.do_center_crop || ip.do_pad || ip.do_flip_channel_order) return null;
  let im = image;
  if (ip.do_convert_rgb) im = im.rgb();
  im = await ip.resize(im);
  const { width: W, height: H, channels: C } = im;
  if (C !== 3 || W % (ps * ms) || H % (ps * ms)) return null;
  const per = (v: number | number[] | undefined, d: number) => (Array.isArray(v) ? v : new Array<number>(C).fill(v ?? d));
  const mean = per(ip.image_mean, 0), std = per(ip.image_std, 1);
  if (mean.length !== C || std.length !== C) return null;
  // value of byte x in channel c, computed as preprocess does: Float32Array storage after each step
  const lut = new Float32Array(C * 256);
  for (let c = 0; c < C; c++) {
    for (let x = 0; x < 256; x++) {
      let v = x;
      if (ip.do_rescale) v = Math.fround((ip.rescale_factor ?? 1 / 255) * v);
      if (ip.do_normalize) v = Math.fround((v - mean[c]!) / std[c]!);
      lut[c * 256 + x] = v;
    }
  }
  const gh = H / ps, gw = W / ps;
  const row = C * tp * ps * ps;
  const out = new Float32Array(gh * gw * row);
  const src = im.data as Uint8Array | Uint8ClampedArray;
  let o = 0;
  // patch order: merge block row, merge block column, row inside it, column inside it
  for (let bh = 0; bh < gh / ms; bh++)
    for (let bw = 0; bw < gw / ms; bw++)
      for (let mh = 0; mh < ms; mh++)
        for (let mw = 0; mw < ms; mw++) {
          const y0 = (bh * ms + mh) * ps, x0 = (bw * ms + mw) * ps;
          for (let c = 0; c < C; c++) {
            const l = c * 256;
            const start = o;
            for (let py = 0; py < ps; py++) {
              let p = ((y0 + py) * W + x0) * C + c;
              for (let px = 0; px < ps; px++, p += C) out[o++] = lut[l + src[p]!]!;
            }
            // the temporal copies of a still image are the same frame
            for (let t = 1; t < tp; t++, o += ps * ps) out.copyWithin(o, start, start + ps * ps);
          }
        }
  return { pixel_values: new Tensor('float32', out, [gh * gw, row]), image_grid_thw: i64([1, gh, gw], [1, 3]) };
}

const MATMUL_PATCH_EMBED = new WeakSet<object>();
/**
 * LOUPE_ORT_SESSION='{"enableMemPattern": false, …}': onnxruntime session options merged into every session this engine
 * opens, a diagnostic switch for trying one on a GPU lease without a build (scripts/device/gpu-engine-calls.sh
 * `gqa-first`). Not a JSON object: a load error that says so.
 */
export function extraSessionOptions(env: string | undefined = process.env.LOUPE_ORT_SESSION): Record<string, unknown> {
  if (env === undefined || env.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(env);
  } catch (e) {
    throw new EngineError('load', `LOUPE_ORT_SESSION is not JSON (${(e as Error).message}); unset it or give an object such as {"enableMemPattern": false}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new EngineError('load', 'LOUPE_ORT_SESSION must be a JSON object of onnxruntime session options, such as {"enableMemPattern": false}');
  // a misspelt option would be ignored by onnxruntime and an experiment would measure nothing; the device is the
  // engine's to choose (its CPU fallback depends on it)
  for (const key of Object.keys(v)) {
    if (key === 'executionProviders') throw new EngineError('load', 'LOUPE_ORT_SESSION: executionProviders is chosen by the engine (LoadOptions.device / --device), not here');
    if (!ORT_SESSION_KEYS.has(key)) throw new EngineError('load', `LOUPE_ORT_SESSION: ${JSON.stringify(key)} is not an onnxruntime session option (known: ${[...ORT_SESSION_KEYS].join(', ')})`);
  }
  return v as Record<string, unknown>;
}
/** onnxruntime-common's InferenceSession.SessionOptions, less executionProviders. */
const ORT_SESSION_KEYS = new Set(['intraOpNumThreads', 'interOpNumThreads', 'freeDimensionOverrides', 'graphOptimizationLevel', 'enableCpuMemArena', 'enableMemPattern', 'executionMode', 'optimizedModelFilePath', 'enableProfiling', 'profileFilePrefix', 'logId', 'logSeverityLevel', 'logVerbosityLevel', 'preferredOutputLocation', 'enableGraphCapture', 'extra']);

/** Whether a runtime's vision encoder runs the rewritten patch embedding (for tests and diagnostics). */
export function hasMatmulPatchEmbed(rt: QwenVLRuntime): boolean {
  const s = (rt as unknown as { model: QwenModel }).model.sessions['vision_encoder'];
  return !!s && MATMUL_PATCH_EMBED.has(s);
}

/**
 * Swaps the vision encoder's session for one whose whole-patch ConvInteger runs as a MatMulInteger (patchEmbed.ts;
 * about twice as fast on the CPU, same integer sums), when the export has one. Used only if both sessions give the
 * same bits on a probe image; otherwise (or on any error) the session transformers.js opened stays.
 */
async function matmulPatchEmbed(model: QwenModel, ip: ImageProc, dir: string, dtype: EngineDtypeSpec, options: Record<string, unknown>): Promise<void> {
  const old = model.sessions['vision_encoder'] as unknown as (OrtSession & { config?: unknown; release(): Promise<void> }) | undefined;
  const dt = typeof dtype === 'string' ? dtype : dtype.vision_encoder;
  if (!old || !dt) return;
  let fresh: (OrtSession & { config?: unknown; release(): Promise<void> }) | undefined;
  try {
    const rewritten = rewritePatchEmbed(new Uint8Array(await readFile(path.join(dir, 'onnx', `vision_encoder${DTYPE_SUFFIX[dt]}.onnx`))));
    if (!rewritten) return;
    // the same onnxruntime (and Tensor class) as the session it replaces
    const Session = old.constructor as unknown as { create(b: Uint8Array, o: Record<string, unknown>): Promise<NonNullable<typeof fresh>> };
    fresh = await Session.create(rewritten, { executionProviders: ['cpu'], ...options });
    fresh.config = old.config;
    // probe: one merged block of patches (merge × merge), values spread over the normalized range
    const ps = ip.config.patch_size ?? 14, ms = ip.config.merge_size ?? 2, tp = ip.config.temporal_patch_size ?? 2;
    const rows = ms * ms, width = 3 * tp * ps * ps;
    const px = new Float32Array(rows * width);
    let x = 12345;
    for (let i = 0; i < px.length; i++) {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      px[i] = (x / 2 ** 32) * 4 - 2;
    }
    const feeds = { pixel_values: ort(new Tensor('float32', px, [rows, width])), image_grid_thw: ort(i64([1, ms, ms], [1, 3])) };
    const name = old.outputNames[0]!;
    const [a, b] = await Promise.all([old.run(feeds, {}), fresh.run(feeds, {})]);
    const da = (a[name] as { data: Float32Array }).data, db = (b[name] as { data: Float32Array }).data;
    if (da.length !== db.length || !da.every((v, i) => Object.is(v, db[i]))) throw new Error('the rewritten patch embedding differs');
    model.sessions['vision_encoder'] = fresh as never;
    MATMUL_PATCH_EMBED.add(fresh);
    fresh = undefined;
    await old.release();
  } catch {
    // keep transformers.js' session
  } finally {
    await fresh?.release().catch(() => undefined);
  }
}

/** A port whose peer is closed: a message posted to it is dropped at once, with the buffers it transfers. */
let sink: MessagePort | null = null;

/**
 * Frees ArrayBuffers nothing else references, now: transferring them detaches them (their memory goes with the
 * dropped message), so V8's external-memory count falls at once instead of at the next GC. Large buffers that become
 * garbage at a high rate (the decoder's per-step output copies) otherwise make V8 run a full mark-compact every time
 * about 64 MB of them has accumulated, whatever the JS heap's size.
 */
export function freeNow(buffers: ArrayBuffer[]): void {
  if (buffers.length === 0) return;
  if (!sink) {
    const ch = new MessageChannel();
    ch.port2.close();
    sink = ch.port1;
    sink.unref();
  }
  try {
    sink.postMessage(null, buffers);
  } catch {
    // a buffer that cannot be transferred (an external one, say): left to the GC, as before
  }
}

/** A request's KV taken out of the batch, as the tensors a solo step reads. */
function wrapKv(kv: SoloKv): Record<string, AnyTensor> {
  const out: Record<string, AnyTensor> = {};
  for (const [k, v] of Object.entries(kv)) out[k] = new Tensor('float32', v.data, [...v.dims]);
  return out;
}

/**
 * The batched decoder for this model (decodeBatch.ts): the exported q8 decoder rewritten for batches, checked on a
 * probe against the session the engine decodes one request with. Null when the decoder is not one it can batch
 * exactly (an fp32 or fp16 export, an unfamiliar graph) or on any error.
 */
async function batchedDecoder(model: QwenModel, dir: string, dtype: EngineDtype, rows: number, options: Record<string, unknown>): Promise<DecodeBatcher | null> {
  try {
    const exported = model.sessions['decoder_model_merged'] as unknown as onnxruntime.InferenceSession | undefined;
    if (!exported) return null;
    const cfg = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const t = textConfig(cfg);
    const bytes = new Uint8Array(await readFile(path.join(dir, 'onnx', `decoder_model_merged${DTYPE_SUFFIX[dtype]}.onnx`)));
    setBufferFreer(freeNow);
    return await loadDecodeBatcher(exported, bytes, { layers: t.layers, kvHeads: t.kvHeads, headDim: t.headDim, hidden: t.hidden, vocab: t.vocab }, rows, options);
  } catch {
    return null;
  }
}

function presentToPast(out: Record<string, AnyTensor>): Record<string, AnyTensor> {
  const past: Record<string, AnyTensor> = {};
  for (const [k, v] of Object.entries(out)) if (k.startsWith('present')) past[k.replace('present', 'past_key_values')] = v;
  return past;
}

/**
 * Intra-op threads for a model's sessions: the asked number, else 1 for a small model (ONNX files of the loaded
 * dtype(s) under SMALL_MODEL_BYTES), else 0 (ONNX Runtime's default).
 */
export function intraOpThreads(asked: number | undefined, dtype: EngineDtypeSpec, dtypeBytes: Partial<Record<EngineDtype, number>>): number {
  if (asked !== undefined && asked > 0) return Math.floor(asked);
  const dts = typeof dtype === 'string' ? [dtype] : Object.values(dtype);
  const bytes = Math.max(0, ...dts.map((d) => dtypeBytes[d] ?? Infinity));
  return bytes < SMALL_MODEL_BYTES ? 1 : 0;
}

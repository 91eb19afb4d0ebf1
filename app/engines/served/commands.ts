/**
 * Command lines of the OpenAI-compatible servers Loupe starts for a model folder: vLLM, SGLang, `transformers serve`
 * and `loupe serve-model`. A spec is validated first (one zod schema), then rendered as an argv ARRAY: no value ever
 * passes through a shell here. Where a job script must hold the command (Slurm), `shellLine` quotes every word.
 *
 * Flag names follow each tool's documented CLI (the unit tests pin them):
 * - vLLM `vllm serve MODEL`: --host, --port, --served-model-name, --dtype {auto,bfloat16,float16,float32,half,float},
 *   --gpu-memory-utilization, --limit-mm-per-prompt '{"image": N}', --mm-processor-kwargs '{"min_pixels": …,
 *   "max_pixels": …}' (vllm/engine/arg_utils.py, "vllm serve" usage in the vLLM server-arguments reference);
 *   the API key through $VLLM_API_KEY, which `--api-key` defaults to, so it is not in argv.
 * - SGLang `python -m sglang.launch_server`: --model-path, --host, --port, --served-model-name, --dtype,
 *   --mem-fraction-static (docs.sglang.io "Server Arguments"); the API key through --api-key is avoided (argv is
 *   public on a node), so SGLang is refused unless the bind address is 127.0.0.1.
 * - `transformers serve`: --host, --port, --dtype, --force-model (Transformers "Serve CLI"; serving extra).
 * - `loupe serve-model DIR`: --host, --port, --device, --dtype, --name, --threads; key from $LOUPE_API_KEY.
 *
 * Pixel bounds: Pixel Reasoner's README warns that a server whose MIN_PIXELS/MAX_PIXELS differ from the eval's
 * breaks reproduction. vLLM takes them on the command line; SGLang and `transformers serve` read them from the
 * folder's preprocessor_config.json, which `checkPreprocessorBounds` compares; Loupe's own server resizes in the
 * client loop, so it needs none.
 */
import { z } from 'zod';
import { RESIZE_PRESETS, presetFor } from '../../tools/smartResize';

export const SERVED_BACKENDS = ['vllm', 'sglang', 'transformers', 'loupe'] as const;
export type ServedBackend = (typeof SERVED_BACKENDS)[number];

/** Dtypes each CLI accepts (as documented); anything else is refused before a process starts. */
export const BACKEND_DTYPES: Record<ServedBackend, readonly string[]> = {
  vllm: ['auto', 'bfloat16', 'float16', 'float32', 'half', 'float'],
  sglang: ['auto', 'bfloat16', 'float16', 'float32', 'half', 'float'],
  transformers: ['auto', 'bfloat16', 'float16', 'float32'],
  loupe: ['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4'],
};

/** A path that can be one argv word anywhere: absolute, no control characters, no `..` segment. */
const PathSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p), 'must be an absolute path')
  .refine((p) => !/[\u0000-\u001f\u007f]/.test(p), 'must not contain control characters (newlines, NUL)')
  .refine((p) => !p.split(/[\\/]/).includes('..'), "must not contain a '..' segment");

/** What to serve and how. Defaults are filled by `parseServedSpec`. */
export const ServedEngineSpecSchema = z
  .object({
    backend: z.enum(SERVED_BACKENDS),
    /** The model folder on the machine that runs the server (the cluster's path for a Slurm job). */
    modelDir: PathSchema,
    /** The id clients send as `model` (default: the folder name). */
    modelName: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'model name: 1-128 characters of A-Z a-z 0-9 . _ - (not starting with . _ -)')
      .optional(),
    /** 127.0.0.1 (this machine / tunnel from the same node) or 0.0.0.0 (reached through a tunnel to the node). */
    host: z.enum(['127.0.0.1', '0.0.0.0']).default('127.0.0.1'),
    port: z.number().int().min(1024).max(65535),
    dtype: z.string().optional(),
    /** Share of GPU memory the server may take (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static). */
    gpuMemory: z.number().gt(0).max(0.99).optional(),
    /** Images per prompt (vLLM --limit-mm-per-prompt); a trajectory with k crops sends 1 + k images. */
    imagesPerPrompt: z.number().int().min(1).max(64).default(8),
    /** The dialect's resize mode: its initial-image bounds are the server's MIN_PIXELS/MAX_PIXELS. */
    mode: z.enum(['eval', 'train']).default('eval'),
    /** Explicit bounds; refused when they differ from the mode's unless `allowPixelMismatch`. */
    minPixels: z.number().int().min(1).optional(),
    maxPixels: z.number().int().min(1).optional(),
    allowPixelMismatch: z.boolean().default(false),
    /** loupe only: ONNX device and threads. */
    device: z.enum(['cpu', 'cuda']).default('cpu'),
    threads: z.number().int().min(1).max(256).optional(),
    /** The program that starts the server (argv prefix); default per backend (vllm / python3 -m sglang… / transformers / node loupe). */
    launcher: z.array(z.string().min(1).max(4096)).min(1).max(8).optional(),
  })
  .strict();
export type ServedEngineSpecInput = z.input<typeof ServedEngineSpecSchema>;
export type ServedEngineSpec = z.output<typeof ServedEngineSpecSchema> & { modelName: string; dtype: string; minPixels: number; maxPixels: number };

/** A rendered server command: argv (never a shell string), extra environment, where its API lives. */
export interface ServedCommand {
  argv: string[];
  /** Environment the server needs (never the API key: that is added by whoever starts it, as a secret). */
  env: Record<string, string>;
  /** The environment variable the server reads its bearer key from (none: the server takes no key). */
  apiKeyEnv: string | null;
  /** Base path of the OpenAI API (`/v1`) and the path that answers 200 when the model is loaded. */
  apiPath: '/v1';
  healthPath: string;
}

export class ServedSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServedSpecError';
  }
}

/** The MIN_PIXELS/MAX_PIXELS a dialect's eval (or train) mode expects of the server: its initial-image preset. */
export function dialectPixelBounds(mode: 'eval' | 'train'): { minPixels: number; maxPixels: number } {
  const p = presetFor('initial', mode)!;
  return { ...RESIZE_PRESETS[p] };
}

/** Validate a spec; every problem is listed with its field. */
export function parseServedSpec(input: unknown): ServedEngineSpec {
  const r = ServedEngineSpecSchema.safeParse(input);
  if (!r.success) throw new ServedSpecError(`served engine: ${r.error.issues.map((i) => `${i.path.join('.') || '(spec)'}: ${i.message}`).join('; ')}`);
  const s = r.data;
  const dtype = s.dtype ?? (s.backend === 'loupe' ? 'fp32' : 'auto');
  if (!BACKEND_DTYPES[s.backend].includes(dtype)) {
    throw new ServedSpecError(`served engine: dtype ${JSON.stringify(dtype)} is not one ${s.backend} accepts (${BACKEND_DTYPES[s.backend].join(', ')})`);
  }
  const want = dialectPixelBounds(s.mode);
  const minPixels = s.minPixels ?? want.minPixels;
  const maxPixels = s.maxPixels ?? want.maxPixels;
  if (minPixels > maxPixels) throw new ServedSpecError(`served engine: minPixels ${minPixels} is above maxPixels ${maxPixels}`);
  if (!s.allowPixelMismatch && (minPixels !== want.minPixels || maxPixels !== want.maxPixels)) {
    throw new ServedSpecError(
      `served engine: MIN_PIXELS/MAX_PIXELS ${minPixels}/${maxPixels} differ from the dialect's ${s.mode} bounds ${want.minPixels}/${want.maxPixels}; ` +
        'a mismatch changes what the model sees and breaks reproduction (allowPixelMismatch to insist)',
    );
  }
  if (s.backend === 'sglang' && s.host !== '127.0.0.1') {
    throw new ServedSpecError('served engine: SGLang takes its API key only on the command line, visible to every user of the node; bind it to 127.0.0.1');
  }
  if (s.backend !== 'loupe' && (s.device !== 'cpu' || s.threads !== undefined)) {
    throw new ServedSpecError(`served engine: device and threads are loupe serve-model settings; ${s.backend} picks its GPU itself`);
  }
  if (s.backend === 'loupe' && s.gpuMemory !== undefined) throw new ServedSpecError('served engine: loupe serve-model has no GPU memory share setting');
  const modelName = s.modelName ?? sanitizeName(s.modelDir.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? 'model');
  return { ...s, modelName, dtype, minPixels, maxPixels };
}

function sanitizeName(base: string): string {
  const n = base.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[._-]+/, '').slice(0, 128);
  return n || 'model';
}

/** The argv of the server for `spec` (validated again here, so no caller can skip it). */
export function renderServedCommand(input: ServedEngineSpecInput | ServedEngineSpec, opts: { loupeBin?: string; node?: string } = {}): ServedCommand {
  const s = parseServedSpec(input);
  const base = { apiPath: '/v1' as const, healthPath: '/v1/models' };
  switch (s.backend) {
    case 'vllm': {
      const argv = [...(s.launcher ?? ['vllm']), 'serve', s.modelDir, '--host', s.host, '--port', String(s.port), '--served-model-name', s.modelName, '--dtype', s.dtype];
      if (s.gpuMemory !== undefined) argv.push('--gpu-memory-utilization', String(s.gpuMemory));
      argv.push('--limit-mm-per-prompt', JSON.stringify({ image: s.imagesPerPrompt }));
      argv.push('--mm-processor-kwargs', JSON.stringify({ min_pixels: s.minPixels, max_pixels: s.maxPixels }));
      return { ...base, argv, env: {}, apiKeyEnv: 'VLLM_API_KEY' };
    }
    case 'sglang': {
      const argv = [...(s.launcher ?? ['python3', '-m', 'sglang.launch_server']), '--model-path', s.modelDir, '--host', s.host, '--port', String(s.port), '--served-model-name', s.modelName, '--dtype', s.dtype];
      if (s.gpuMemory !== undefined) argv.push('--mem-fraction-static', String(s.gpuMemory));
      return { ...base, argv, env: {}, apiKeyEnv: null };
    }
    case 'transformers': {
      const argv = [...(s.launcher ?? ['transformers']), 'serve', '--host', s.host, '--port', String(s.port), '--dtype', s.dtype, '--force-model', s.modelDir];
      return { ...base, argv, env: {}, apiKeyEnv: null };
    }
    case 'loupe': {
      const prefix = s.launcher ?? [opts.node ?? 'node', opts.loupeBin ?? 'loupe'];
      const argv = [...prefix, 'serve-model', s.modelDir, '--host', s.host, '--port', String(s.port), '--device', s.device, '--dtype', s.dtype, '--name', s.modelName];
      if (s.threads !== undefined) argv.push('--threads', String(s.threads));
      return { ...base, argv, env: {}, apiKeyEnv: 'LOUPE_API_KEY' };
    }
  }
}

/** POSIX-shell quoting of one word. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** One shell line that runs argv exactly (each word quoted): for job scripts, which are bash. */
export function shellLine(argv: readonly string[]): string {
  return argv.map(shellWord).join(' ');
}

/**
 * SGLang and `transformers serve` take the pixel bounds from the folder's preprocessor_config.json
 * (`min_pixels`/`max_pixels`, or `size.shortest_edge`/`size.longest_edge` in newer processors): say when they differ.
 */
export function checkPreprocessorBounds(configText: string, spec: Pick<ServedEngineSpec, 'minPixels' | 'maxPixels' | 'backend'>): string | null {
  let cfg: Record<string, unknown>;
  try {
    cfg = JSON.parse(configText) as Record<string, unknown>;
  } catch {
    return 'preprocessor_config.json is not valid JSON';
  }
  const size = (cfg.size ?? {}) as Record<string, unknown>;
  const min = (cfg.min_pixels ?? size.shortest_edge) as unknown;
  const max = (cfg.max_pixels ?? size.longest_edge) as unknown;
  if (typeof min !== 'number' || typeof max !== 'number') return `preprocessor_config.json names no min_pixels/max_pixels; ${spec.backend} would use its own defaults`;
  if (min !== spec.minPixels || max !== spec.maxPixels) {
    return `preprocessor_config.json has min_pixels/max_pixels ${min}/${max}, the dialect wants ${spec.minPixels}/${spec.maxPixels}; ${spec.backend} reads them from there (set them in that file)`;
  }
  return null;
}

/**
 * Sweep plans: models × benchmarks × settings → a list of runs, each with a deterministic id derived from
 * its name and a full manifest (DESIGN §4). The same plan always yields the same run ids, so running a
 * plan again resumes its runs instead of starting new ones.
 */
import { createHash } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import type { RunManifest } from '../../contract/trajectory';
import type { LoadInfo } from '../../bench/types';
import type { DialectId, PromptId, ResizeMode } from '../../protocol/types';
import { getDialect, isDialectId } from '../../protocol';
import { isPyVisionDialect, pyvisionMaxTokens, pyvisionMaxTurns, pyvisionVariantOf, PYVISION_LIMITS, type PyVisionDialectId } from '../../protocol/pyvision';
import { DEFAULT_CODE_SANDBOX_LIMITS } from '../../tools/codeSandbox';
import { redactUrlPasswordsDeep } from '../../connectors/redact';
import { isRunId } from '../../workspace/runStore';
import type { ModelRegistry } from '../../engines/modelRegistry';
import { APP_VERSION } from '../../version';
import { RESIZE_PRESETS, presetFor } from '../../tools/smartResize';

// ---- models --------------------------------------------------------------------------------------------------

/** Where a model comes from. */
export type ModelSpec =
  | { kind: 'local'; /** Absolute folder in the transformers.js layout. */ path: string; name: string }
  | { kind: 'openai'; /** Base URL ending in `/v1` (as typed, trailing slash removed). */ url: string; /** Model id sent to the server ('' = ask /models). */ model: string; name: string }
  | { kind: 'replay'; /** JSONL of recorded replies per qid (see runner/replay.ts). */ file: string; name: string };

/**
 * Parse `--model`: an http(s) URL (`http://host:port/v1`, optionally `#model-id`) is an OpenAI-compatible
 * server, `replay:<file>` replays recorded replies, anything else is a local model folder.
 */
export function parseModelRef(ref: string, cwd: string = process.cwd()): ModelSpec {
  const s = ref.trim();
  if (s === '') throw new Error('--model is empty: give a model name (loupe-tiny), a local model folder, an OpenAI-compatible URL (http://host:port/v1) or replay:<file>');
  if (/^https?:\/\//i.test(s)) {
    const [base = '', model = ''] = s.split('#', 2);
    let u: URL;
    try {
      u = new URL(base);
    } catch {
      throw new Error(`--model ${JSON.stringify(ref)} is not a valid URL`);
    }
    const url = u.toString().replace(/\/+$/, '');
    return { kind: 'openai', url, model, name: model || `${u.hostname}-${u.port || (u.protocol === 'https:' ? '443' : '80')}` };
  }
  if (s.startsWith('replay:')) {
    const file = path.resolve(cwd, s.slice('replay:'.length));
    return { kind: 'replay', file, name: `replay-${path.basename(file).replace(/\.[^.]+$/, '')}` };
  }
  const dir = path.resolve(cwd, s);
  return { kind: 'local', path: dir, name: path.basename(dir) };
}

/**
 * `parseModelRef` plus the model registry: a local reference may be a registered or bundled name (`loupe-tiny`)
 * or a folder; either way the spec carries the model's registered name, which names the run and its manifest.
 */
export async function resolveModelRef(ref: string, registry: ModelRegistry, cwd: string = process.cwd()): Promise<ModelSpec> {
  const spec = parseModelRef(ref, cwd);
  if (spec.kind !== 'local') return spec;
  const m = await registry.resolveLocal(ref, cwd);
  return { kind: 'local', path: m.path, name: m.id };
}

/** Files at most this big are hashed whole; bigger ones (multi-GB ONNX) by size + first and last MiB. */
const FULL_HASH_LIMIT = 64 * 1024 * 1024;
const EDGE = 1024 * 1024;

async function hashFileInto(h: ReturnType<typeof createHash>, file: string, size: number): Promise<void> {
  if (size <= FULL_HASH_LIMIT) {
    await new Promise<void>((resolve, reject) => {
      createReadStream(file)
        .on('data', (c) => h.update(c))
        .on('end', () => resolve())
        .on('error', reject);
    });
    return;
  }
  const fh = await fsp.open(file, 'r');
  try {
    const buf = Buffer.alloc(EDGE);
    await fh.read(buf, 0, EDGE, 0);
    h.update(buf);
    await fh.read(buf, 0, EDGE, size - EDGE);
    h.update(buf);
  } finally {
    await fh.close();
  }
}

async function listFiles(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  const entries = await fsp.readdir(path.join(dir, rel), { withFileTypes: true });
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (e.name.startsWith('.')) continue;
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, r)));
    else if (e.isFile()) out.push(r);
  }
  return out;
}

/**
 * Content hash of a set of files (relative path + size + bytes, in the order given): `sha256:<hex>`.
 * Files over 64 MiB contribute their size and first/last MiB only (the method is named in the result).
 */
export async function hashFiles(root: string, files: readonly string[]): Promise<{ hash: string; method: string; bytes: number }> {
  const h = createHash('sha256');
  let bytes = 0;
  let partial = false;
  for (const rel of files) {
    const file = path.resolve(root, rel);
    const st = await fsp.stat(file);
    bytes += st.size;
    if (st.size > FULL_HASH_LIMIT) partial = true;
    h.update(`${rel.split(path.sep).join('/')}\0${st.size}\0`);
    await hashFileInto(h, file, st.size);
  }
  return { hash: `sha256:${h.digest('hex')}`, method: partial ? 'sha256(path,size,bytes; files>64MiB: first+last MiB)' : 'sha256(path,size,bytes)', bytes };
}

/** Hash of a local model folder (every non-hidden file, recursively). Clear error when the folder is missing. */
export async function hashModelFolder(dir: string): Promise<{ hash: string; method: string; bytes: number }> {
  let st;
  try {
    st = await fsp.stat(dir);
  } catch {
    throw new Error(`model folder ${dir} does not exist (give a local model folder, an OpenAI-compatible URL http://host:port/v1, or replay:<file>)`);
  }
  if (!st.isDirectory()) throw new Error(`model ${dir} is not a folder (give a local model folder, an OpenAI-compatible URL, or replay:<file>)`);
  return hashFiles(dir, await listFiles(dir));
}

// ---- settings ------------------------------------------------------------------------------------------------

/** The settings of one run (everything that changes what the model sees or how it is scored). */
/** A sweep's dialect: a crop-tool dialect of the registry, or the PyVision code tool (run in a sandbox). */
export type SweepDialectId = DialectId | PyVisionDialectId;

export interface RunSettings {
  dialect: SweepDialectId;
  prompt: PromptId;
  mode: ResizeMode;
  /** Engine-side MIN/MAX_PIXELS (vLLM); undefined = the engine's default. */
  minPixels?: number;
  maxPixels?: number;
  temperature: number;
  topP: number;
  topK: number;
  /** Decoding seed (also the benchmark's option-shuffle seed). */
  seed: number;
  /** Overrides of the dialect's limits. */
  maxCalls?: number;
  maxImages?: number;
  tokenBudget?: number;
  maxTokensPerTurn?: number;
  /** Keep the first N samples (after sharding is applied to the full list, N is taken before sharding). */
  limit?: number;
}

/** Lists of values to cross (a single value is a list of one); a missing field takes its default. */
export interface SettingsGrid {
  dialect?: SweepDialectId | SweepDialectId[];
  prompt?: PromptId | PromptId[];
  mode?: ResizeMode | ResizeMode[];
  minPixels?: number | Array<number | undefined>;
  maxPixels?: number | Array<number | undefined>;
  temperature?: number | number[];
  seed?: number | number[];
  topP?: number;
  topK?: number;
  maxCalls?: number;
  maxImages?: number;
  tokenBudget?: number;
  maxTokensPerTurn?: number;
  limit?: number;
}

export interface BenchSpec {
  /** Adapter id (`getAdapter`). */
  id: string;
  /** The benchmark's data folder. */
  data: string;
  /** Adapter-specific load options (e.g. TallyQA `subset`). */
  options?: Record<string, unknown>;
}

export interface Shard {
  /** 0-based. */
  index: number;
  count: number;
}

export interface SweepPlan {
  models: ModelSpec[];
  benchmarks: BenchSpec[];
  settings?: SettingsGrid;
  shard?: Shard;
  /** With one model × bench × setting: use this run name instead of the derived one. */
  name?: string;
}

/** One planned run (before the runner resolves model hash and bench revision). */
export interface PlannedRun {
  /** Human name; the shard-free base of the id. Shards of one run share it. */
  name: string;
  /** Run folder id: the name, plus `.shard-<i>of<n>` when sharded. */
  id: string;
  model: ModelSpec;
  bench: BenchSpec;
  settings: RunSettings;
  shard?: Shard;
}

export const DEFAULT_SETTINGS: RunSettings = { dialect: 'pixel-reasoner', prompt: 'vcot', mode: 'eval', temperature: 0, topP: 1, topK: -1, seed: 0 };

/** Parse `i/n` (0 ≤ i < n). */
export function parseShard(s: string): Shard {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(s);
  if (!m) throw new Error(`--shard must look like i/n (e.g. 0/4), got ${JSON.stringify(s)}`);
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1) throw new Error(`--shard ${s}: n must be at least 1`);
  if (index >= count) throw new Error(`--shard ${s}: i counts from 0, so it must be below n (${count}); the shards of ${count} are 0/${count} … ${count - 1}/${count}`);
  return { index, count };
}

/** Which shard a qid belongs to: sha256(qid) mod n — stable whatever else is in the benchmark. */
export function shardOf(qid: string, count: number): number {
  if (count <= 1) return 0;
  const d = createHash('sha256').update(qid).digest();
  return d.readUInt32BE(0) % count;
}

export function inShard(qid: string, shard: Shard | undefined): boolean {
  return !shard || shardOf(qid, shard.count) === shard.index;
}

export function shardSuffix(shard: Shard | undefined): string {
  return shard && shard.count > 1 ? `.shard-${shard.index}of${shard.count}` : '';
}

/** Split a run id into its name and shard (`name.shard-1of4` → name, {1, 4}). */
export function splitRunId(id: string): { name: string; shard?: Shard } {
  const m = /^(.*)\.shard-(\d+)of(\d+)$/.exec(id);
  if (!m) return { name: id };
  return { name: m[1]!, shard: { index: Number(m[2]), count: Number(m[3]) } };
}

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[-.]+|[-.]+$/g, '');
}

/** A short stable hash of the settings that differ from the defaults (so names stay readable). */
function settingsTag(s: RunSettings): string {
  const parts: string[] = [];
  if (s.dialect !== DEFAULT_SETTINGS.dialect) parts.push(s.dialect);
  parts.push(s.prompt);
  if (s.mode !== 'eval') parts.push(s.mode);
  if (s.temperature !== 0) parts.push(`t${s.temperature}`);
  if (s.seed !== 0) parts.push(`s${s.seed}`);
  const rest = { minPixels: s.minPixels, maxPixels: s.maxPixels, topP: s.topP, topK: s.topK, maxCalls: s.maxCalls, maxImages: s.maxImages, tokenBudget: s.tokenBudget, maxTokensPerTurn: s.maxTokensPerTurn, limit: s.limit };
  const defaults = { topP: 1, topK: -1 } as Record<string, unknown>;
  const changed = Object.entries(rest).filter(([k, v]) => v !== undefined && v !== defaults[k]);
  if (changed.length) parts.push(createHash('sha256').update(JSON.stringify(changed)).digest('hex').slice(0, 8));
  return parts.join('-');
}

/** The derived run name: `<model>-<bench>-<settings>` (deterministic). */
export function runName(model: ModelSpec, bench: BenchSpec, settings: RunSettings): string {
  const base = slug(`${model.name}-${bench.id}-${settingsTag(settings)}`);
  if (base.length <= 100) return base;
  return `${base.slice(0, 91)}-${createHash('sha256').update(base).digest('hex').slice(0, 8)}`;
}

/** Validate a user-given run name (it becomes a folder name). */
export function checkRunName(name: string): string {
  if (!isRunId(name) || /\.shard-\d+of\d+$/.test(name) || name.length > 110) {
    throw new Error(`--run ${JSON.stringify(name)} is not a usable run name: letters, digits, '.', '_', '-' (no slashes, no '..', at most 110 characters, not ending in .shard-<i>of<n>)`);
  }
  return name;
}

function cross<T>(lists: T[][]): T[][] {
  return lists.reduce<T[][]>((acc, l) => acc.flatMap((a) => l.map((x) => [...a, x])), [[]]);
}

/** Expand a plan into its runs (models outermost, then benchmarks, then settings in grid order). */
export function expandPlan(plan: SweepPlan): PlannedRun[] {
  const g = plan.settings ?? {};
  const list = <T,>(v: T | T[] | undefined, d: T): T[] => (v === undefined ? [d] : Array.isArray(v) ? v : [v]);
  const dialects = list<string>(g.dialect, DEFAULT_SETTINGS.dialect);
  const prompts = list<string>(g.prompt, DEFAULT_SETTINGS.prompt);
  for (const d of dialects) {
    if (isDialectId(d) || isPyVisionDialect(d)) continue;
    throw new Error(`unknown dialect "${d}": use one of pixel-reasoner, verl-tool, deepeyes, pyvision, pyvision-rl`);
  }
  for (const p of prompts) if (p !== 'vcot' && p !== 'notool') throw new Error(`unknown prompt ${JSON.stringify(p)}: use vcot or notool`);
  if (dialects.some((d) => isPyVisionDialect(d)) && prompts.includes('notool')) throw new Error('the pyvision dialects have one prompt (vistool_with_img_info_v2, with the code tool): drop notool or run it with another dialect');
  // Every door (CLI, UI, plan files) reaches runs through here: decoding values an engine cannot take stop here.
  for (const t of list<number>(g.temperature, DEFAULT_SETTINGS.temperature)) {
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) throw new Error(`temperature must be a number ≥ 0 (0 = greedy), got ${JSON.stringify(t)}`);
  }
  if (g.maxTokensPerTurn !== undefined && (!Number.isInteger(g.maxTokensPerTurn) || g.maxTokensPerTurn < 1)) {
    throw new Error(`max tokens per turn must be a whole number ≥ 1, got ${JSON.stringify(g.maxTokensPerTurn)}`);
  }
  const axes = cross<unknown>([
    dialects,
    prompts,
    list<string>(g.mode, DEFAULT_SETTINGS.mode),
    list<number | undefined>(g.minPixels, undefined),
    list<number | undefined>(g.maxPixels, undefined),
    list<number>(g.temperature, DEFAULT_SETTINGS.temperature),
    list<number>(g.seed, DEFAULT_SETTINGS.seed),
  ]);
  const settingsList: RunSettings[] = axes.map(([dialect, prompt, mode, minPixels, maxPixels, temperature, seed]) => {
    const s: RunSettings = {
      dialect: dialect as SweepDialectId,
      prompt: prompt as PromptId,
      mode: mode as ResizeMode,
      temperature: temperature as number,
      topP: g.topP ?? 1,
      topK: g.topK ?? -1,
      seed: seed as number,
    };
    if (minPixels !== undefined) s.minPixels = minPixels as number;
    if (maxPixels !== undefined) s.maxPixels = maxPixels as number;
    for (const k of ['maxCalls', 'maxImages', 'tokenBudget', 'maxTokensPerTurn', 'limit'] as const) if (g[k] !== undefined) s[k] = g[k];
    return s;
  });
  const runs: PlannedRun[] = [];
  for (const model of plan.models) {
    for (const bench of plan.benchmarks) {
      for (const settings of settingsList) {
        const name = plan.name !== undefined ? checkRunName(plan.name) : runName(model, bench, settings);
        runs.push({ name, id: name + shardSuffix(plan.shard), model, bench, settings, ...(plan.shard ? { shard: plan.shard } : {}) });
      }
    }
  }
  if (plan.name !== undefined && runs.length > 1) throw new Error(`a run name (--run ${plan.name}) names one run, but the plan has ${runs.length}; leave --run out to get derived names`);
  const seen = new Set<string>();
  for (const r of runs) {
    if (seen.has(r.id)) throw new Error(`the plan has two runs named ${r.id}; make the models' names differ`);
    seen.add(r.id);
  }
  return runs;
}

// ---- manifest ------------------------------------------------------------------------------------------------

/** What the runner learned while preparing a run; goes into its manifest. */
export interface ResolvedRun {
  modelHash?: { hash: string; method: string };
  engine: { id: string; kind: string; model: string; device?: string; dtype?: unknown };
  benchInfo: LoadInfo;
  benchRevision: string;
  /** Total samples of the benchmark after `limit`, before sharding. */
  benchN: number;
  /** Samples in this shard. */
  n: number;
  scorers: Record<string, string>;
}

type Bounds = { minPixels: number; maxPixels: number };

/** The resize presets an episode in `mode` uses (app/tools/smartResize), for the manifest. */
export function resizeBounds(mode: ResizeMode): { initial: Bounds; zoom: Bounds; select: Bounds | null; videoFrame: Bounds } {
  const get = (step: 'initial' | 'zoom' | 'select' | 'video_frame'): Bounds | null => {
    const p = presetFor(step, mode);
    return p ? { ...RESIZE_PRESETS[p] } : null;
  };
  return { initial: get('initial')!, zoom: get('zoom')!, select: get('select'), videoFrame: get('video_frame') ?? { ...RESIZE_PRESETS.video_frame } };
}

/**
 * The limits a run's episodes use: the settings' overrides, else the dialect's. For the PyVision dialects
 * `maxCalls` is the turn limit (the references' max turns: PVRL 5, 30 in validation, i.e. an eval run) and
 * `sandbox` the per-run code limits (the wall time each reference waited).
 */
export function sweepLimits(s: RunSettings): { maxCalls: number; maxImages: number; tokenBudget: number; maxTokensPerTurn: number; sandbox?: Record<string, number> } {
  if (isPyVisionDialect(s.dialect)) {
    const variant = pyvisionVariantOf(s.dialect);
    const timeout = variant === 'PV' ? PYVISION_LIMITS.PV.timeoutS : PYVISION_LIMITS.PVRL.timeoutS;
    return {
      maxCalls: s.maxCalls ?? pyvisionMaxTurns(variant, s.mode),
      maxImages: s.maxImages ?? (variant === 'PVRL' ? PYVISION_LIMITS.PVRL.maxImages : 1000),
      tokenBudget: s.tokenBudget ?? 1_000_000,
      maxTokensPerTurn: s.maxTokensPerTurn ?? pyvisionMaxTokens(variant),
      sandbox: { ...DEFAULT_CODE_SANDBOX_LIMITS, wallSeconds: timeout },
    };
  }
  const d = getDialect(s.dialect);
  return { maxCalls: s.maxCalls ?? d.limits.maxCalls, maxImages: s.maxImages ?? d.limits.maxImages, tokenBudget: s.tokenBudget ?? d.limits.tokenBudget, maxTokensPerTurn: s.maxTokensPerTurn ?? d.limits.maxTokensPerTurn };
}

/** The full manifest of a planned run. */
export function buildManifest(run: PlannedRun, r: ResolvedRun, now: Date = new Date()): RunManifest {
  const s = run.settings;
  const dl = sweepLimits(s);
  const limits = { maxCalls: dl.maxCalls, maxImages: dl.maxImages, tokenBudget: dl.tokenBudget };
  const m = run.model;
  const model =
    m.kind === 'local'
      ? { id: m.name, path: m.path, ...(r.modelHash ? { hash: r.modelHash.hash, hashMethod: r.modelHash.method } : {}) }
      : m.kind === 'openai'
        ? { id: m.model || r.engine.model, url: m.url }
        : { id: m.name, path: m.file, ...(r.modelHash ? { hash: r.modelHash.hash } : {}) };
  return {
    id: run.id,
    name: run.name,
    createdAt: now.toISOString(),
    appVersion: APP_VERSION,
    kind: 'eval',
    model,
    engine: r.engine.kind,
    dialect: s.dialect,
    // PyVision has one prompt (its tool prompt); vcot/notool choose among the crop dialects' prompts.
    prompt: isPyVisionDialect(s.dialect) ? 'vistool_with_img_info_v2' : s.prompt,
    ...(s.minPixels !== undefined ? { minPixels: s.minPixels } : {}),
    ...(s.maxPixels !== undefined ? { maxPixels: s.maxPixels } : {}),
    zoom: resizeBounds(s.mode).zoom,
    decoding: { temperature: s.temperature, topP: s.topP, topK: s.topK, maxTokens: dl.maxTokensPerTurn, seed: s.seed },
    limits,
    bench: {
      id: run.bench.id,
      revision: r.benchRevision,
      data: run.bench.data,
      n: r.n,
      totalN: r.benchN,
      ...(r.benchInfo.optionOrder !== undefined ? { optionOrder: r.benchInfo.optionOrder } : {}),
      format: r.benchInfo.format,
      files: r.benchInfo.files,
      ...(s.limit !== undefined ? { limit: s.limit } : {}),
      ...(run.bench.options ? { options: run.bench.options } : {}),
    },
    scorers: r.scorers,
    ...(run.shard ? { shard: { index: run.shard.index, count: run.shard.count } } : {}),
    extra: {
      mode: s.mode,
      engineInfo: r.engine,
      // resize bounds the episode applies (initial view, crop results, selected frames, video frames)
      cropBounds: resizeBounds(s.mode),
      maxTokensPerTurn: dl.maxTokensPerTurn,
      ...(dl.sandbox ? { maxTurns: dl.maxCalls, sandbox: dl.sandbox } : {}),
    },
  };
}

/**
 * The fields that must match for a run to be resumed: a different model, benchmark data, dialect, prompt,
 * decoding or limits would mix two experiments in one file. Returns the differing field names.
 */
export function manifestConflicts(existing: RunManifest, planned: RunManifest): string[] {
  // Stored manifests hold model URLs without their password: compare both sides that way.
  const pick = (m: RunManifest) => redactUrlPasswordsDeep({
    'model.id': m.model.id,
    'model.hash': m.model.hash,
    'model.url': (m.model as Record<string, unknown>)['url'],
    engine: m.engine,
    dialect: m.dialect,
    prompt: m.prompt,
    minPixels: m.minPixels,
    maxPixels: m.maxPixels,
    decoding: m.decoding,
    limits: m.limits,
    'bench.id': m.bench?.id,
    'bench.revision': m.bench?.revision,
    'bench.n': m.bench?.n,
    scorers: m.scorers,
    shard: m.shard,
  });
  const a = pick(existing);
  const b = pick(planned);
  return Object.keys(a).filter((k) => JSON.stringify(a[k as keyof typeof a]) !== JSON.stringify(b[k as keyof typeof b]));
}

/**
 * Handlers of the Training domain: templates → forms, connectors per workspace, secrets (write-only), jobs with
 * live logs, parsed metrics and checkpoints. Files: `<workspace>/training/jobs.jsonl` (one record per change, last
 * per key wins), `training/connectors.json`, `training/secrets.enc.json` (AES-256-GCM; key in `.private/secret.key`,
 * mode 0600), `training/jobs/<local-id>/` (local connector).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { DomainHandlers } from '../../../app/contract/dispatch';
import {
  RemoteConnectorConfigSchema,
  type ConnectorInfo,
  type ConnectorList,
  type FieldIssue,
  type RemoteConnectorConfig,
  type RenderedJob,
  type TemplateField,
  type TemplateInfo,
  type TrainingJob,
  type TrainingMetricPoint,
  type trainingCalls,
} from '../../../app/contract';
import { createConnector, isTerminal, type Connector, type JobStatus } from '../../../app/connectors';
import { jobSecretEnv, redactJobText, submitWithSecrets } from './trainingSecrets';
import { templateToJobSpec } from '../../../app/training/jobSpec';
import { LOUPE_TINY_DRIVER, TEMPLATES, type MetricFormat, type MetricPoint } from '../../../app/training';
import { monitorJob, type MonitorHandle } from '../../../app/training/monitor';
import type { JobTemplate, TemplateOutput } from '../../../app/training/types';
import type { CoreContext } from '../context';
import { repoRoot } from '../repoRoot';

// ───────────── the custom-script job type (ours, not an upstream recipe) ─────────────

/** Synthetic verl console lines: a smoke test of connectors, logs and charts, not training. */
const SYNTHETIC_VERL_SCRIPT = [
  '# Synthetic job: prints verl console-format metric lines; it trains nothing.',
  'echo "synthetic verl-format metrics on $(hostname)"',
  'for s in $(seq 1 12); do',
  '  awk -v s=$s \'BEGIN { printf "step:%d - critic/score/mean:np.float64(%.4f) - val/accuracy:%.4f - actor/pg_loss:%.4f - response_length/mean:%.1f - tool/call_rate:%.3f\\n", s, 0.2 + 0.05*s + 0.03*sin(s), 0.3 + 0.03*s, -0.05 + 0.004*s, 300 + 12*s, 0.4 + 0.02*s }\'',
  '  sleep 0.5',
  'done',
  'echo "LOUPE_CHECKPOINT: $PWD/checkpoints/global_step_12"',
  'echo "done"',
].join('\n');

const CustomScriptSchema = z.object({
  /** The bash body to run, exactly as typed. */
  script: z.string().min(1, 'write the bash script to run').default(SYNTHETIC_VERL_SCRIPT),
  /** How to read metrics from the log. */
  metricsFormat: z.enum(['auto', 'verl-console', 'verl-jsonl', 'openrlhf', 'ms-swift']).default('auto'),
});

const customScriptTemplate: JobTemplate<typeof CustomScriptSchema> = {
  id: 'custom-script',
  title: 'Custom bash script',
  description: 'Runs exactly the script you type. The default prints synthetic verl-format metric lines over ~6 s (a smoke test of connectors, logs and charts; it trains nothing).',
  source: 'Loupe (your script)',
  schema: CustomScriptSchema,
  build(p): TemplateOutput {
    return { templateId: 'custom-script', script: `${p.script}\n`, env: {}, files: [], services: [], resources: {}, metrics: { format: p.metricsFormat }, notes: [] };
  },
};

const ALL_TEMPLATES: JobTemplate[] = [...(TEMPLATES as unknown as JobTemplate[]), customScriptTemplate as unknown as JobTemplate];

/** Short help for fields whose meaning is not obvious from the name (the schemas' JSDoc is not available at runtime). */
const DESCRIPTIONS: Record<string, string> = {
  repoDir: 'Checkout of the trainer on the machine that runs the job',
  model: 'Policy to start from (Hugging Face id or path)',
  policy: 'Warm-start policy (Hugging Face id or path)',
  'dataPrep.filterLen': 'Drop prompts longer than this many tokens (empty = keep all)',
  trainFiles: 'Parquet files to train on instead of the prepared data (one per line)',
  valFiles: 'Validation parquet files (one per line)',
  n: 'Responses per prompt (GRPO group size)',
  trainver: 'Training parquet',
  testver: 'Evaluation parquet',
  lr: 'Learning rate',
  dataset: 'ms-swift JSONL (messages, videos, solution, question_type)',
  judgeHost: 'Where the judge runs, as seen from the training nodes',
  baseModel: 'Model folder to start from (config.json, model.safetensors, tokenizer); relative = in the Loupe checkout',
  dataDir: 'Prepared data folder(s) from prepare.ts, comma-separated; empty = synthesize scenes',
  synthSeed: 'loupe-synth seed of the scenes to make (when dataDir is empty)',
  scenes: 'Scenes to synthesize and prepare (~1–2 s each on a CPU)',
  maxSteps: 'Stop after this many steps (empty = no step limit)',
  minutes: 'Stop after this many minutes of training (empty = no time limit)',
  device: 'Where train.py runs (auto = cuda when available)',
  valEvery: 'Validation loss every K steps',
  outputDir: 'Where the fine-tuned model goes (empty = the job folder’s model/)',
  exportOnnx: 'Also export ONNX (fp32 + q8) so the Models page can load it (needs transformers + onnx; ~20 s)',
  workDir: 'Job-local folder for the synthesized and prepared data',
  recipe: 'plain = language-model loss only; grounded = also train.py’s training-only grounding losses (target, position, pointer, read-out, box weight, mirrored first turns)',
  reading: 'Also the reading losses (glyph head and reading pointer on the crop); with synthesized scenes, half of every batch is built afresh from them',
  trainArgs: 'Extra train.py flags, space-separated, appended last (e.g. --aux-read 5 --crop-eval 0)',
  script: 'Bash body, run as typed',
  metricsFormat: 'How to parse metric lines from the log',
};
const TEXT_FIELDS = new Set(['script']);

type Json = Record<string, unknown>;

/** JSON-schema (zod's toJSONSchema, input side) → flat form fields. */
function fieldsOf(schema: Json, prefix = ''): TemplateField[] {
  const props = (schema['properties'] ?? {}) as Record<string, Json>;
  const required = new Set((schema['required'] ?? []) as string[]);
  const out: TemplateField[] = [];
  for (const [k, raw] of Object.entries(props)) {
    const name = `${prefix}${k}`;
    let p = raw;
    let nullable = false;
    const any = p['anyOf'] as Json[] | undefined;
    if (any) {
      nullable = any.some((x) => x['type'] === 'null');
      p = { ...(any.find((x) => x['type'] !== 'null') ?? {}), ...(p['default'] !== undefined ? { default: p['default'] } : {}) };
    }
    if (p['type'] === 'object' && p['properties']) {
      out.push(...fieldsOf(p, `${name}.`));
      continue;
    }
    const items = (p['items'] ?? {}) as Json;
    const type: TemplateField['type'] =
      p['type'] === 'boolean'
        ? 'boolean'
        : p['type'] === 'integer'
          ? 'integer'
          : p['type'] === 'number'
            ? 'number'
            : p['type'] === 'array'
              ? items['enum']
                ? 'enum[]'
                : 'string[]'
              : p['enum']
                ? 'enum'
                : TEXT_FIELDS.has(name)
                  ? 'text'
                  : 'string';
    const big = (x: unknown): boolean => typeof x === 'number' && Math.abs(x) >= Number.MAX_SAFE_INTEGER;
    const min = p['minimum'] ?? p['exclusiveMinimum'];
    const max = p['maximum'] ?? p['exclusiveMaximum'];
    const options = (p['enum'] ?? items['enum']) as string[] | undefined;
    const description = (p['description'] as string | undefined) ?? DESCRIPTIONS[name];
    out.push({
      name,
      type,
      ...(p['default'] !== undefined ? { default: p['default'] } : {}),
      required: p['default'] === undefined && required.has(k),
      nullable,
      ...(description ? { description } : {}),
      ...(typeof min === 'number' && !big(min) ? { min, ...(p['exclusiveMinimum'] !== undefined ? { exclusiveMin: true } : {}) } : {}),
      ...(typeof max === 'number' && !big(max) ? { max } : {}),
      ...(options ? { options } : {}),
      ...(typeof p['pattern'] === 'string' ? { pattern: p['pattern'] } : {}),
    });
  }
  return out;
}

// ───────────── loupe-tiny: is the local trainer usable here? ─────────────

/** Every Python module models/loupe-tiny/train.py (and what it imports: qwen_torch, scene_traj, pr_env, rl) needs to run
 * a fine-tune; the ONNX export's transformers/onnx are optional (train.py skips the export without them and says so). */
export const LOUPE_TINY_PY_MODULES = [
  { module: 'torch', install: 'python3-torch / pip install torch' },
  { module: 'numpy', install: 'python3-numpy / pip install numpy' },
  { module: 'PIL', install: 'python3-pil / pip install pillow' },
] as const;

type PyCheck = { python: string; torch: string } | { python: null; tried: string[]; missing: Record<string, string[]> };

/** The first Python (LOUPE_PYTHON, else python3, /usr/bin/python3, as the driver resolves it) that imports every module the
 * trainer needs; else which modules each candidate lacks. Cached until a recheck: a user who installs torch presses
 * "Check again" rather than restarting. */
let torchPython: Promise<PyCheck> | null = null;
function findTorchPython(recheck = false): Promise<PyCheck> {
  if (recheck) torchPython = null;
  torchPython ??= (async () => {
    const candidates = process.env['LOUPE_PYTHON'] ? [process.env['LOUPE_PYTHON']] : ['python3', '/usr/bin/python3'];
    const names = LOUPE_TINY_PY_MODULES.map((m) => m.module);
    // find_spec finds without importing; torch is then imported for its version (and to prove it loads)
    const code =
      `import importlib.util, json\nm = [n for n in ${JSON.stringify(names)} if importlib.util.find_spec(n) is None]\n` +
      `v = None\nif not m:\n    import torch\n    v = torch.__version__\nprint(json.dumps({"missing": m, "torch": v}))`;
    const missing: Record<string, string[]> = {};
    for (const py of candidates) {
      const out = await new Promise<string | null>((resolve) => {
        execFile(py, ['-c', code], { timeout: 180_000 }, (err, stdout) => resolve(err ? null : stdout.trim()));
      });
      let r: { missing: string[]; torch: string | null } | null = null;
      try {
        r = out ? (JSON.parse(out.split('\n').pop() ?? '') as { missing: string[]; torch: string | null }) : null;
      } catch {
        r = null;
      }
      if (r && r.missing.length === 0 && r.torch) return { python: py, torch: r.torch };
      missing[py] = r ? r.missing : ['python3 itself (it did not run)'];
    }
    return { python: null, tried: candidates, missing };
  })();
  return torchPython;
}
let loupeTinyState: { ok: boolean; notice: string; reason?: string } = { ok: false, notice: 'Checking for Python with torch…' };

/** The loupe-tiny template is runnable when the driver and a train.py with the fine-tune flags exist and a Python has
 * every module the trainer imports. */
async function refreshLoupeTiny(root: string, recheck = false): Promise<void> {
  const driver = path.join(root, LOUPE_TINY_DRIVER);
  const trainer = path.join(root, 'models', 'loupe-tiny', 'train.py');
  const src = await fs.promises.readFile(trainer, 'utf8').catch(() => null);
  if (!fs.existsSync(driver) || src === null) {
    loupeTinyState = { ok: false, reason: 'not in this build', notice: `The loupe-tiny trainer is not part of this build (${LOUPE_TINY_DRIVER} or models/loupe-tiny/train.py is missing): the job fails at once.` };
    return;
  }
  if (!src.includes('--max-steps') || !src.includes('--init')) {
    loupeTinyState = { ok: false, reason: 'trainer too old', notice: 'models/loupe-tiny/train.py in this build predates the local fine-tune (no --init/--max-steps): the job would fail at the train phase.' };
    return;
  }
  const py = await findTorchPython(recheck);
  if ('torch' in py) {
    loupeTinyState = { ok: true, notice: `Runs here: synth → prepare → train on ${py.python} (torch ${py.torch}). CPU-sized defaults: a few minutes in all. LOUPE_PYTHON chooses another Python.` };
    return;
  }
  // the modules the best candidate lacks (the one missing fewest), named the way a user installs them
  const lacks = Object.values(py.missing).sort((a, b) => a.length - b.length)[0] ?? ['torch'];
  const what = lacks.length === 1 ? `${lacks[0]} is missing` : `${lacks.join(', ')} are missing`;
  const how = LOUPE_TINY_PY_MODULES.filter((m) => lacks.includes(m.module)).map((m) => `${m.module}: ${m.install}`).join('; ');
  const per = py.tried.map((p) => `${p}: no ${(py.missing[p] ?? []).join(', ')}`).join('; ');
  loupeTinyState = {
    ok: false,
    reason: what,
    notice: `${what[0]?.toUpperCase()}${what.slice(1)}: the fine-tune needs Python 3 with ${LOUPE_TINY_PY_MODULES.map((m) => m.module).join(', ')} (${per}), so the job would fail at once. Install ${how ? `(${how})` : 'them'}, or set LOUPE_PYTHON to a Python that has them, then press Check again.`,
  };
}

function templateInfo(t: JobTemplate): TemplateInfo {
  const js = z.toJSONSchema(t.schema, { io: 'input', unrepresentable: 'any' }) as Json;
  let available = true;
  let notice: string | undefined;
  let reason: string | undefined;
  if (t.id === 'loupe-tiny-finetune') {
    available = loupeTinyState.ok;
    notice = loupeTinyState.notice;
    reason = loupeTinyState.reason;
  } else if (t.id === 'custom-script') {
    notice = 'Runs your script as typed. The default script is synthetic: it prints made-up verl-format metrics and trains nothing.';
  } else {
    notice = `Needs the upstream trainer installed where the job runs (source: ${t.source}). Loupe generates the command; it does not install the trainer.`;
  }
  return {
    id: t.id,
    title: t.title,
    description: t.description,
    source: t.source,
    available,
    ...(notice ? { notice } : {}),
    ...(!available && reason ? { unavailableReason: reason } : {}),
    fields: fieldsOf(js),
  };
}

function findTemplate(id: string): JobTemplate {
  const t = ALL_TEMPLATES.find((x) => x.id === id);
  if (!t) throw new Error(`unknown training template ${JSON.stringify(id)}; known: ${ALL_TEMPLATES.map((x) => x.id).join(', ')}`);
  return t;
}

function build(id: string, params: unknown): { ok: true; out: TemplateOutput; params: Json } | { ok: false; issues: FieldIssue[] } {
  const t = findTemplate(id);
  const r = t.schema.safeParse(params ?? {});
  if (!r.success) return { ok: false, issues: r.error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(params)', message: i.message })) };
  return { ok: true, out: t.build(r.data), params: r.data as Json };
}

// ───────────── checkpoints in logs ─────────────
const CHECKPOINT_RES = [
  /\bLOUPE_CHECKPOINT[=:]\s*(\S+)/,
  /[Ss]av(?:ing|ed) (?:model )?checkpoint (?:to|at|in):? ['"]?([^\s'"]+)/,
  /local_global_step_folder:\s*(\S+)/,
];
export function findCheckpoints(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    for (const re of CHECKPOINT_RES) {
      const m = re.exec(line);
      if (m?.[1]) {
        out.push(m[1].replace(/[.,;]+$/, ''));
        break;
      }
    }
  }
  return out;
}

const toWire = (p: MetricPoint): TrainingMetricPoint => ({
  step: p.step,
  metrics: Object.fromEntries(Object.entries(p.metrics).map(([k, v]) => [k, Number.isFinite(v) ? v : null])),
});

interface Watch {
  handle: MonitorHandle | null;
  log: string;
  truncated: boolean;
  offset: number;
  points: TrainingMetricPoint[];
  following: boolean;
  done: Promise<void>;
}

const LOG_KEEP = 512 * 1024;

/** Handlers of the Training domain. */
export function trainingHandlers(ctx: CoreContext): DomainHandlers<typeof trainingCalls> {
  const dir = path.join(ctx.workspace, 'training');
  const jobsFile = path.join(dir, 'jobs.jsonl');
  const connFile = path.join(dir, 'connectors.json');
  const root = repoRoot();
  const secrets = ctx.secrets; // OS keychain (Electron) or the AES-GCM file: chosen in the composition root
  const localConfig = { kind: 'local' as const, name: 'local', root: path.join(dir, 'jobs') };

  const connectors = new Map<string, Promise<Connector>>();
  let jobs: Map<string, TrainingJob> | null = null;
  const watches = new Map<string, Watch>();
  let writeChain: Promise<void> = Promise.resolve();

  ctx.disposers.push(async () => {
    for (const w of watches.values()) w.handle?.dispose();
    await Promise.all([...watches.values()].map((w) => w.done));
    await writeChain;
    for (const c of connectors.values()) await c.then((x) => x.close()).catch(() => undefined);
    connectors.clear();
  });

  const readConfigs = async (): Promise<RemoteConnectorConfig[]> => {
    const text = await fs.promises.readFile(connFile, 'utf8').catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? null : Promise.reject(e)));
    if (text === null) return [];
    let j: unknown;
    try {
      j = JSON.parse(text);
    } catch {
      throw new Error(`${connFile} is not valid JSON; fix or delete it (connections are lost)`);
    }
    const list = (j as { connectors?: unknown[] }).connectors ?? [];
    return list.flatMap((c) => {
      const r = RemoteConnectorConfigSchema.safeParse(c);
      return r.success ? [r.data] : [];
    });
  };
  const writeConfigs = async (list: RemoteConnectorConfig[]): Promise<void> => {
    await fs.promises.mkdir(dir, { recursive: true });
    const tmp = `${connFile}.tmp`;
    await fs.promises.writeFile(tmp, JSON.stringify({ version: 1, connectors: list }, null, 2));
    await fs.promises.rename(tmp, connFile);
  };

  const summary = (c: RemoteConnectorConfig): string =>
    c.kind === 'slurm-ssh' ? `${c.user}@${c.host}:${c.port} → ${c.remoteDir}${c.partition ? ` (${c.partition})` : ''}` : c.kind === 'slurmrestd' ? `${c.user} @ ${c.baseUrl} → ${c.outputDir}` : c.baseUrl;
  const secretRefs = (c: RemoteConnectorConfig): string[] =>
    c.kind === 'slurm-ssh' ? [c.keySecret, ...(c.passphraseSecret ? [c.passphraseSecret] : [])] : c.tokenSecret ? [c.tokenSecret] : [];

  const listConnectors = async (): Promise<ConnectorList> => {
    const names = await secrets.list();
    const have = new Set(names);
    const infos: ConnectorInfo[] = [{ name: 'local', kind: 'local', summary: `this machine → ${path.relative(ctx.workspace, localConfig.root)}/ in the workspace`, config: null, missingSecrets: [] }];
    for (const c of await readConfigs()) infos.push({ name: c.name, kind: c.kind, summary: summary(c), config: c, missingSecrets: secretRefs(c).filter((s) => !have.has(s)) });
    const { kind, label, note } = ctx.secretStore;
    return { connectors: infos, secrets: names, secretStore: { kind, label, ...(note ? { note } : {}) } };
  };

  const dropConnector = async (name: string): Promise<void> => {
    const c = connectors.get(name);
    connectors.delete(name);
    await c?.then((x) => x.close()).catch(() => undefined);
  };

  const getConnector = (name: string): Promise<Connector> => {
    let c = connectors.get(name);
    if (!c) {
      c = (async () => {
        if (name === 'local') return createConnector(localConfig, secrets);
        const cfg = (await readConfigs()).find((x) => x.name === name);
        if (!cfg) throw new Error(`no connector named ${JSON.stringify(name)}; add it under Connectors`);
        return createConnector(cfg, secrets);
      })();
      connectors.set(name, c);
      c.catch(() => connectors.delete(name));
    }
    return c;
  };
  /** Local loupe-tiny jobs run this checkout's synth, prepare.ts and train.py. */
  const loupeEnv = (templateId: string, kind: Connector['kind']): { extraEnv?: Record<string, string> } => (templateId === 'loupe-tiny-finetune' && kind === 'local' ? { extraEnv: { LOUPE_REPO: root } } : {});
  const kindOf = async (name: string): Promise<Connector['kind']> => {
    if (name === 'local') return 'local';
    const cfg = (await readConfigs()).find((x) => x.name === name);
    if (!cfg) throw new Error(`no connector named ${JSON.stringify(name)}; add it under Connectors`);
    return cfg.kind;
  };

  const loadJobs = async (): Promise<Map<string, TrainingJob>> => {
    if (jobs) return jobs;
    const m = new Map<string, TrainingJob>();
    const text = await fs.promises.readFile(jobsFile, 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        const j = JSON.parse(line) as TrainingJob;
        if (typeof j.key === 'string') m.set(j.key, j);
      } catch {
        /* a torn last line after a crash: the previous record of that job stays */
      }
    }
    jobs = m;
    return m;
  };
  const saveJob = async (job: TrainingJob): Promise<void> => {
    (await loadJobs()).set(job.key, job);
    const line = `${JSON.stringify(job)}\n`;
    writeChain = writeChain.then(async () => {
      await fs.promises.mkdir(dir, { recursive: true });
      await fs.promises.appendFile(jobsFile, line);
    });
    await writeChain;
    ctx.emit('training:state', job);
  };
  const getJob = async (key: string): Promise<TrainingJob> => {
    const j = (await loadJobs()).get(key);
    if (!j) throw new Error(`no training job ${JSON.stringify(key)} in this workspace`);
    return j;
  };

  const applyStatus = async (key: string, s: JobStatus): Promise<void> => {
    const j = await getJob(key);
    const { message: _stale, ...rest } = j; // a message belongs to the state it came with
    const next: TrainingJob = {
      ...rest,
      state: s.state,
      rawState: s.rawState,
      ...(s.message ? { message: s.message } : {}),
      ...(s.exitCode !== undefined ? { exitCode: s.exitCode } : {}),
      ...(s.endedAt ? { endedAt: new Date(s.endedAt).toISOString() } : isTerminal(s.state) && !j.endedAt ? { endedAt: new Date().toISOString() } : {}),
    };
    if (next.state !== j.state || next.rawState !== j.rawState || next.message !== j.message) await saveJob(next);
  };

  const addCheckpoints = async (key: string, found: string[]): Promise<void> => {
    if (!found.length) return;
    const j = await getJob(key);
    const fresh = found.filter((p) => !j.checkpoints.includes(p));
    if (!fresh.length) return;
    await saveJob({ ...j, checkpoints: [...j.checkpoints, ...fresh] });
    for (const p of fresh) ctx.emit('training:checkpoint', { key, path: p });
  };

  /** Follow a job once per core: log tail, points and states stay here for every later `training:open`. */
  const watch = async (job: TrainingJob): Promise<Watch> => {
    const existing = watches.get(job.key);
    if (existing) return existing;
    const w: Watch = { handle: null, log: '', truncated: false, offset: 0, points: [], following: true, done: Promise.resolve() };
    watches.set(job.key, w);
    let conn: Connector;
    try {
      conn = await getConnector(job.connector);
    } catch (e) {
      // Keep the last known state; the next open/list tries again (e.g. after the secret is set).
      w.following = false;
      watches.delete(job.key);
      const msg = `cannot follow now: ${(e as Error).message}`;
      if (job.message !== msg) await saveJob({ ...job, message: msg });
      return w;
    }
    const key = job.key;
    const hide = await jobSecretEnv(secrets, job.secretEnv); // a job that printed its secrets: masked in the UI
    let chain: Promise<void> = Promise.resolve();
    const serial = (fn: () => Promise<void>): void => {
      chain = chain.then(fn).catch(() => undefined);
    };
    const h = monitorJob(conn, job.id, {
      format: job.metricsFormat as MetricFormat,
      pollMs: 500,
      onText: (raw, nextOffset) => {
        const text = redactJobText(raw, hide);
        const offset = w.offset;
        w.offset = nextOffset;
        w.log += text;
        if (w.log.length > LOG_KEEP) {
          const cut = w.log.indexOf('\n', w.log.length - LOG_KEEP);
          w.log = w.log.slice(cut + 1);
          w.truncated = true;
        }
        ctx.emit('training:log', { key, text, offset, nextOffset });
        const cps = findCheckpoints(text);
        if (cps.length) serial(() => addCheckpoints(key, cps));
      },
      onPoints: (pts) => {
        const wire = pts.map(toWire);
        w.points.push(...wire);
        ctx.emit('training:metric', { key, points: wire });
      },
      onStatus: (s) => serial(() => applyStatus(key, s)),
    });
    w.handle = h;
    w.done = h.done.then(async (r) => {
      w.following = false;
      await chain;
      if (r.reason === 'vanished') await applyStatus(key, { ...r.status, state: 'unknown', message: r.status.message ?? 'the backend no longer knows this job (purged or never existed)' });
      else if (r.reason === 'error') await applyStatus(key, { ...r.status, message: `following stopped: ${r.error?.message ?? 'error'}` });
      else if (r.reason === 'terminal') await applyStatus(key, r.status);
    });
    return w;
  };

  return {
    'training:templates': async ({ recheck }) => {
      await refreshLoupeTiny(root, recheck === true);
      return { templates: ALL_TEMPLATES.map((t) => templateInfo(t)) };
    },

    'training:render': async ({ templateId, params, connector }) => {
      const r = build(templateId, params);
      if (!r.ok) return { ok: false, issues: r.issues };
      const kind = await kindOf(connector);
      const spec = templateToJobSpec(r.out, { name: 'preview', kind, ...loupeEnv(templateId, kind) });
      const job: RenderedJob = {
        templateId: r.out.templateId,
        script: spec.script,
        env: spec.env ?? {},
        files: r.out.files.map((f) => ({ path: f.path, chars: f.content.length })),
        services: r.out.services.map((s) => ({ name: s.name, note: s.note, script: s.script })),
        notes: r.out.notes,
        resources: Object.fromEntries(Object.entries(r.out.resources).filter(([, v]) => v !== undefined)) as Record<string, number | string>,
        metricsFormat: r.out.metrics.format,
      };
      return { ok: true, job };
    },

    'training:connectors': () => listConnectors(),
    'training:connectorSave': async ({ config }) => {
      if (config.name === 'local') throw new Error('"local" is the built-in connector; choose another name');
      const list = (await readConfigs()).filter((c) => c.name !== config.name);
      await writeConfigs([...list, config]);
      await dropConnector(config.name);
      return listConnectors();
    },
    'training:connectorDelete': async ({ name }) => {
      const list = await readConfigs();
      if (!list.some((c) => c.name === name)) throw new Error(`no connector named ${JSON.stringify(name)}`);
      await writeConfigs(list.filter((c) => c.name !== name));
      await dropConnector(name);
      return listConnectors();
    },
    'training:connectorProbe': async ({ name }) => {
      try {
        await dropConnector(name); // settings or secrets may have changed: connect afresh
        const c = await getConnector(name);
        return { ok: true, message: await c.probe() };
      } catch (e) {
        await dropConnector(name);
        return { ok: false, message: e instanceof Error ? e.message : String(e) };
      }
    },
    'training:secretSet': async ({ name, value }) => {
      await secrets.set(name, value);
      for (const c of await readConfigs()) if (secretRefs(c).includes(name)) await dropConnector(c.name);
      return listConnectors();
    },
    'training:secretDelete': async ({ name }) => {
      await secrets.delete(name);
      return listConnectors();
    },

    'training:submit': async ({ templateId, params, connector, name, secretEnv }) => {
      const t = findTemplate(templateId);
      const r = build(templateId, params);
      if (!r.ok) throw new Error(`parameters: ${r.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
      const conn = await getConnector(connector);
      const jobName = name ?? templateId;
      const spec = templateToJobSpec(r.out, { name: jobName, kind: conn.kind, ...loupeEnv(templateId, conn.kind) });
      const res = await submitWithSecrets(conn, spec, secrets, secretEnv);
      const job: TrainingJob = {
        key: `${connector}/${res.id}`,
        id: res.id,
        name: jobName,
        connector,
        connectorKind: conn.kind,
        templateId,
        templateTitle: t.title,
        params: r.params,
        metricsFormat: r.out.metrics.format,
        state: 'pending',
        rawState: 'submitted',
        submittedAt: new Date().toISOString(),
        checkpoints: [],
        ...(secretEnv && Object.keys(secretEnv).length ? { secretEnv } : {}),
      };
      await saveJob(job);
      await watch(job);
      return job;
    },

    'training:jobs': async () => {
      const all = [...(await loadJobs()).values()];
      // Jobs left running by an earlier session: follow them again so their states move.
      for (const j of all) if (!isTerminal(j.state) && j.state !== 'unknown' && !watches.has(j.key)) void watch(j);
      return { jobs: all.sort((a, b) => b.submittedAt.localeCompare(a.submittedAt)) };
    },

    'training:open': async ({ key }) => {
      const job = await getJob(key);
      const w = await watch(job);
      // A finished job: read its whole log once before answering (bounded wait; the rest arrives as events).
      if (isTerminal(job.state) && w.following) await Promise.race([w.done, new Promise((r) => setTimeout(r, 15_000))]);
      return { job: await getJob(key), log: w.log, logOffset: w.offset, logTruncated: w.truncated, points: w.points, following: w.following };
    },

    'training:cancel': async ({ key }) => {
      const job = await getJob(key);
      const conn = await getConnector(job.connector);
      await conn.cancel(job.id);
      await applyStatus(key, await conn.status(job.id));
      return getJob(key);
    },

    'training:evalCommand': async ({ key, checkpoint, bench }) => {
      const job = await getJob(key);
      const q = (s: string): string => (/^[A-Za-z0-9._/:@=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
      const run = `${job.name}-${path.basename(checkpoint)}`.replace(/[^A-Za-z0-9._-]/g, '_');
      const command = `npx loupe eval --model ${q(checkpoint)} --bench ${q(bench)} --run ${q(run)}`;
      const where = job.connectorKind === 'local' ? 'on this machine' : `on the cluster behind "${job.connector}" (the path is on that machine), or copy it here first`;
      const note = `Run it ${where}. --model takes a Loupe model folder (ONNX) or an OpenAI-compatible URL: for a PyTorch checkpoint (verl/FSDP shards: merge to Hugging Face format first), serve it with vLLM and pass --model http://HOST:PORT/v1#NAME.`;
      return { command, note };
    },
  };
}

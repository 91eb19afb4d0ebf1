/**
 * The training service: connectors per workspace, secrets (write-only), jobs with live logs, parsed metrics and
 * checkpoints. The Training page (through the core's handlers) and `loupe train` use it alike. Files:
 * `<workspace>/training/jobs.jsonl` (JobStore), `training/connectors.json`, the secret store the door opens
 * (app/connectors/secrets.ts), `training/jobs/<local-id>/` (local connector).
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  RemoteConnectorConfigSchema,
  type ConnectorInfo,
  type ConnectorList,
  type EventName,
  type EventPayload,
  type RemoteConnectorConfig,
  type RenderedJob,
  type RenderResult,
  type TrainingJob,
  type TrainingMetricPoint,
} from '../contract';
import { createConnector, isTerminal, type Connector, type JobStatus, type SecretStore, type SecretStoreInfo } from '../connectors';
import { jobSecretEnv, redactJobText, submitWithSecrets } from './secretEnv';
import { templateToJobSpec } from './jobSpec';
import type { MetricFormat, MetricPoint } from './metrics';
import { monitorJob, type MonitorHandle } from './monitor';
import { JobStore } from './jobStore';
import { ALL_TEMPLATES, LOUPE_TINY_CHECKING, buildForm, checkLoupeTiny, findTemplate, templateInfo, type LoupeTinyState } from './templateInfo';
import { findTrainerPython, type TrainerPython } from '../workspace/python';
import { writeFileAtomic } from '../workspace/fsutil';
import { sleep } from '../sleep';

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

export interface TrainingServiceOptions {
  workspace: string;
  /** The one secret store of the workspace (the door opens it: OS keychain in Electron, else the AES-GCM file). */
  secrets: SecretStore;
  secretStore: SecretStoreInfo;
  /** The package root (the loupe-tiny driver and train.py live there). */
  packageRoot: string;
  /** Live events (the core forwards them to the UI; the CLI passes none). */
  emit?: <E extends EventName>(event: E, payload: EventPayload<E>) => void;
  /**
   * Watch jobs.jsonl for records other processes append (`loupe train submit` beside a running app) and announce
   * them as `training:state` events, so the Training page shows a job whatever door submitted it.
   */
  watchStore?: boolean;
}

export type TrainingService = ReturnType<typeof createTrainingService>;

export function createTrainingService(o: TrainingServiceOptions) {
  const ctx = { workspace: o.workspace, secretStore: o.secretStore, emit: o.emit ?? (() => undefined) };
  const dir = path.join(o.workspace, 'training');
  const connFile = path.join(dir, 'connectors.json');
  const root = o.packageRoot;
  const secrets = o.secrets;
  const jobs = new JobStore(o.workspace);
  // Checked once per service: a Python that imports torch does not come and go while the app runs.
  let torchPython: Promise<TrainerPython> | null = null;
  let loupeTiny: LoupeTinyState = LOUPE_TINY_CHECKING;
  const localConfig = { kind: 'local' as const, name: 'local', root: path.join(dir, 'jobs') };

  const connectors = new Map<string, Promise<Connector>>();
  const watches = new Map<string, Watch>();

  // What the UI has been told about each job, to announce only records that changed on disk.
  const announced = new Map<string, string>();
  let storeWatch: fs.FSWatcher | null = null;
  let syncTimer: ReturnType<typeof setTimeout> | null = null;
  const syncFromDisk = async (): Promise<void> => {
    for (const j of await jobs.list()) {
      const text = JSON.stringify(j);
      if (announced.get(j.key) === text) continue;
      announced.set(j.key, text);
      ctx.emit('training:state', j);
    }
  };
  if (o.watchStore) {
    // A long-lived core: look for the trainer's Python now (importing torch takes seconds), not when the page asks.
    torchPython = findTrainerPython();
    fs.mkdirSync(path.dirname(jobs.file), { recursive: true });
    void jobs.list().then((all) => all.forEach((j) => announced.set(j.key, JSON.stringify(j))), () => undefined);
    storeWatch = fs.watch(path.dirname(jobs.file), (_event, name) => {
      if (name && name !== path.basename(jobs.file)) return;
      // Appends come in bursts (a job and its first state): read once they settle.
      if (syncTimer) clearTimeout(syncTimer);
      syncTimer = setTimeout(() => void syncFromDisk().catch(() => undefined), 150);
    });
    storeWatch.on('error', () => undefined);
  }

  /** Stop following jobs and close the connectors (the core is shutting down, or a CLI command is done). */
  async function dispose(): Promise<void> {
    storeWatch?.close();
    if (syncTimer) clearTimeout(syncTimer);
    for (const w of watches.values()) w.handle?.dispose();
    await Promise.all([...watches.values()].map((w) => w.done));
    for (const c of connectors.values()) await c.then((x) => x.close()).catch(() => undefined);
    connectors.clear();
  }

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
    await writeFileAtomic(connFile, JSON.stringify({ version: 1, connectors: list }, null, 2));
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

  const saveJob = async (job: TrainingJob): Promise<void> => {
    await jobs.save(job);
    announced.set(job.key, JSON.stringify(job));
    ctx.emit('training:state', job);
  };
  const getJob = async (key: string): Promise<TrainingJob> => {
    const j = await jobs.get(key);
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
    dispose,
    /** The job store (read by `loupe train list`). */
    store: jobs,
    /** A connector of this workspace by name (`local` or one saved under Connectors). */
    connector: (name: string) => getConnector(name),
    /** recheck: look for the trainer's Python again (the page's "Check again": installed since the last look). */
    templates: async (recheck = false) => {
      if (recheck) torchPython = null;
      torchPython ??= findTrainerPython();
      const tp = torchPython;
      loupeTiny = await checkLoupeTiny(root, () => tp);
      return { templates: ALL_TEMPLATES.map((t) => templateInfo(t, loupeTiny)) };
    },

    render: async ({ templateId, params, connector }: { templateId: string; params: unknown; connector: string }): Promise<RenderResult> => {
      const r = buildForm(templateId, params);
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

    connectors: () => listConnectors(),
    connectorSave: async ({ config }: { config: RemoteConnectorConfig }) => {
      if (config.name === 'local') throw new Error('"local" is the built-in connector; choose another name');
      const list = (await readConfigs()).filter((c) => c.name !== config.name);
      await writeConfigs([...list, config]);
      await dropConnector(config.name);
      return listConnectors();
    },
    connectorDelete: async ({ name }: { name: string }) => {
      const list = await readConfigs();
      if (!list.some((c) => c.name === name)) throw new Error(`no connector named ${JSON.stringify(name)}`);
      await writeConfigs(list.filter((c) => c.name !== name));
      await dropConnector(name);
      return listConnectors();
    },
    connectorProbe: async ({ name }: { name: string }) => {
      try {
        await dropConnector(name); // settings or secrets may have changed: connect afresh
        const c = await getConnector(name);
        return { ok: true, message: await c.probe() };
      } catch (e) {
        await dropConnector(name);
        return { ok: false, message: e instanceof Error ? e.message : String(e) };
      }
    },
    secretSet: async ({ name, value }: { name: string; value: string }) => {
      await secrets.set(name, value);
      for (const c of await readConfigs()) if (secretRefs(c).includes(name)) await dropConnector(c.name);
      return listConnectors();
    },
    /** Forget a secret (connectors that name it fail their next use with "not in the secret store"). */
    secretDelete: async ({ name }: { name: string }) => {
      const removed = await secrets.delete(name);
      if (!removed) throw new Error(`no secret named ${JSON.stringify(name)} is stored`);
      for (const c of await readConfigs()) if (secretRefs(c).includes(name)) await dropConnector(c.name);
      return listConnectors();
    },
    submit: async ({ templateId, params, connector, name, secretEnv, cwd }: { templateId: string; params: unknown; connector: string; name?: string | undefined; secretEnv?: Record<string, string> | undefined; cwd?: string | undefined }) => {
      const t = findTemplate(templateId);
      const r = buildForm(templateId, params);
      if (!r.ok) throw new Error(`parameters: ${r.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
      const conn = await getConnector(connector);
      const jobName = name ?? templateId;
      const spec = templateToJobSpec(r.out, { name: jobName, kind: conn.kind, ...loupeEnv(templateId, conn.kind), ...(cwd ? { cwd } : {}) });
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

    jobs: async () => {
      const all = await jobs.list();
      // Jobs left running by an earlier session: follow them again so their states move.
      for (const j of all) if (!isTerminal(j.state) && j.state !== 'unknown' && !watches.has(j.key)) void watch(j);
      const issues = jobs.issues();
      return { jobs: all, ...(issues.length ? { issues } : {}) };
    },

    open: async ({ key }: { key: string }) => {
      const job = await getJob(key);
      const w = await watch(job);
      // A finished job: read its whole log once before answering (bounded wait; the rest arrives as events).
      if (isTerminal(job.state) && w.following) await Promise.race([w.done, sleep(15_000)]);
      return { job: await getJob(key), log: w.log, logOffset: w.offset, logTruncated: w.truncated, points: w.points, following: w.following };
    },

    /** Ask the backend for a job's state now and record it (what `loupe train list` does without a running app). */
    refresh: async (key: string): Promise<TrainingJob> => {
      const job = await getJob(key);
      if (isTerminal(job.state)) return job;
      const conn = await getConnector(job.connector);
      await applyStatus(key, await conn.status(job.id));
      return getJob(key);
    },

    /** Masks a job's secret values in text (as the Training page's log does). */
    secretMask: async (job: TrainingJob): Promise<(text: string) => string> => {
      const hide = await jobSecretEnv(secrets, job.secretEnv);
      return (text: string) => redactJobText(text, hide);
    },

    /** A job by key (`connector/id`) or by backend id alone. */
    find: async (keyOrId: string): Promise<TrainingJob | undefined> => {
      const all = await jobs.list();
      return all.find((j) => j.key === keyOrId) ?? all.find((j) => j.id === keyOrId);
    },

    cancel: async ({ key }: { key: string }) => {
      const job = await getJob(key);
      const conn = await getConnector(job.connector);
      await conn.cancel(job.id);
      await applyStatus(key, await conn.status(job.id));
      return getJob(key);
    },

    evalCommand: async ({ key, checkpoint, bench }: { key: string; checkpoint: string; bench: string }) => {
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

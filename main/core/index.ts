/**
 * The composition root: the one place that wires workspace, engines, image ops and runners into the
 * contract's handlers. Every door (Electron IPC, the browser-mode server, tests) carries messages here.
 */
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { EventEmitter } from 'node:events';
import { APP_VERSION } from '../../app/version';
import { dispatch, type Handlers, type Reply } from '../../app/contract/dispatch';
import { SettingsSchema, events, type EngineState, type EventName, type EventPayload, type Settings } from '../../app/contract';
import { chooseWorkspace, defaultConfigDir, defaultWorkspaceDir, readSettings as readSettingsFile, writeSettings as writeSettingsFile } from '../../app/workspace';
import { demoHandlers } from './handlers/demo';
import { modelsHandlers } from './handlers/models';
import { browseHandlers, labelledIndex } from './handlers/browse';
import { labelsHandlers } from './handlers/labels';
import { LabelService } from '../../app/labels';
import { RunIndexService } from '../../app/browse/runIndex';
import { sweepsHandlers } from './handlers/sweeps';
import { trainingHandlers } from './handlers/training';
import { servedHandlers } from './handlers/served';
import { ServedEngineLauncher } from '../../app/engines/served/launcher';
import { resolveLoupeNode } from '../../app/engines/served/loupeNode';
import { serveModel } from '../../app/engines/serve/serveModel';
import type { EngineDtype } from '../../app/engines/types';
import { ClusterSweepService } from '../../app/sweeps/cluster/service';
import { openWorkspaceSecretStore, type SafeStorageAdapter } from '../../app/connectors/secrets';
import { createTrainingService } from '../../app/training/service';
import type { CoreContext } from './context';
import { Workspace } from '../../app/workspace';
import { ModelService } from '../../app/engines/models';
import type { EngineManager } from '../../app/engines/manager';
import { createDemoService } from '../../app/demo/service';
import { startPySandbox } from '../../native/pysandbox';
import { SharpAnimationRenderer, toJpeg } from '../../native/image/animation';
import { createEngineManager, imageOpsFor } from './wiring';
import { detectDevices } from '../../native/engine/devices';
import { repoRoot } from './repoRoot';
import { modelsPath, resourcesRoot } from '../../app/paths';

export interface CoreOptions {
  workspace?: string;
  transport: 'electron' | 'browser';
  /** Electron's safeStorage, which main holds; main/electron/coreHost.ts asks it over the utility process's port (the core never imports electron). Absent in browser mode. */
  safeStorage?: SafeStorageAdapter;
  /** The per-user config folder for machine-local keys (default `defaultConfigDir()`; tests give a temp one). */
  configDir?: string;
  /** Load the runs' persisted indexes in the background at start (the app's doors: the Runs page opens on them). */
  warmRunIndex?: boolean;
}

export type EventListener = (event: EventName, payload: unknown) => void;

export interface Core {
  readonly workspace: string;
  /** The one owner of local engines (so a door can serve a model the app already holds, see serveModel). */
  readonly engines: EngineManager;
  dispatch(method: unknown, payload: unknown): Promise<Reply>;
  onEvent(listener: EventListener): () => void;
  emit<E extends EventName>(event: E, payload: EventPayload<E>): void;
  mediaPath(mediaId: string): string | null;
  /** A file of the workspace's `exports/` (as `demo:export` names it); null for any other name. */
  exportPath(name: string): string | null;
  dispose(): Promise<void>;
}

export async function createCore(opts: CoreOptions): Promise<Core> {
  const workspace = path.resolve(opts.workspace ?? defaultWorkspaceDir());
  await fs.promises.mkdir(path.join(workspace, 'media'), { recursive: true });
  await fs.promises.mkdir(path.join(workspace, 'runs'), { recursive: true });
  const bus = new EventEmitter();
  const settingsFile = path.join(workspace, 'settings.json');

  let engineState: EngineState = { status: 'idle', model: null, device: null };
  // Secrets: OS keychain through safeStorage when the Electron door gives one that works, else the AES-GCM file.
  const secretStore = await openWorkspaceSecretStore(workspace, opts.safeStorage, opts.configDir); // key outside the workspace

  // settings.json is shared with other parts of the core (e.g. the model registry): read the whole
  // object, change only the UI's keys, keep the rest. A broken file is reported, never overwritten.
  const readSettings = async (): Promise<Settings> => {
    const all = await readSettingsFile(settingsFile);
    const parsed = SettingsSchema.safeParse(all);
    return parsed.success ? parsed.data : SettingsSchema.parse({});
  };

  const emit = <E extends EventName>(event: E, payload: EventPayload<E>): void => {
    // Validate what we push too: a malformed event is a bug on our side, caught here rather than in the UI.
    const checked = events[event].parse(payload);
    bus.emit('event', event, checked);
  };
  const setEngineState = (next: EngineState): void => {
    engineState = next;
    emit('engine:state', next);
  };

  // The services, built once: every handler below is an adapter over one of them.
  const ws = new Workspace(workspace);
  // Engines in child processes (onnxruntime dying must not take the core with it), kept warm while loaded.
  const engines = await createEngineManager({
    isolation: 'process',
    idleMs: 0,
    onEvent: (e) => {
      if (e.status === 'loading') setEngineState({ status: 'loading', model: e.label, device: null, ...(e.message ? { message: e.message } : {}) });
      else if (e.status === 'ready') setEngineState({ status: 'ready', model: e.label, device: e.info?.device ?? null, ...(e.message ? { message: e.message } : {}) });
      else if (e.status === 'busy') setEngineState({ ...engineState, status: 'busy' });
      else if (e.status === 'error') setEngineState({ status: 'error', model: e.label, device: null, ...(e.message ? { message: e.message } : {}) });
      else if (engines.loaded().length === 0) setEngineState({ status: 'idle', model: null, device: null });
    },
  });
  // Served engines (vLLM, SGLang, transformers serve, loupe serve-model), here or as Slurm jobs: one launcher, whose
  // stopAll() on dispose ends every server and cancels every job (the app quits, `loupe serve` stops).
  // Backend `loupe` runs this Loupe's CLI; inside Electron (utilityProcess, RunAsNode off) through LOUPE_NODE or a
  // Node on PATH, else in-app: the same server `loupe serve-model` runs, over this core's engines
  // (app/engines/served/loupeNode.ts).
  const loupeBin = path.join(repoRoot(), 'bin', 'loupe.mjs');
  const served = new ServedEngineLauncher({
    resolveNode: () => resolveLoupeNode({ versions: process.versions, execPath: process.execPath, env: process.env, loupeBin }),
    inApp: async (spec, apiKey) => {
      const s = await serveModel(engines, { modelDir: spec.modelDir, device: spec.device, dtype: spec.dtype as EngineDtype, ...(spec.threads !== undefined ? { threads: spec.threads } : {}) }, { host: spec.host, port: spec.port, modelId: spec.modelName, apiKey });
      return { url: s.server.url, detail: `${s.info.model} (device ${s.info.device}, dtype ${JSON.stringify(s.info.dtype)}) in the app`, close: () => s.close() };
    },
    loupeBin,
    onEvent: (s) => emit('served:state', s),
    onLog: (id, line) => emit('served:log', { id, line }),
  });
  const servedEngine = (id: string): { baseURL: string; model: string; apiKey?: string } => {
    const e = served.get(id);
    if (!e) throw new Error(`no served engine ${JSON.stringify(id)}; start one on the Models page`);
    const st = e.state();
    if (st.status !== 'ready' || !st.baseURL) throw new Error(`served engine ${id} is ${st.status}${st.message ? `: ${st.message}` : ''}`);
    return { baseURL: st.baseURL, model: e.spec.modelName, ...(e.apiKey ? { apiKey: e.apiKey } : {}) };
  };
  const imageOps = await imageOpsFor(ws.media, 'worker');
  // The bundled models sit in models/ under the package root in a clone, under resources/ when packaged (app/paths.ts).
  const models = new ModelService({ registryDir: workspace, packageRoot: resourcesRoot(), engines, threads: async () => (await readSettings()).threads });
  const demo = createDemoService({
    workspace,
    media: ws.media,
    runs: ws.runs,
    scratch: ws.demo,
    saveDemoRun: (id, name) => ws.saveDemoRun(id, name),
    models,
    imageOps,
    animator: new SharpAnimationRenderer((id) => ws.media.pathOf(id)),
    toJpeg,
    examplesDir: modelsPath('loupe-tiny', 'examples'),
    codeSandbox: (ep) => startPySandbox(ep),
    emit,
    setEngineState,
    getEngineState: () => engineState,
    servedEngine,
  });
  const runIndex = new RunIndexService({
    dir: (id) => ws.runs.runDir(id),
    readManifest: (id) => ws.runs.readManifest(id),
    listRunIds: async () => (await ws.runs.listRuns()).map((r) => r.id),
  });
  const labels = new LabelService(workspace);
  const withLabels = labelledIndex(runIndex, labels);
  if (opts.warmRunIndex) void runIndex.warm();
  const training = createTrainingService({ workspace, secrets: secretStore.store, secretStore: secretStore.info, packageRoot: repoRoot(), emit, watchStore: true });

  // "Run on cluster": Slurm array sweeps merged into one run; sweeps a previous core left running are followed again.
  const cluster = new ClusterSweepService({
    workspace,
    runs: ws.runs,
    connector: (name) => training.connector(name),
    onProgress: (p) => emit('sweeps:progress', p),
    onRunChanged: (runId) => emit('runs:changed', { runId }),
  });
  void cluster.resumeAll().catch(() => undefined);
  const ctx: CoreContext = {
    workspace,
    emit,
    setEngineState,
    getEngineState: () => engineState,
    secrets: secretStore.store,
    secretStore: secretStore.info,
    settings: readSettings,
    ws,
    engines,
    imageOps,
    servedEngine,
    // Disposed in reverse: live demo runs stop first, then the engines and the image worker end.
    // runIndex.flush: an index being written beside a run is finished, so the next start reads it instead of the samples.
    disposers: [() => runIndex.flush(), () => imageOps.close?.(), () => engines.dispose(), () => models.unload().then(() => undefined), () => demo.dispose(), () => training.dispose(), () => cluster.dispose(), () => served.stopAll()],
  };

  const handlers: Handlers = {
    'app:info': () => ({
      name: 'Loupe',
      version: APP_VERSION,
      workspace,
      transport: opts.transport,
      platform: `${os.platform()}-${os.arch()}`,
      node: process.versions.node,
      engine: engineState,
    }),
    'settings:get': () => readSettings(),
    'settings:set': async (patch) => {
      const all = await readSettingsFile(settingsFile);
      const next = SettingsSchema.parse({ ...(await readSettings()), ...patch });
      await writeSettingsFile(settingsFile, { ...all, ...next });
      emit('settings:changed', next);
      return next;
    },
    'settings:workspace': async ({ path: dir }) => {
      const next = await chooseWorkspace(opts.configDir ?? defaultConfigDir(), dir);
      return { current: workspace, next, restartNeeded: path.resolve(next) !== workspace };
    },
    'engine:state': () => engineState,
    ...demoHandlers(demo),
    ...modelsHandlers(models, detectDevices),
    ...browseHandlers(ctx, { runIndex, withLabels }),
    ...labelsHandlers(labels, withLabels, emit),
    ...sweepsHandlers(ctx, cluster),
    ...trainingHandlers(training),
    ...servedHandlers(served, (name) => training.connector(name)),
  };

  return {
    workspace,
    engines,
    dispatch: (method, payload) => dispatch(handlers, method, payload),
    onEvent(listener) {
      bus.on('event', listener);
      return () => bus.off('event', listener);
    },
    emit,
    mediaPath(mediaId) {
      // Media ids are `<sha256>.<ext>`; anything else never reaches the disk.
      if (!/^[a-f0-9]{64}\.(png|jpe?g|webp|gif)$/.test(mediaId)) return null;
      return path.join(workspace, 'media', mediaId);
    },
    exportPath(name) {
      // `<run id>-<branch>.<format>` as demo:export writes it: no separators, so nothing outside exports/.
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.(html|webp|gif)$/.test(name) || name.includes('..')) return null;
      return path.join(workspace, 'exports', name);
    },
    async dispose() {
      for (const d of ctx.disposers.splice(0).reverse()) await d();
      bus.removeAllListeners();
      engineState = { status: 'idle', model: null, device: null };
    },
  };
}

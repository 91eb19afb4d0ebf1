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
import { defaultWorkspaceDir, readSettings as readSettingsFile, writeSettings as writeSettingsFile } from '../../app/workspace';
import { demoHandlers } from './handlers/demo';
import { browseHandlers } from './handlers/browse';
import { sweepsHandlers } from './handlers/sweeps';
import { trainingHandlers } from './handlers/training';
import { openSecretStore, type SafeStorageAdapter } from '../../app/connectors/secrets';
import type { CoreContext } from './context';

export interface CoreOptions {
  workspace?: string;
  transport: 'electron' | 'browser';
  /** Electron's safeStorage, adapted by main/electron/main.ts (the core never imports electron). Absent in browser mode. */
  safeStorage?: SafeStorageAdapter;
}

export type EventListener = (event: EventName, payload: unknown) => void;

export interface Core {
  readonly workspace: string;
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
  const secretStore = await openSecretStore({
    dir: path.join(workspace, 'training'),
    keyFile: path.join(workspace, '.private', 'secret.key'),
    ...(opts.safeStorage ? { safeStorage: opts.safeStorage } : {}),
  });

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

  const ctx: CoreContext = {
    workspace,
    emit,
    setEngineState(next) {
      engineState = next;
      emit('engine:state', next);
    },
    getEngineState: () => engineState,
    secrets: secretStore.store,
    secretStore: secretStore.info,
    disposers: [],
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
    'engine:state': () => engineState,
    ...demoHandlers(ctx),
    ...browseHandlers(ctx),
    ...sweepsHandlers(ctx),
    ...trainingHandlers(ctx),
  };

  return {
    workspace,
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

import type { EngineState, EventName, EventPayload, Settings } from '../../app/contract';
import type { SecretStore, SecretStoreInfo } from '../../app/connectors/secrets';
import type { EngineManager } from '../../app/engines/manager';
import type { ImageOps } from '../../app/tools/imageOps';
import type { Workspace } from '../../app/workspace';

/** What every domain's handlers get from the composition root. */
export interface CoreContext {
  /** Absolute workspace folder. */
  workspace: string;
  emit<E extends EventName>(event: E, payload: EventPayload<E>): void;
  setEngineState(next: EngineState): void;
  getEngineState(): EngineState;
  /** Credentials and job secrets: the OS keychain (Electron safeStorage) or the AES-GCM file (browser mode). */
  secrets: SecretStore;
  /** Which secret store is in use, for the UI. */
  secretStore: SecretStoreInfo;
  /** The user's settings (settings.json): defaults for device, threads, model. */
  settings(): Promise<Settings>;
  /** The workspace's stores (runs, media). */
  ws: Workspace;
  /** The one owner of local engines: the Demo, sweeps and serve-model share a loaded model through it. */
  engines: EngineManager;
  /** Image operations on a worker thread, never on the thread that serves requests. */
  imageOps: ImageOps;
  /** A ready served engine by id (the core's ServedEngineLauncher): URL, model and key; throws otherwise. */
  servedEngine(id: string): { baseURL: string; model: string; apiKey?: string };
  /** Cleanups run (in reverse) when the core is disposed. */
  disposers: Array<() => void | Promise<void>>;
}

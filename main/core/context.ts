import type { EngineState, EventName, EventPayload } from '../../app/contract';
import type { SecretStore, SecretStoreInfo } from '../../app/connectors/secrets';

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
  /** Cleanups run (in reverse) when the core is disposed. */
  disposers: Array<() => void | Promise<void>>;
}

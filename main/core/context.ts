import type { EngineState, EventName, EventPayload } from '../../app/contract';

/** What every domain's handlers get from the composition root. */
export interface CoreContext {
  /** Absolute workspace folder. */
  workspace: string;
  emit<E extends EventName>(event: E, payload: EventPayload<E>): void;
  setEngineState(next: EngineState): void;
  getEngineState(): EngineState;
  /** Cleanups run (in reverse) when the core is disposed. */
  disposers: Array<() => void | Promise<void>>;
}

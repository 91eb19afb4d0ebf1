/**
 * The one abortable sleep (over `node:timers/promises`), in the two shapes callers need:
 * `sleep` rejects when the signal aborts (a step that must stop), `pause` just ends early (a polling loop that
 * looks at the signal itself).
 */
import { setTimeout as delay } from 'node:timers/promises';

/** Wait `ms`. An abort rejects with the signal's reason (an AbortError when it has none). */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
  } catch (err) {
    throw signal?.aborted && signal.reason !== undefined ? signal.reason : err;
  }
}

/** Wait `ms` or until `signal` aborts, whichever comes first; never rejects because of the abort. */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
  } catch (err) {
    if (!signal?.aborted) throw err;
  }
}

import type { EventName, EventPayload } from '../../../app/contract';

/** The event listeners of one client (every transport keeps them the same way). */
export function createListeners() {
  const byEvent = new Map<string, Set<(p: unknown) => void>>();
  return {
    emit: (event: string, payload: unknown): void => {
      // Copy first: a listener may subscribe or unsubscribe while we iterate.
      for (const l of [...(byEvent.get(event) ?? [])]) l(payload);
    },
    on: <E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): (() => void) => {
      const set = byEvent.get(event) ?? new Set();
      const l = listener as (p: unknown) => void;
      set.add(l);
      byEvent.set(event, set);
      return () => set.delete(l);
    },
  };
}

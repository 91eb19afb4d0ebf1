import { LoupeCallError, type CallName, type CallReq, type CallRes, type EventName, type EventPayload, type LoupeBridge, type LoupeClient } from '../../../app/contract';

/** Client over Electron's preload bridge (`window.loupe`). */
export function createBridgeClient(bridge: LoupeBridge): LoupeClient {
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  bridge.subscribe((event, payload) => {
    // Copy first: a listener may subscribe or unsubscribe while we iterate.
    for (const l of [...(listeners.get(event) ?? [])]) l(payload);
  });
  return {
    transport: 'electron',
    async call<C extends CallName>(method: C, req: CallReq<C>): Promise<CallRes<C>> {
      const reply = await bridge.invoke(method, req);
      if (!reply.ok) throw new LoupeCallError(reply.error);
      return reply.result as CallRes<C>;
    },
    on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void {
      const set = listeners.get(event) ?? new Set();
      const l = listener as (p: unknown) => void;
      set.add(l);
      listeners.set(event, set);
      return () => set.delete(l);
    },
    mediaUrl: (id) => `loupe-media://media/${encodeURIComponent(id)}`,
    // Electron has no download route; the export's path on this machine is shown instead.
    exportUrl: () => null,
  };
}

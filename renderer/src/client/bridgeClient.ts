import type { CallName, CallReq, CallRes, LoupeBridge, LoupeClient } from '../../../app/contract';
import { LoupeCallError } from '../../../app/contract/callError';
import { createListeners } from './listeners';

/** Client over Electron's preload bridge (`window.loupe`). */
export function createBridgeClient(bridge: LoupeBridge): LoupeClient {
  const listeners = createListeners();
  bridge.subscribe((event, payload) => listeners.emit(event, payload));
  return {
    transport: 'electron',
    async call<C extends CallName>(method: C, req: CallReq<C>): Promise<CallRes<C>> {
      const reply = await bridge.invoke(method, req);
      if (!reply.ok) throw new LoupeCallError(reply.error);
      return reply.result as CallRes<C>;
    },
    on: listeners.on,
    mediaUrl: (id) => `loupe-media://media/${encodeURIComponent(id)}`,
    // Electron has no download route: exports are saved where the user chooses, through the system's save dialog.
    exportUrl: () => null,
    async saveExport(name) {
      const r = await bridge.saveExport(name);
      if (!r.ok) throw new Error(r.message);
      return r.saved;
    },
  };
}

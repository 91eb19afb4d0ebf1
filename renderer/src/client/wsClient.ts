import type { CallName, CallReq, CallRes, ContractError, LoupeClient, WireMessage } from '../../../app/contract';
import { LoupeCallError } from '../../../app/contract/callError';
import { createListeners } from './listeners';

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/** Client over the browser-mode WebSocket; reconnects with backoff and fails pending calls on loss. */
export function createWsClient(token: string): LoupeClient {
  const listeners = createListeners();
  const pending = new Map<number, Pending>();
  const queue: string[] = [];
  let nextId = 1;
  let ws: WebSocket | null = null;
  let retry = 0;
  let everConnected = false;

  const connect = () => {
    const proto = window.location.protocol === 'https:' ? 'wss' : 'ws';
    ws = new WebSocket(`${proto}://${window.location.host}/ws?token=${encodeURIComponent(token)}`);
    ws.onopen = () => {
      retry = 0;
      everConnected = true;
      for (const m of queue.splice(0)) ws?.send(m);
      emitLocal('transport:state', { connected: true });
    };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data)) as WireMessage;
      if (msg.type === 'result') {
        const p = pending.get(msg.id);
        if (!p) return;
        pending.delete(msg.id);
        if (msg.ok) p.resolve(msg.result);
        else p.reject(new LoupeCallError(msg.error));
      } else if (msg.type === 'event') {
        emitLocal(msg.event, msg.payload);
      }
    };
    ws.onclose = () => {
      const err: ContractError = everConnected
        ? { code: 'transport_error', message: 'The connection to the Loupe core was lost; retrying.' }
        : { code: 'transport_error', message: 'Could not connect to the Loupe core. Open the full URL that `loupe serve` printed (it carries ?token=…).' };
      queue.length = 0;
      for (const [id, p] of pending) {
        p.reject(new LoupeCallError(err));
        pending.delete(id);
      }
      emitLocal('transport:state', { connected: false });
      retry = Math.min(retry + 1, 6);
      setTimeout(connect, 250 * 2 ** retry);
    };
  };

  const emitLocal = listeners.emit;

  connect();

  return {
    transport: 'browser',
    call<C extends CallName>(method: C, req: CallReq<C>): Promise<CallRes<C>> {
      const id = nextId++;
      const text = JSON.stringify({ type: 'call', id, method, payload: req } satisfies WireMessage);
      return new Promise<CallRes<C>>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        if (ws && ws.readyState === WebSocket.OPEN) ws.send(text);
        else queue.push(text);
      });
    },
    on: listeners.on,
    mediaUrl: (id) => `/media/${encodeURIComponent(id)}`,
    exportUrl: (name) => `/exports/${encodeURIComponent(name)}`,
  };
}

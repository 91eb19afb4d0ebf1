/**
 * The preload exposes exactly one object, `window.loupe`, with two functions; no ipcRenderer, no MessagePort, no
 * Electron event objects. Calls go over a MessagePort straight to the core's utility process: main hands the port
 * over on PORT_CHANNEL after our page has loaded (and a new one if the core restarts). Calls made before the port
 * arrives wait for it.
 */
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import type { ContractError, LoupeBridge, SaveExportReply } from '../../app/contract';
import { PORT_CHANNEL, SAVE_EXPORT_CHANNEL, type PortCall, type PortMessage } from './coreProtocol';

type Reply = { ok: true; result: unknown } | { ok: false; error: ContractError };

let port: MessagePort | null = null;
let nextId = 1;
const waiting: PortCall[] = [];
const pending = new Map<number, (r: Reply) => void>();
const listeners = new Set<(event: string, payload: unknown) => void>();

function onPortMessage(e: MessageEvent<PortMessage>): void {
  const m = e.data;
  if (m.kind === 'reply') {
    pending.get(m.id)?.(m.reply);
    pending.delete(m.id);
  } else {
    for (const l of [...listeners]) l(m.event, m.payload);
  }
}

ipcRenderer.on(PORT_CHANNEL, (e: IpcRendererEvent) => {
  const next = e.ports[0];
  if (!next) return;
  if (port) {
    // A new port means a new core: calls in flight on the old one will never be answered.
    port.close();
    for (const [id, resolve] of pending) {
      resolve({ ok: false, error: { code: 'transport_error', message: 'the core restarted while this call ran; try again' } });
      pending.delete(id);
    }
  }
  port = next;
  port.onmessage = onPortMessage;
  for (const call of waiting.splice(0)) port.postMessage(call);
});

const bridge: LoupeBridge = {
  invoke: (method, payload) => {
    if (typeof method !== 'string' || !/^[a-z]+:[a-zA-Z-]+$/.test(method)) {
      return Promise.resolve({ ok: false, error: { code: 'unknown_method', message: `Unsupported method ${String(method)}` } });
    }
    const call: PortCall = { id: nextId++, method, payload };
    return new Promise<Reply>((resolve) => {
      pending.set(call.id, resolve);
      if (port) port.postMessage(call);
      else waiting.push(call);
    });
  },
  saveExport: (name) => {
    if (typeof name !== 'string' || name.length === 0 || name.length > 255) return Promise.resolve<SaveExportReply>({ ok: false, message: 'not an export name' });
    return ipcRenderer.invoke(SAVE_EXPORT_CHANNEL, name) as Promise<SaveExportReply>;
  },
  subscribe: (listener) => {
    const l = (event: string, payload: unknown) => listener(event, payload);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  },
};

contextBridge.exposeInMainWorld('loupe', bridge);

/**
 * The preload exposes exactly one object, `window.loupe`, with two functions; no ipcRenderer, no
 * Electron event objects. Channel names are fixed here, never chosen by the page.
 */
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import type { LoupeBridge } from '../../app/contract';

const bridge: LoupeBridge = {
  invoke: (method, payload) => {
    if (typeof method !== 'string' || !/^[a-z]+:[a-zA-Z-]+$/.test(method)) {
      return Promise.resolve({ ok: false, error: { code: 'unknown_method', message: `Unsupported method ${String(method)}` } });
    }
    return ipcRenderer.invoke('loupe:invoke', method, payload);
  },
  subscribe: (listener) => {
    const wrapped = (_e: IpcRendererEvent, event: string, payload: unknown) => listener(event, payload);
    ipcRenderer.on('loupe:event', wrapped);
    return () => {
      ipcRenderer.removeListener('loupe:event', wrapped);
    };
  },
};

contextBridge.exposeInMainWorld('loupe', bridge);

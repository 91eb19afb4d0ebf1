/**
 * The core in Electron's utilityProcess (bundled to dist/main/electron/core.cjs): the same composition root the
 * CLI and browser mode use, off Electron's main thread and in its own OS process, so engine loads, image work and
 * file scans never stall the window or the main process, and a native crash ends only this process.
 * Each window talks to it over its own MessagePort; main only starts it, hands over ports, and answers safeStorage.
 */
import type { MessagePortMain, MessageEvent as ElectronMessageEvent } from 'electron';
import { createCore, type Core } from '../core';
import { events } from '../../app/contract';
import type { SafeStorageAdapter } from '../../app/connectors/secrets';
import type { CoreInit, CoreToMain, MainToCore, PortCall, PortMessage } from './coreProtocol';

const parent = process.parentPort;
if (!parent) throw new Error('core.cjs runs in an Electron utilityProcess (process.parentPort is missing)');

const post = (m: CoreToMain): void => parent.postMessage(m);

let nextId = 1;
const pending = new Map<number, { resolve: (v: string | Uint8Array) => void; reject: (e: Error) => void }>();

function askMain(m: { op: 'encrypt'; text: string } | { op: 'decrypt'; data: Uint8Array }): Promise<string | Uint8Array> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    post({ type: 'safeStorage', id, ...m });
  });
}

/** safeStorage is a main-process API: the core's adapter asks main, which holds the OS keychain key. */
function safeStorageVia(init: CoreInit['safeStorage']): SafeStorageAdapter {
  return {
    encrypt: async (text) => Buffer.from(await askMain({ op: 'encrypt', text })),
    decrypt: async (data) => String(await askMain({ op: 'decrypt', data: new Uint8Array(data) })),
    available: () => init.available,
    backend: () => init.backend,
  };
}

function isPortCall(v: unknown): v is PortCall {
  return typeof v === 'object' && v !== null && typeof (v as PortCall).id === 'number' && typeof (v as PortCall).method === 'string';
}

function attach(core: Core, port: MessagePortMain): void {
  const send = (m: PortMessage): void => port.postMessage(m);
  const off = core.onEvent((event, payload) => {
    if (event in events) send({ kind: 'event', event, payload });
  });
  port.on('message', (e: ElectronMessageEvent) => {
    const msg: unknown = e.data;
    // The preload builds these; anything else is dropped rather than guessed at.
    if (!isPortCall(msg)) return;
    void core.dispatch(msg.method, msg.payload).then((reply) => send({ kind: 'reply', id: msg.id, reply }));
  });
  port.on('close', off);
  port.start();
}

let core: Core | null = null;

parent.on('message', (e: ElectronMessageEvent) => {
  const msg = e.data as MainToCore;
  switch (msg.type) {
    case 'init':
      createCore({ transport: 'electron', warmRunIndex: true, ...(msg.workspace ? { workspace: msg.workspace } : {}), safeStorage: safeStorageVia(msg.safeStorage) }).then(
        (c) => {
          core = c;
          post({ type: 'ready', workspace: c.workspace });
        },
        (err: unknown) => post({ type: 'failed', message: err instanceof Error ? err.message : String(err) }),
      );
      return;
    case 'connect': {
      const port = e.ports[0];
      if (core && port) attach(core, port);
      return;
    }
    case 'mediaPath':
      post({ type: 'mediaPath:reply', id: msg.id, path: core?.mediaPath(msg.mediaId) ?? null });
      return;
    case 'exportPath':
      post({ type: 'exportPath:reply', id: msg.id, path: typeof msg.name === 'string' ? (core?.exportPath(msg.name) ?? null) : null });
      return;
    case 'safeStorage:reply': {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.ok) p?.resolve(msg.value);
      else p?.reject(new Error(msg.message));
      return;
    }
    case 'shutdown':
      void (core?.dispose() ?? Promise.resolve()).finally(() => process.exit(0));
      return;
  }
});

/**
 * THE ELECTRON HARNESS — a STAND-IN, the one fake this project allows, because the Electron binary cannot be
 * downloaded on the machines that run our tests. It gives the production bundles (dist/main/electron/*.cjs) the
 * Electron API surface they use, typed against electron's own electron.d.ts (devDependency `electron-types`), and
 * records every call.
 *
 * Real: the main bundle, loaded as Electron loads it (CommonJS, `require('electron')` answered here); the core bundle
 * in its own OS process (`utilityProcess.fork` → a forked Node process, `process.parentPort` emulated by
 * utilityShim.mjs); the renderer and the preload bundle in Chromium (playwright-core); every MessagePort message,
 * which crosses real process and page boundaries.
 * Not real: Electron itself. The `app://loupe` scheme is served to Chromium from an http://127.0.0.1 origin whose
 * every request is answered by main's own `protocol.handle('app')` handler; contextIsolation is approximated by
 * running the preload in a closure before the page's scripts (contextBridge assigns a frozen copy);
 * `loupe-media:` URLs are not loadable in the page; safeStorage encrypts with AES-GCM under a per-run key.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as E from 'electron';
import type { Browser, Page } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SHIM = pathToFileURL(path.join(HERE, 'utilityShim.mjs')).href;

export interface Call {
  api: string;
  args: unknown[];
}

// EventEmitter's own listener type (its `any[]` is Node's, not ours).
type Listener = Parameters<EventEmitter['on']>[1];

/** Every Electron API call the bundles make, in order. */
export class Recorder {
  readonly calls: Call[] = [];
  rec(api: string, ...args: unknown[]): void {
    this.calls.push({ api, args });
  }
  find(api: string): Call[] {
    return this.calls.filter((c) => c.api === api);
  }
}

/** An Electron event object: `preventDefault` is remembered. */
export class FakeEvent {
  defaultPrevented = false;
  constructor(readonly ports: FakePort[] = []) {}
  preventDefault(): void {
    this.defaultPrevented = true;
  }
}

/** MessagePortMain: entangled with its peer; once transferred, what reaches it goes to `remote`. */
export class FakePort extends EventEmitter implements Pick<E.MessagePortMain, 'postMessage' | 'start' | 'close'> {
  peer!: FakePort;
  remote: ((data: unknown) => void) | null = null;
  private started = false;
  private queue: unknown[] = [];
  constructor(
    private readonly r: Recorder,
    readonly name: string,
  ) {
    super();
  }
  postMessage(message: unknown): void {
    this.peer.receive(message);
  }
  receive(data: unknown): void {
    if (this.remote) this.remote(data);
    else if (this.started) this.emit('message', { data, ports: [] });
    else this.queue.push(data);
  }
  start(): void {
    this.r.rec(`MessagePortMain.start`, this.name);
    this.started = true;
    for (const d of this.queue.splice(0)) this.emit('message', { data: d, ports: [] });
  }
  close(): void {
    this.r.rec(`MessagePortMain.close`, this.name);
    this.emit('close');
  }
}

let portIds = 0;
const portsById = new Map<number, FakePort>();
function portId(p: FakePort): number {
  for (const [id, q] of portsById) if (q === p) return id;
  const id = ++portIds;
  portsById.set(id, p);
  return id;
}

/** utilityProcess: a forked Node process running the module, with the shim that gives it `process.parentPort`. */
export class FakeUtilityProcess extends EventEmitter implements Pick<E.UtilityProcess, 'postMessage' | 'kill'> {
  readonly child: ChildProcess;
  pid: number | undefined;
  constructor(
    private readonly r: Recorder,
    readonly modulePath: string,
    args: string[],
    readonly options: E.ForkOptions,
    resourcesPath: string,
  ) {
    super();
    this.child = fork(modulePath, args, {
      execArgv: ['--import', SHIM],
      serialization: 'advanced',
      env: { ...process.env, ...(options.env ?? {}), LOUPE_HARNESS_RESOURCES_PATH: resourcesPath },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.pid = this.child.pid;
    this.child.on('spawn', () => this.emit('spawn'));
    this.child.on('exit', (code) => this.emit('exit', code ?? 1));
    this.child.on('message', (m: { kind: 'parent'; data: unknown } | { kind: 'port'; id: number; data: unknown }) => {
      if (m.kind === 'parent') this.emit('message', m.data);
      else portsById.get(m.id)?.postMessage(m.data);
    });
  }
  postMessage(message: unknown, transfer: FakePort[] = []): void {
    this.r.rec('UtilityProcess.postMessage', message, transfer.map((p) => p.name));
    const ids = transfer.map((p) => {
      const id = portId(p);
      p.remote = (data) => this.send({ kind: 'port', id, data });
      return id;
    });
    this.send({ kind: 'parent', data: message, ports: ids });
  }
  /**
   * A message to a process that is exiting is dropped, as Electron's utilityProcess drops one whose pipe has closed. The
   * IPC channel can still read as connected while the child is going away: without the callback, Node reports the
   * failed write (EPIPE) as an 'error' event, which nothing here listens to, so it surfaced as an uncaught exception
   * after a quit test ("quitting shuts the core down through main") had passed.
   */
  private send(msg: unknown): void {
    if (this.child.connected) this.child.send(msg as Parameters<ChildProcess['send']>[0], () => {});
  }
  kill(): boolean {
    this.r.rec('UtilityProcess.kill');
    return this.child.kill();
  }
}

/** What the harness does for a window: open its page in Chromium. */
interface PageHost {
  open(win: FakeBrowserWindow, url: string): Promise<void>;
  deliver(win: FakeBrowserWindow, channel: string, message: unknown, ports: FakePort[]): void;
}

export class FakeWebContents extends EventEmitter implements Pick<E.WebContents, 'getURL' | 'isDestroyed'> {
  private static nextId = 1;
  readonly id = FakeWebContents.nextId++;
  url = '';
  page: Page | null = null;
  windowOpenHandler: ((details: E.HandlerDetails) => E.WindowOpenHandlerResponse) | null = null;
  destroyed = false;
  constructor(
    private readonly r: Recorder,
    private readonly host: PageHost,
    readonly win: FakeBrowserWindow,
  ) {
    super();
  }
  override on(event: string, listener: Listener): this {
    this.r.rec('WebContents.on', event);
    return super.on(event, listener);
  }
  setWindowOpenHandler(handler: (details: E.HandlerDetails) => E.WindowOpenHandlerResponse): void {
    this.r.rec('WebContents.setWindowOpenHandler');
    this.windowOpenHandler = handler;
  }
  getURL(): string {
    return this.url;
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  postMessage(channel: string, message: unknown, transfer: FakePort[] = []): void {
    this.r.rec('WebContents.postMessage', channel, message, transfer.map((p) => p.name));
    this.host.deliver(this.win, channel, message, transfer);
  }
  send(channel: string, ...args: unknown[]): void {
    this.r.rec('WebContents.send', channel, ...args);
  }
  /** Fire a main-process event the way Electron would; returns whether main prevented it. */
  fire(event: 'will-navigate' | 'will-redirect' | 'will-attach-webview', url: string): boolean {
    const e = new FakeEvent();
    this.emit(event, e, url);
    this.r.rec('WebContents.emit', event, url, e.defaultPrevented ? 'prevented' : 'allowed');
    return e.defaultPrevented;
  }
}

export class FakeBrowserWindow extends EventEmitter {
  static readonly all: FakeBrowserWindow[] = [];
  static r: Recorder;
  static host: PageHost;
  readonly webContents: FakeWebContents;
  readonly loads: string[] = [];
  shown = false;
  constructor(readonly options: E.BrowserWindowConstructorOptions = {}) {
    super();
    FakeBrowserWindow.r.rec('new BrowserWindow', options);
    this.webContents = new FakeWebContents(FakeBrowserWindow.r, FakeBrowserWindow.host, this);
    FakeBrowserWindow.all.push(this);
  }
  static fromWebContents(wc: FakeWebContents): FakeBrowserWindow | null {
    FakeBrowserWindow.r.rec('BrowserWindow.fromWebContents', wc.id);
    return wc.win;
  }
  static getAllWindows(): FakeBrowserWindow[] {
    return FakeBrowserWindow.all.filter((w) => !w.webContents.destroyed);
  }
  loadURL(url: string): Promise<void> {
    FakeBrowserWindow.r.rec('BrowserWindow.loadURL', url);
    this.loads.push(url);
    return FakeBrowserWindow.host.open(this, url);
  }
  loadFile(file: string): Promise<void> {
    FakeBrowserWindow.r.rec('BrowserWindow.loadFile', file);
    return Promise.reject(new Error('loadFile: Loupe loads app:// URLs; file:// is not used'));
  }
  show(): void {
    FakeBrowserWindow.r.rec('BrowserWindow.show');
    this.shown = true;
  }
}

export interface HarnessOptions {
  /** The main bundle to load (dist/main/electron/main.cjs). */
  mainBundle: string;
  browser: Browser;
  /** argv entries main reads (e.g. --workspace=...). */
  argv?: string[];
  /** What `process.resourcesPath` is (Electron's own resources folder under `npm start`). */
  resourcesPath: string;
  viewport?: { width: number; height: number };
}

export interface Harness {
  readonly recorder: Recorder;
  readonly windows: FakeBrowserWindow[];
  readonly utilities: FakeUtilityProcess[];
  readonly protocolHandlers: Map<string, (req: Request) => Promise<Response> | Response>;
  readonly privilegedSchemes: E.CustomScheme[];
  permissionRequestHandler: ((wc: unknown, permission: string, callback: (granted: boolean) => void, details: unknown) => void) | null;
  permissionCheckHandler: ((wc: unknown, permission: string) => boolean) | null;
  /** `app.exit`/`app.quit` calls (an exit code means main gave up). */
  readonly exits: number[];
  /** Resolves when main has created its first window and Chromium has loaded it. */
  firstWindow(): Promise<FakeBrowserWindow>;
  /** The http origin that stands for `app://loupe` in Chromium. */
  readonly origin: string;
  /** `ipcMain.handle` registrations (channel → main's handler). */
  readonly ipcHandlers: Map<string, (e: { sender: FakeWebContents }, ...args: unknown[]) => unknown>;
  /** What the next `dialog.showSaveDialog` answers (the user's choice); every call is recorded. */
  saveDialog: E.SaveDialogReturnValue;
  close(): Promise<void>;
}

/** The preload bundle in a page: a closure with `require('electron')` answered by the page-side fakes. */
function preloadInitScript(preloadSource: string): string {
  return `(() => {
  const listeners = new Map();
  const ports = new Map();
  const ipcRenderer = {
    on(channel, l) { if (!listeners.has(channel)) listeners.set(channel, new Set()); listeners.get(channel).add(l); return ipcRenderer; },
    removeListener(channel, l) { listeners.get(channel)?.delete(l); return ipcRenderer; },
    invoke(channel, ...args) { return window.__harnessInvoke(channel, args); },
    send() { throw new Error('ipcRenderer.send: not used by Loupe, not provided by the harness'); },
  };
  const exposed = [];
  const contextBridge = {
    exposeInMainWorld(key, api) {
      exposed.push(key);
      Object.defineProperty(window, key, { value: Object.freeze({ ...api }), enumerable: true, configurable: false, writable: false });
    },
  };
  Object.defineProperty(window, '__harness', { enumerable: false, value: Object.freeze({
    exposed,
    added: [],
    deliver(channel, message, ids) {
      const given = ids.map((id) => {
        const ch = new MessageChannel();
        ports.set(id, ch.port2);
        ch.port2.onmessage = (e) => window.__harnessPortOut(id, e.data);
        return ch.port1;
      });
      for (const l of [...(listeners.get(channel) ?? [])]) l({ ports: given, sender: ipcRenderer }, message);
    },
    portIn(id, data) { ports.get(id)?.postMessage(data); },
  }) });
  const before = new Set(Object.getOwnPropertyNames(window));
  const require = (m) => {
    if (m === 'electron') return { contextBridge, ipcRenderer };
    throw new Error('a sandboxed preload cannot require ' + m);
  };
  const module = { exports: {} };
  (function (require, module, exports) {
${preloadSource}
  }).call(undefined, require, module, module.exports);
  for (const k of Object.getOwnPropertyNames(window)) if (!before.has(k)) window.__harness.added.push(k);
})();`;
}

/** Load the main bundle with Electron's API surface; Chromium plays the renderer. */
export async function startHarness(o: HarnessOptions): Promise<Harness> {
  const r = new Recorder();
  const windows = FakeBrowserWindow.all;
  const utilities: FakeUtilityProcess[] = [];
  const protocolHandlers = new Map<string, (req: Request) => Promise<Response> | Response>();
  const privilegedSchemes: E.CustomScheme[] = [];
  const exits: number[] = [];
  const pages = new Set<Page>();
  const ipcHandlers: Harness['ipcHandlers'] = new Map();
  let readyResolve!: () => void;
  const ready = new Promise<void>((res) => (readyResolve = res));
  let firstWindowResolve!: (w: FakeBrowserWindow) => void;
  let firstWindowReject!: (e: Error) => void;
  const firstWindow = new Promise<FakeBrowserWindow>((res, rej) => {
    firstWindowResolve = res;
    firstWindowReject = rej;
  });
  firstWindow.catch(() => undefined);

  // app://loupe for Chromium: an http origin whose every request main's own handler answers.
  const server = http.createServer((req, res) => {
    const handler = protocolHandlers.get('app');
    if (!handler) {
      res.writeHead(503).end('main has not registered the app: scheme');
      return;
    }
    r.rec('protocol.request', `app://loupe${req.url ?? '/'}`);
    void Promise.resolve(handler(new Request(`app://loupe${req.url ?? '/'}`, { method: req.method ?? 'GET' })))
      .then(async (resp) => {
        const headers: Record<string, string> = {};
        resp.headers.forEach((v, k) => (headers[k] = v));
        res.writeHead(resp.status, headers);
        res.end(Buffer.from(await resp.arrayBuffer()));
      })
      .catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const toPageUrl = (url: string) => (url.startsWith('app://loupe') ? origin + url.slice('app://loupe'.length) : url);
  const toAppUrl = (url: string) => (url.startsWith(origin) ? 'app://loupe' + url.slice(origin.length) : url);

  // Page work for one window runs in order (a port's messages must not overtake its delivery).
  const chains = new Map<FakeBrowserWindow, Promise<unknown>>();
  const inOrder = (win: FakeBrowserWindow, f: () => Promise<unknown>) => {
    const next = (chains.get(win) ?? Promise.resolve()).then(f, f);
    chains.set(
      win,
      next.catch(() => undefined),
    );
    return next;
  };

  const host: PageHost = {
    async open(win, url) {
      const wc = win.webContents;
      const prefs = win.options.webPreferences ?? {};
      const page = await o.browser.newPage({ viewport: o.viewport ?? { width: 1280, height: 800 } });
      pages.add(page);
      wc.page = page;
      await page.exposeBinding('__harnessPortOut', (_src, id: number, data: unknown) => {
        portsById.get(id)?.postMessage(data);
      });
      // ipcRenderer.invoke from the preload: main's ipcMain.handle handler, with this window as the sender.
      await page.exposeBinding('__harnessInvoke', async (_src, channel: string, args: unknown[]) => {
        r.rec('ipcRenderer.invoke', channel, ...args);
        const handler = ipcHandlers.get(channel);
        if (!handler) throw new Error(`No handler registered for '${channel}'`);
        return handler({ sender: wc }, ...args);
      });
      if (prefs.preload) await page.addInitScript({ content: preloadInitScript(fs.readFileSync(prefs.preload, 'utf8')) });
      let initial = true;
      // Renderer-initiated navigations and redirects go through main's rules, as in Electron.
      await page.route('**/*', async (route, request) => {
        if (!request.isNavigationRequest() || request.frame() !== page.mainFrame() || initial) {
          if (request.isNavigationRequest() && request.frame() === page.mainFrame()) initial = false;
          return route.continue();
        }
        const prevented = wc.fire(request.redirectedFrom() ? 'will-redirect' : 'will-navigate', toAppUrl(request.url()));
        // Electron leaves the page as it is when main prevents a navigation; an empty 204 does the same in Chromium.
        return prevented ? route.fulfill({ status: 204, body: '' }) : route.continue();
      });
      page.on('load', () => {
        wc.url = toAppUrl(page.url());
        wc.emit('did-finish-load', new FakeEvent());
      });
      page.on('close', () => {
        wc.destroyed = true;
        win.emit('closed');
      });
      await page.goto(toPageUrl(url));
      win.emit('ready-to-show', new FakeEvent());
      firstWindowResolve(win);
    },
    deliver(win, channel, message, ports) {
      const page = win.webContents.page;
      if (!page) return;
      const ids = ports.map((p) => {
        const id = portId(p);
        p.remote = (data) => void inOrder(win, () => page.evaluate(([i, d]) => (window as unknown as { __harness: { portIn(i: number, d: unknown): void } }).__harness.portIn(i, d), [id, data] as const));
        return id;
      });
      void inOrder(win, () => page.evaluate(([c, m, i]) => (window as unknown as { __harness: { deliver(c: string, m: unknown, i: number[]): void } }).__harness.deliver(c, m, i), [channel, message, ids] as const));
    },
  };
  FakeBrowserWindow.r = r;
  FakeBrowserWindow.host = host;

  const safeKey = randomBytes(32);
  let closed = false;
  const harness: Harness = {
    recorder: r,
    windows,
    utilities,
    protocolHandlers,
    privilegedSchemes,
    permissionRequestHandler: null,
    permissionCheckHandler: null,
    exits,
    firstWindow: () => firstWindow,
    origin,
    ipcHandlers,
    saveDialog: { canceled: true, filePath: '' },
    async close() {
      if (closed) return;
      closed = true;
      // Quit as Electron does: before-quit, the windows close, window-all-closed (main then shuts the core down).
      const beforeQuit = new FakeEvent();
      fake.app.emit('before-quit', beforeQuit);
      r.rec('harness.beforeQuit', beforeQuit.defaultPrevented ? 'prevented' : 'allowed');
      for (const p of pages) await p.close().catch(() => undefined);
      fake.app.emit('window-all-closed', new FakeEvent());
      for (const u of utilities) {
        if (u.child.exitCode !== null || u.child.signalCode !== null) continue;
        await new Promise<void>((res) => {
          u.child.once('exit', () => res());
          // The core should leave on main's `shutdown`; one that does not is ended here (and recorded).
          const t = setTimeout(() => {
            r.rec('harness.killCore', u.pid);
            u.child.kill('SIGKILL');
          }, 15_000);
          u.child.once('exit', () => clearTimeout(t));
        });
      }
      server.closeAllConnections();
      await new Promise<void>((res) => server.close(() => res()));
    },
  };

  class FakeApp extends EventEmitter implements Pick<E.App, 'whenReady' | 'isReady' | 'quit' | 'exit' | 'isPackaged' | 'getPath'> {
    isPackaged = false;
    override on(event: string, listener: Listener): this {
      r.rec('app.on', event);
      return super.on(event, listener);
    }
    whenReady(): Promise<void> {
      r.rec('app.whenReady');
      return ready;
    }
    isReady(): boolean {
      return true;
    }
    getPath(name: string): string {
      r.rec('app.getPath', name);
      return path.join(o.resourcesPath, `harness-${name}`);
    }
    quit(): void {
      r.rec('app.quit');
    }
    exit(code = 0): void {
      r.rec('app.exit', code);
      exits.push(code);
      firstWindowReject(new Error(`main called app.exit(${code})`));
    }
  }

  const protocol: Pick<E.Protocol, 'registerSchemesAsPrivileged'> & { handle(scheme: string, handler: (req: Request) => Promise<Response> | Response): void } = {
    registerSchemesAsPrivileged(schemes) {
      r.rec('protocol.registerSchemesAsPrivileged', schemes);
      privilegedSchemes.push(...schemes);
    },
    handle(scheme, handler) {
      r.rec('protocol.handle', scheme);
      protocolHandlers.set(scheme, handler);
    },
  };

  const safeStorage: Pick<E.SafeStorage, 'isEncryptionAvailable' | 'getSelectedStorageBackend' | 'encryptStringAsync' | 'decryptStringAsync'> = {
    isEncryptionAvailable: () => (r.rec('safeStorage.isEncryptionAvailable'), true),
    // Not `basic_text` (Chromium's hard-coded key, which main treats as unavailable).
    getSelectedStorageBackend: () => (r.rec('safeStorage.getSelectedStorageBackend'), 'unknown'),
    async encryptStringAsync(plainText) {
      r.rec('safeStorage.encryptStringAsync');
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', safeKey, iv);
      const body = Buffer.concat([c.update(plainText, 'utf8'), c.final()]);
      return Buffer.concat([iv, c.getAuthTag(), body]);
    },
    async decryptStringAsync(encrypted) {
      r.rec('safeStorage.decryptStringAsync');
      const d = createDecipheriv('aes-256-gcm', safeKey, encrypted.subarray(0, 12));
      d.setAuthTag(encrypted.subarray(12, 28));
      return { result: Buffer.concat([d.update(encrypted.subarray(28)), d.final()]).toString('utf8'), shouldReEncrypt: false };
    },
  };

  const session = {
    defaultSession: {
      setPermissionRequestHandler(h: Harness['permissionRequestHandler']) {
        r.rec('session.setPermissionRequestHandler');
        harness.permissionRequestHandler = h;
      },
      setPermissionCheckHandler(h: Harness['permissionCheckHandler']) {
        r.rec('session.setPermissionCheckHandler');
        harness.permissionCheckHandler = h;
      },
      webRequest: {
        onHeadersReceived() {
          r.rec('session.webRequest.onHeadersReceived');
        },
      },
    },
  };

  const utilityProcess = {
    fork(modulePath: string, args: string[] = [], options: E.ForkOptions = {}): FakeUtilityProcess {
      r.rec('utilityProcess.fork', modulePath, args, options);
      const u = new FakeUtilityProcess(r, modulePath, args, options, o.resourcesPath);
      utilities.push(u);
      return u;
    },
  };

  let channels = 0;
  class FakeMessageChannelMain {
    readonly port1: FakePort;
    readonly port2: FakePort;
    constructor() {
      const n = ++channels;
      r.rec('new MessageChannelMain', n);
      this.port1 = new FakePort(r, `channel${n}.port1`);
      this.port2 = new FakePort(r, `channel${n}.port2`);
      this.port1.peer = this.port2;
      this.port2.peer = this.port1;
    }
  }

  const ipcMain = {
    handle(channel: string, handler: (e: { sender: FakeWebContents }, ...args: unknown[]) => unknown) {
      r.rec('ipcMain.handle', channel);
      ipcHandlers.set(channel, handler);
    },
  };
  const dialog = {
    async showSaveDialog(...args: unknown[]): Promise<E.SaveDialogReturnValue> {
      const options = args.find((a) => a && typeof a === 'object' && !(a instanceof FakeBrowserWindow)) as E.SaveDialogOptions | undefined;
      r.rec('dialog.showSaveDialog', args[0] instanceof FakeBrowserWindow ? 'with parent window' : 'no parent window', options);
      return harness.saveDialog;
    },
  };

  const fake = {
    app: new FakeApp(),
    dialog,
    ipcMain,
    BrowserWindow: FakeBrowserWindow,
    MessageChannelMain: FakeMessageChannelMain,
    protocol,
    safeStorage,
    session,
    shell: {
      openExternal: async (url: string) => {
        r.rec('shell.openExternal', url);
      },
    },
    utilityProcess,
  };

  // `require('electron')` from the main bundle gets the fake; everything else loads as usual.
  const mod = Module as unknown as { _load(request: string, parent: unknown, isMain: boolean): unknown };
  const load = mod._load;
  mod._load = function (request: string, parent: unknown, isMain: boolean) {
    if (request === 'electron') return fake;
    return load.call(this, request, parent, isMain);
  };
  (process as NodeJS.Process & { resourcesPath?: string }).resourcesPath = o.resourcesPath;
  process.argv.push(...(o.argv ?? []));
  try {
    createRequire(import.meta.url)(o.mainBundle);
  } finally {
    mod._load = load;
  }
  readyResolve();
  return harness;
}

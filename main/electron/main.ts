/**
 * Electron main: one window with secure defaults, the renderer served from the `app://loupe` scheme, and the core
 * in a utilityProcess (dist/main/electron/core.cjs) that each window talks to over its own MessagePort. Nothing
 * heavy runs here: main starts the core, serves static files, answers safeStorage, and enforces the rules.
 * Bundled to CommonJS by scripts/build-node.mjs.
 */
import { app, BrowserWindow, dialog, ipcMain, MessageChannelMain, protocol, safeStorage, session, shell, utilityProcess, type IpcMainInvokeEvent, type MessagePortMain, type UtilityProcess, type WebContents } from 'electron';
import fs from 'node:fs';
import path from 'node:path';
import { electronBundle, rendererDir } from '../../app/paths';
import { MIME } from '../server/mime';
import { decodeUrlPart, openMediaFile } from '../server/mediaFile';
import type { SaveExportReply } from '../../app/contract';
import { APP_HOST, APP_ORIGIN, APP_SCHEME, CSP, MEDIA_SCHEME, PORT_CHANNEL, SAVE_EXPORT_CHANNEL, isAppUrl, type CoreToMain, type MainToCore } from './coreProtocol';

protocol.registerSchemesAsPrivileged([
  { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
  { scheme: MEDIA_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
]);

const windows = new Set<WebContents>();
let core: UtilityProcess | null = null;
let coreReady: Promise<void> | null = null;
let quitting = false;
let nextId = 1;
/** Consecutive cores that exited before they were ready. */
let failedStarts = 0;
const MAX_FAILED_STARTS = 3;
const mediaRequests = new Map<number, (p: string | null) => void>();
const exportRequests = new Map<number, (p: string | null) => void>();

/**
 * On Linux without libsecret/kwallet safeStorage "works" with a key hard-coded in Chromium (`basic_text`): that is
 * obfuscation, not encryption, so it counts as unavailable and the core falls back to its AES-GCM file.
 */
function safeStorageInfo(): { available: boolean; backend: string } {
  const backend = process.platform === 'linux' ? safeStorage.getSelectedStorageBackend() : process.platform === 'darwin' ? 'macOS Keychain' : process.platform === 'win32' ? 'Windows DPAPI' : process.platform;
  return { available: safeStorage.isEncryptionAvailable() && !(process.platform === 'linux' && backend === 'basic_text'), backend };
}

function toCore(m: MainToCore, transfer?: MessagePortMain[]): void {
  core?.postMessage(m, transfer);
}

async function onCoreMessage(m: CoreToMain): Promise<void> {
  switch (m.type) {
    case 'mediaPath:reply':
      mediaRequests.get(m.id)?.(m.path);
      mediaRequests.delete(m.id);
      return;
    case 'exportPath:reply':
      exportRequests.get(m.id)?.(m.path);
      exportRequests.delete(m.id);
      return;
    case 'safeStorage':
      try {
        const value = m.op === 'encrypt' ? await safeStorage.encryptStringAsync(m.text) : (await safeStorage.decryptStringAsync(Buffer.from(m.data))).result;
        toCore({ type: 'safeStorage:reply', id: m.id, ok: true, value });
      } catch (err) {
        toCore({ type: 'safeStorage:reply', id: m.id, ok: false, message: err instanceof Error ? err.message : String(err) });
      }
      return;
    default:
      return;
  }
}

/** Start the core; resolves once it has opened the workspace. A core that exits unexpectedly is restarted. */
function startCore(): Promise<void> {
  const workspaceArg = process.argv.find((a) => a.startsWith('--workspace='));
  const child = utilityProcess.fork(electronBundle('core'), [], { serviceName: 'Loupe core', stdio: 'inherit' });
  core = child;
  let started = false;
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (m: CoreToMain) => {
      if (m.type === 'ready') {
        started = true;
        failedStarts = 0;
        resolve();
      } else if (m.type === 'failed') reject(new Error(`the core could not start: ${m.message}`));
      else void onCoreMessage(m);
    });
    child.once('exit', (code) => {
      reject(new Error(`the core exited with code ${code} while starting`));
      if (core !== child || quitting) return;
      core = null;
      // A core that cannot even start would crash-loop: give up after a few tries and say so.
      if (!started && ++failedStarts >= MAX_FAILED_STARTS) {
        process.stderr.write(`Loupe: the core failed to start ${failedStarts} times in a row (exit code ${code}); not restarting it\n`);
        return;
      }
      // A crash (e.g. in a native module) ends only the core: start a new one and reconnect the windows.
      for (const resolveMedia of mediaRequests.values()) resolveMedia(null);
      mediaRequests.clear();
      for (const resolveExport of exportRequests.values()) resolveExport(null);
      exportRequests.clear();
      coreReady = startCore().then(() => {
        for (const wc of windows) connect(wc);
      });
      coreReady.catch(() => undefined);
    });
  });
  toCore({ type: 'init', ...(workspaceArg ? { workspace: workspaceArg.slice('--workspace='.length) } : {}), safeStorage: safeStorageInfo() });
  return ready;
}

/** Give a window of ours a fresh port straight to the core (the preload picks it up on PORT_CHANNEL). */
function connect(wc: WebContents): void {
  if (!core || wc.isDestroyed() || !isAppUrl(wc.getURL())) return;
  const { port1, port2 } = new MessageChannelMain();
  toCore({ type: 'connect' }, [port2]);
  wc.postMessage(PORT_CHANNEL, null, [port1]);
}

function mediaPath(mediaId: string): Promise<string | null> {
  if (!core) return Promise.resolve(null);
  const id = nextId++;
  return new Promise((resolve) => {
    mediaRequests.set(id, resolve);
    toCore({ type: 'mediaPath', id, mediaId });
  });
}

function exportPath(name: string): Promise<string | null> {
  if (!core) return Promise.resolve(null);
  const id = nextId++;
  return new Promise((resolve) => {
    exportRequests.set(id, resolve);
    toCore({ type: 'exportPath', id, name });
  });
}

const EXPORT_FILTERS: Record<string, Electron.FileFilter> = {
  '.html': { name: 'HTML page', extensions: ['html'] },
  '.webp': { name: 'Animated WebP', extensions: ['webp'] },
  '.gif': { name: 'GIF', extensions: ['gif'] },
};

/**
 * The one renderer → main request: save a file of the workspace's `exports/` where the user chooses. Only our own
 * page may ask; the core resolves the name (nothing outside `exports/`); the file is copied, never moved.
 */
export async function saveExport(e: IpcMainInvokeEvent, name: unknown): Promise<SaveExportReply> {
  if (!windows.has(e.sender) || !isAppUrl(e.sender.getURL())) return { ok: false, message: 'refused: not a Loupe window' };
  if (typeof name !== 'string' || name.length === 0 || name.length > 255) return { ok: false, message: 'not an export name' };
  const from = await exportPath(name);
  if (!from) return { ok: false, message: `no export named "${name}" in this workspace` };
  const ext = path.extname(name).toLowerCase();
  const win = BrowserWindow.fromWebContents(e.sender);
  const options: Electron.SaveDialogOptions = { title: 'Save export', defaultPath: path.join(app.getPath('downloads'), name), filters: EXPORT_FILTERS[ext] ? [EXPORT_FILTERS[ext]] : [] };
  const choice = win ? await dialog.showSaveDialog(win, options) : await dialog.showSaveDialog(options);
  if (choice.canceled || !choice.filePath) return { ok: true, saved: null };
  try {
    await fs.promises.copyFile(from, choice.filePath);
    return { ok: true, saved: choice.filePath };
  } catch (err) {
    return { ok: false, message: `could not save to ${choice.filePath}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

async function fileResponse(file: string, headers: Record<string, string> = {}): Promise<Response> {
  try {
    const body = await fs.promises.readFile(file);
    return new Response(body, { status: 200, headers: { 'content-type': MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream', 'x-content-type-options': 'nosniff', ...headers } });
  } catch {
    return new Response('not found', { status: 404 });
  }
}

/** `app://loupe/<path>`: the built renderer, nothing outside its folder, with the CSP on every response. */
export async function serveApp(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.host !== APP_HOST) return new Response('not found', { status: 404 });
  const root = rendererDir();
  const rel = decodeURIComponent(url.pathname) === '/' ? 'index.html' : decodeURIComponent(url.pathname).replace(/^\/+/, '');
  const file = path.resolve(root, rel);
  if (path.relative(root, file).startsWith('..') || path.isAbsolute(path.relative(root, file))) return new Response('forbidden', { status: 403 });
  return fileResponse(file, { 'content-security-policy': CSP });
}

/** `loupe-media://media/<id>`: a workspace media file, by id only (the core checks the id). */
async function serveMedia(request: Request): Promise<Response> {
  // A malformed `%` escape, an unknown id and a symlink planted in media/ all answer 404 (as browser mode does).
  const id = decodeUrlPart(new URL(request.url).pathname.replace(/^\//, ''));
  const file = id === null ? null : await mediaPath(id);
  const handle = await openMediaFile(file);
  if (!handle) return new Response('no such media', { status: 404 });
  try {
    return new Response(await handle.readFile(), { status: 200, headers: { 'content-type': MIME[path.extname(file ?? '').toLowerCase()] ?? 'application/octet-stream', 'x-content-type-options': 'nosniff' } });
  } finally {
    await handle.close();
  }
}

function createWindow(): void {
  const win = new BrowserWindow({
    width: 1400,
    height: 900,
    minWidth: 900,
    minHeight: 600,
    title: 'Loupe',
    show: false,
    webPreferences: {
      preload: electronBundle('preload'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
    },
  });
  const wc = win.webContents;
  windows.add(wc);
  win.on('closed', () => windows.delete(wc));
  win.once('ready-to-show', () => win.show());
  // No new windows; external links go to the system browser.
  wc.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  // No navigation away from the app, and a redirect is a navigation: the same rule holds.
  wc.on('will-navigate', (e, url) => {
    if (!isAppUrl(url)) e.preventDefault();
  });
  wc.on('will-redirect', (e, url) => {
    if (!isAppUrl(url)) e.preventDefault();
  });
  wc.on('will-attach-webview', (e) => e.preventDefault());
  // Each load of our page gets a fresh port (a reload drops the old one with the old page).
  wc.on('did-finish-load', () => {
    void coreReady?.then(() => connect(wc));
  });
  void win.loadURL(`${APP_ORIGIN}/index.html`);
}

async function bootstrap(): Promise<void> {
  await app.whenReady();
  // Deny every permission (camera, notifications, geolocation, ...): the app needs none.
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  session.defaultSession.setPermissionCheckHandler(() => false);
  protocol.handle(APP_SCHEME, serveApp);
  protocol.handle(MEDIA_SCHEME, serveMedia);
  ipcMain.handle(SAVE_EXPORT_CHANNEL, saveExport);
  coreReady = startCore();
  createWindow();
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow();
  });
  await coreReady;
}

/**
 * Quit only once the core has shut down: its dispose ends every served engine and cancels their Slurm jobs
 * (ServedEngineLauncher.stopAll), which must not be cut off by the app exiting. Bounded, so a stuck core never
 * keeps the app open.
 */
let coreShutDown = false;
function shutDownCoreThenQuit(): void {
  quitting = true;
  const child = core;
  if (!child) {
    coreShutDown = true;
    app.quit();
    return;
  }
  const done = (): void => {
    if (coreShutDown) return;
    coreShutDown = true;
    app.quit();
  };
  child.once('exit', done);
  setTimeout(done, 20_000).unref();
  toCore({ type: 'shutdown' });
}
app.on('window-all-closed', () => {
  if (process.platform === 'darwin') return;
  shutDownCoreThenQuit();
});
app.on('before-quit', (event) => {
  quitting = true;
  // Cmd+Q, the menu's Quit, app.quit(): 'window-all-closed' is not emitted then, so the core is told here.
  if (!coreShutDown) {
    event.preventDefault();
    shutDownCoreThenQuit();
  }
});
app.on('web-contents-created', (_e, contents) => {
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
});

bootstrap().catch((err: unknown) => {
  quitting = true;
  process.stderr.write(`Loupe could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  app.exit(1);
});

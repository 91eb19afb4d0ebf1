/**
 * Electron main: one window, secure defaults, the contract carried over IPC to the same core the
 * browser-mode server uses. Bundled to CommonJS by scripts/build-node.mjs.
 */
import { app, BrowserWindow, ipcMain, protocol, net, safeStorage, shell, session, type IpcMainInvokeEvent, type WebContents } from 'electron';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createCore, type Core } from '../core';
import { events } from '../../app/contract';
import type { SafeStorageAdapter } from '../../app/connectors/secrets';

const RENDERER_DIR = path.join(__dirname, '..', '..', 'renderer');
const RENDERER_INDEX = path.join(RENDERER_DIR, 'index.html');
const RENDERER_URL = pathToFileURL(RENDERER_INDEX).toString();

protocol.registerSchemesAsPrivileged([{ scheme: 'loupe-media', privileges: { standard: true, secure: true, supportFetchAPI: true } }]);

let core: Core | null = null;
const windows = new Set<WebContents>();

/** Only our own window, showing our own page, may talk to the core. */
function validateSender(event: IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame;
  return windows.has(event.sender) && !!frame && frame.url.startsWith(pathToFileURL(RENDERER_DIR).toString());
}

/**
 * Electron's safeStorage as the core's adapter (the core never imports electron). Must be built after `ready`.
 * On Linux without libsecret/kwallet safeStorage "works" with a key hard-coded in Chromium (`basic_text`): that
 * is obfuscation, not encryption, so it counts as unavailable and the core falls back to its AES-GCM file.
 */
function safeStorageAdapter(): SafeStorageAdapter {
  const backend = (): string => (process.platform === 'linux' ? safeStorage.getSelectedStorageBackend() : process.platform === 'darwin' ? 'macOS Keychain' : process.platform === 'win32' ? 'Windows DPAPI' : process.platform);
  return {
    encrypt: (plainText) => safeStorage.encryptStringAsync(plainText),
    decrypt: async (cipherText) => (await safeStorage.decryptStringAsync(cipherText)).result,
    available: () => safeStorage.isEncryptionAvailable() && !(process.platform === 'linux' && backend() === 'basic_text'),
    backend,
  };
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
      preload: path.join(__dirname, 'preload.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
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
  // No navigation away from the app.
  wc.on('will-navigate', (e, url) => {
    if (!url.startsWith(RENDERER_URL)) e.preventDefault();
  });
  wc.on('will-attach-webview', (e) => e.preventDefault());
  void win.loadFile(RENDERER_INDEX);
}

async function bootstrap(): Promise<void> {
  await app.whenReady();
  const workspaceArg = process.argv.find((a) => a.startsWith('--workspace='));
  core = await createCore({ transport: 'electron', workspace: workspaceArg?.slice('--workspace='.length), safeStorage: safeStorageAdapter() });
  const c = core;

  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({
      responseHeaders: {
        ...details.responseHeaders,
        'Content-Security-Policy': ["default-src 'self'; img-src 'self' data: blob: loupe-media:; media-src 'self' blob: loupe-media:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'"],
      },
    });
  });
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));

  protocol.handle('loupe-media', (request) => {
    const id = decodeURIComponent(new URL(request.url).pathname.replace(/^\//, ''));
    const file = c.mediaPath(id);
    if (!file) return new Response('no such media', { status: 404 });
    return net.fetch(pathToFileURL(file).toString());
  });

  ipcMain.handle('loupe:invoke', async (event, method: unknown, payload: unknown) => {
    if (!validateSender(event)) return { ok: false, error: { code: 'unauthorized', message: 'IPC from an unknown sender was refused' } };
    return c.dispatch(method, payload);
  });
  c.onEvent((event, payload) => {
    if (!(event in events)) return;
    for (const wc of windows) wc.send('loupe:event', event, payload);
  });

  createWindow();
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow();
  });
}

app.on('window-all-closed', () => {
  void core?.dispose();
  if (process.platform !== 'darwin') app.quit();
});
app.on('web-contents-created', (_e, contents) => {
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
});

void bootstrap();

/**
 * The Electron door, through what ships: the production bundles in dist/ (`npm run build`), loaded by the Electron
 * harness (tests/e2e/electron/fakeElectron.ts — the one stand-in: no Electron binary can be downloaded here). The
 * main bundle starts and creates its window, the preload bundle runs in a real Chromium page, and every contract
 * call crosses a MessagePort to the real core in its own process. The Demo runs loupe-tiny through it.
 * Screenshots go to test-results/electron-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, ROOT, screenshot, tempWorkspace } from './harness';
import { startHarness, type FakeBrowserWindow, type Harness } from './electron/fakeElectron';

const MAIN = path.join(ROOT, 'dist', 'main', 'electron', 'main.cjs');

type Reply = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string; issues?: Array<{ path: string; message: string }> } };

/** Call the contract from the page, through window.loupe (the preload's bridge). */
function invoke(page: Page, method: string, payload: unknown): Promise<Reply> {
  return page.evaluate(([m, p]) => (window as unknown as { loupe: { invoke(m: string, p: unknown): Promise<Reply> } }).loupe.invoke(m, p), [method, payload] as const);
}

describe('the Electron door (production bundles under the Electron harness)', () => {
  let browser: Browser;
  let h: Harness;
  let win: FakeBrowserWindow;
  let page: Page;
  let workspace: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    // What ships is what is tested: build the bundles (the renderer too, when it is missing).
    if (!fs.existsSync(path.join(ROOT, 'dist', 'renderer', 'index.html'))) execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'error'], { cwd: ROOT });
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-node.mjs')], { cwd: ROOT });
    workspace = tempWorkspace('loupe-electron-e2e-');
    browser = await launchBrowser();
    // Under `npm start`, process.resourcesPath is Electron's own resources folder, outside the package.
    const resourcesPath = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-electron-resources-'));
    h = await startHarness({ mainBundle: MAIN, browser, resourcesPath, argv: [`--workspace=${workspace}`] });
    win = await h.firstWindow();
    page = win.webContents.page!;
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });
  afterAll(async () => {
    await h?.close();
    await browser?.close();
  });

  it('main starts and creates one window with the secure preferences, on app:// with the CSP', async () => {
    expect(h.exits).toEqual([]);
    const created = h.recorder.find('new BrowserWindow');
    expect(created).toHaveLength(1);
    const prefs = win.options.webPreferences!;
    expect(prefs).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, nodeIntegrationInWorker: false, webSecurity: true, allowRunningInsecureContent: false, webviewTag: false });
    expect(prefs.preload).toBe(path.join(ROOT, 'dist', 'main', 'electron', 'preload.cjs'));
    expect(win.loads).toEqual(['app://loupe/index.html']);
    expect(h.privilegedSchemes.map((s) => s.scheme)).toEqual(['app', 'loupe-media']);
    expect(h.privilegedSchemes[0]!.privileges).toMatchObject({ standard: true, secure: true });
    // The renderer is served by main's app: handler, with the CSP; nothing outside the renderer folder.
    const index = await h.protocolHandlers.get('app')!(new Request('app://loupe/index.html'));
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(index.headers.get('content-security-policy')).toContain("object-src 'none'");
    const escape = await h.protocolHandlers.get('app')!(new Request('app://loupe/..%2F..%2Fpackage.json'));
    expect(escape.status).toBe(403);
    const other = await h.protocolHandlers.get('app')!(new Request('app://elsewhere/index.html'));
    expect(other.status).toBe(404);
    await page.getByTestId('nav-demo').waitFor();
    // The renderer reached the core through window.loupe: the status bar says which door.
    await page.getByTestId('statusbar').filter({ hasText: 'desktop · ' }).waitFor();
    await screenshot(page, 'electron-window');
  });

  it('the preload bundle exposes exactly window.loupe (invoke, saveExport, subscribe) and nothing of Electron or Node', async () => {
    const seen = await page.evaluate(() => {
      const w = window as unknown as Record<string, unknown> & { __harness: { added: string[]; exposed: string[] }; loupe: object };
      return {
        added: w.__harness.added,
        exposed: w.__harness.exposed,
        keys: Object.keys(w.loupe).sort(),
        frozen: Object.isFrozen(w.loupe),
        leaks: ['require', 'module', 'process', 'ipcRenderer', 'contextBridge', 'Buffer', 'global'].filter((k) => k in w),
      };
    });
    expect(seen).toEqual({ added: ['loupe'], exposed: ['loupe'], keys: ['invoke', 'saveExport', 'subscribe'], frozen: true, leaks: [] });
  });

  it('contract calls round-trip over a MessagePort to the core in its own process; main loads nothing heavy', async () => {
    const fork = h.recorder.find('utilityProcess.fork');
    expect(fork).toHaveLength(1);
    expect(fork[0]!.args[0]).toBe(path.join(ROOT, 'dist', 'main', 'electron', 'core.cjs'));
    const core = h.utilities[0]!;
    expect(core.pid).toBeGreaterThan(0);
    expect(core.pid).not.toBe(process.pid);
    // The window got one end of a fresh channel, the core the other.
    const toWindow = h.recorder.find('WebContents.postMessage');
    expect(toWindow.at(-1)!.args[0]).toBe('loupe:port');
    const info = await invoke(page, 'app:info', {});
    expect(info.ok).toBe(true);
    expect(info.ok && info.result).toMatchObject({ name: 'Loupe', transport: 'electron', workspace });
    // Main's process never loaded the core, the engine or the image libraries.
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    expect(loaded.filter((f) => /onnxruntime|[\\/]sharp[\\/]|@huggingface|dist[\\/](workers|main[\\/]electron[\\/]core)/.test(f))).toEqual([]);
  });

  it('a malformed payload gets an error naming the field, and the app keeps working', async () => {
    const bad = await invoke(page, 'settings:set', { theme: 42 });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error.code).toBe('invalid_payload');
    expect(!bad.ok && bad.error.message).toMatch(/theme/);
    const unknown = await invoke(page, 'no:such-method', {});
    expect(!unknown.ok && unknown.error.code).toBe('unknown_method');
    const again = await invoke(page, 'app:info', {});
    expect(again.ok).toBe(true);
  });

  it('loads the Training page, a chunk of its own (code-split), through main\'s app: handler', async () => {
    const before = h.recorder.find('protocol.request').length;
    await page.getByTestId('nav-training').click();
    await page.getByTestId('training-page').waitFor();
    const fetched = h.recorder.find('protocol.request').slice(before).map((c) => String(c.args[0]));
    expect(fetched.filter((u) => /^app:\/\/loupe\/assets\/TrainingPage-[\w-]+\.js$/.test(u))).toHaveLength(1);
    // Served as a JavaScript module with the CSP, like the entry chunk.
    const chunk = await h.protocolHandlers.get('app')!(new Request(fetched.find((u) => u.includes('TrainingPage-'))!));
    expect(chunk.status).toBe(200);
    expect(chunk.headers.get('content-type')).toMatch(/javascript/);
    expect(chunk.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('the Demo runs an example on loupe-tiny end to end through the window', async () => {
    await page.getByTestId('nav-demo').click();
    await page.getByTestId('example-synth-9-00014').click();
    await page.getByTestId('media-summary').waitFor();
    await expect(page.getByTestId('local-model').inputValue()).resolves.toBe('loupe-tiny');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 280_000 });
    await page.getByTestId('crop-step-1').waitFor();
    await expect(page.getByTestId('step-list').textContent()).resolves.toContain('crop_image_normalized');
    // The held-out scene's ring reads 352 (the same answer the browser-mode Demo test checks).
    await expect(page.getByTestId('answer').textContent()).resolves.toContain('\\boxed{352}');
    await screenshot(page, 'electron-demo-loupe-tiny');
    expect(pageErrors).toEqual([]);
    // The images the page shows are loupe-media: URLs, which main answers with the core's file for that id
    // (Chromium here cannot load the scheme, so the handler is called as Electron would call it).
    const src = await page.locator('img[src^="loupe-media:"]').first().getAttribute('src');
    expect(src).toMatch(/^loupe-media:\/\/media\/[a-f0-9]{64}\.(png|jpe?g|webp)$/);
    const media = await h.protocolHandlers.get('loupe-media')!(new Request(src!));
    expect(media.status).toBe(200);
    expect(media.headers.get('content-type')).toMatch(/^image\//);
    expect((await media.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect((await h.protocolHandlers.get('loupe-media')!(new Request('loupe-media://media/..%2F..%2Fsettings.json'))).status).toBe(404);
    // A ceiling for a loaded 2-core machine (one trajectory took 23 s to 119 s here), not a performance target.
  }, 300_000);

  it('an export is saved where the user chooses, through the system save dialog; a cancel, a foreign name or sender saves nothing', async () => {
    // The trajectory of the test above is on screen: export it as an HTML page.
    await page.getByTestId('export-html').click();
    await page.getByTestId('export-save-html').waitFor({ timeout: 120_000 });
    // No download link in this door: the file on the core's machine is the user's machine's.
    expect(await page.getByTestId('export-download-html').count()).toBe(0);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-save-'));
    const target = path.join(dir, 'chosen name.html');
    h.saveDialog = { canceled: false, filePath: target };
    await page.getByTestId('export-save-html').click();
    await page.getByTestId('export-saved-html').filter({ hasText: 'saved to' }).waitFor();
    expect(await page.getByTestId('export-saved-html').textContent()).toContain(target);
    await screenshot(page, 'electron-export-saved');
    const html = fs.readFileSync(target, 'utf8');
    expect(html.slice(0, 200).toLowerCase()).toContain('<!doctype html');
    expect(html).toContain('crop_image_normalized');
    const dialogs = h.recorder.find('dialog.showSaveDialog');
    expect(dialogs.length).toBe(1);
    expect(dialogs[0]!.args[0]).toBe('with parent window');
    expect((dialogs[0]!.args[1] as { defaultPath: string }).defaultPath).toMatch(/\.html$/);
    // The user cancels: nothing is written, and the line says so.
    h.saveDialog = { canceled: true, filePath: '' };
    fs.rmSync(target);
    await page.getByTestId('export-save-html').click();
    await page.getByTestId('export-saved-html').filter({ hasText: 'cancelled' }).waitFor();
    expect(fs.existsSync(target)).toBe(false);
    // Hostile names from the page never reach the dialog: the core resolves names inside exports/ only.
    h.saveDialog = { canceled: false, filePath: target };
    const replies = await page.evaluate(async () => {
      const l = (window as unknown as { loupe: { saveExport(n: unknown): Promise<unknown> } }).loupe;
      return Promise.all(['../settings.json', '..%2Fsettings.json', 'x'.repeat(300), '', 42].map((n) => l.saveExport(n)));
    });
    for (const r of replies) expect(r).toMatchObject({ ok: false });
    expect(h.recorder.find('dialog.showSaveDialog').length).toBe(2);
    expect(fs.existsSync(target)).toBe(false);
    // A sender that is not one of main's windows is refused before anything is resolved.
    const stranger = { getURL: () => 'https://example.invalid/', isDestroyed: () => false };
    await expect(Promise.resolve(h.ipcHandlers.get('loupe:save-export')!({ sender: stranger as never }, 'x.html'))).resolves.toEqual({ ok: false, message: 'refused: not a Loupe window' });
    fs.rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  it('the secret store keeps its values under safeStorage, which main holds for the core', async () => {
    const set = await invoke(page, 'training:secretSet', { name: 'harness-token', value: 'not-a-real-secret' });
    expect(set.ok).toBe(true);
    expect(set.ok && set.result).toMatchObject({ secrets: ['harness-token'], secretStore: { kind: 'os-keychain' } });
    expect(h.recorder.find('safeStorage.encryptStringAsync').length).toBeGreaterThan(0);
    const onDisk = fs.readdirSync(path.join(workspace, 'training')).map((f) => fs.readFileSync(path.join(workspace, 'training', f), 'utf8'));
    expect(onDisk.join('\n')).not.toContain('not-a-real-secret');
  });

  it('navigation, redirects, new windows and permissions are denied outside the app', async () => {
    const wc = win.webContents;
    expect(wc.fire('will-navigate', 'https://example.invalid/')).toBe(true);
    expect(wc.fire('will-redirect', 'https://example.invalid/landing')).toBe(true);
    expect(wc.fire('will-navigate', 'file:///etc/passwd')).toBe(true);
    expect(wc.fire('will-navigate', 'app://loupe/index.html#/demo')).toBe(false);
    expect(wc.fire('will-attach-webview', 'app://loupe/index.html')).toBe(true);
    expect(wc.windowOpenHandler!({ url: 'https://example.invalid/', frameName: '', features: '', disposition: 'new-window', referrer: { url: '', policy: 'default' } } as never)).toEqual({ action: 'deny' });
    expect(h.recorder.find('shell.openExternal').map((c) => c.args[0])).toEqual(['https://example.invalid/']);
    // A navigation the page starts itself is held to the same rule.
    await page.evaluate(() => {
      location.href = 'https://example.invalid/page';
    });
    await expect.poll(() => h.recorder.find('WebContents.emit').map((c) => c.args.join(' '))).toContain('will-navigate https://example.invalid/page prevented');
    expect(page.url().startsWith(h.origin)).toBe(true);
    const granted: boolean[] = [];
    for (const perm of ['media', 'geolocation', 'notifications', 'clipboard-read']) h.permissionRequestHandler!(wc, perm, (g) => granted.push(g), {});
    expect(granted).toEqual([false, false, false, false]);
    expect(h.permissionCheckHandler!(wc, 'media')).toBe(false);
    // The window still works.
    expect((await invoke(page, 'app:info', {})).ok).toBe(true);
  });

  it('a core that dies (say, in a native module) is restarted and the window reconnected', async () => {
    const first = h.utilities[0]!;
    const exited = new Promise((res) => first.child.once('exit', res));
    first.child.kill('SIGKILL');
    await exited;
    await expect.poll(() => h.utilities.length, { timeout: 60_000 }).toBe(2);
    // Calls in flight on the dead core's port get a transport error; the next ones reach the new core.
    await expect.poll(async () => (await invoke(page, 'app:info', {})).ok, { timeout: 120_000 }).toBe(true);
    expect(h.recorder.find('WebContents.postMessage').filter((c) => c.args[0] === 'loupe:port')).toHaveLength(2);
    expect(h.utilities[1]!.pid).not.toBe(first.pid);
  });

  it('quitting shuts the core down through main (no restart, no kill)', async () => {
    const core = h.utilities.at(-1)!;
    await h.close();
    expect(h.recorder.find('UtilityProcess.postMessage').map((c) => (c.args[0] as { type: string }).type)).toContain('shutdown');
    expect(core.child.exitCode).toBe(0);
    expect(h.recorder.find('harness.killCore')).toEqual([]);
    expect(h.recorder.find('utilityProcess.fork')).toHaveLength(2);
    // Cmd+Q / app.quit(): main holds the quit until the core has shut down (its dispose stops served engines and
    // cancels their Slurm jobs), then quits once.
    expect(h.recorder.find('harness.beforeQuit').map((c) => c.args[0])).toEqual(['prevented']);
    await expect.poll(() => h.recorder.find('app.quit').length).toBe(1);
  });
});

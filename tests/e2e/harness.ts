/**
 * e2e harness: starts the real app in browser mode as a child process (`loupe serve`) on a fresh
 * workspace and drives Debian's Chromium through playwright-core. Screenshots go to test-results/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

// Works under vitest (CJS-like) and plain ESM (the benchmark runner).
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RESULTS = path.join(ROOT, 'test-results');
export const CHROMIUM = process.env.LOUPE_CHROMIUM ?? '/usr/bin/chromium';

export interface AppProcess {
  url: string;
  openUrl: string;
  token: string;
  workspace: string;
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function tempWorkspace(prefix = 'loupe-e2e-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Start `loupe serve` and wait for the URL it prints. */
export async function startApp(workspace = tempWorkspace(), extraArgs: string[] = []): Promise<AppProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/loupe.mjs'), 'serve', '--no-open', '--workspace', workspace, ...extraArgs], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DISPLAY: '' },
  });
  let out = '';
  const openUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`loupe serve did not print a URL in 60 s:\n${out}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /open: (http:\/\/\S+\?token=[a-f0-9]+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`loupe serve exited with ${code}:\n${out}`));
    });
  });
  const u = new URL(openUrl);
  return {
    openUrl,
    url: `${u.protocol}//${u.host}`,
    token: u.searchParams.get('token') ?? '',
    workspace,
    child,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill(signal);
      });
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/** A page that records console errors and uncaught exceptions, so a test can assert there were none. */
export async function newPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return { page, errors };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(RESULTS, { recursive: true });
  const file = path.join(RESULTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/** A fresh app on a temporary workspace, a Chromium page open on the Training page (shared by the training e2e files). */
export async function openTrainingPage(
  workspacePrefix: string,
  viewport: { width: number; height: number },
): Promise<{ app: AppProcess; browser: Browser; page: Page; errors: string[] }> {
  const app = await startApp(tempWorkspace(workspacePrefix));
  const browser = await launchBrowser();
  const { page, errors } = await newPage(browser, viewport);
  await page.goto(`${app.openUrl}#/training`);
  await page.getByTestId('training-page').waitFor();
  return { app, browser, page, errors };
}

/** Wait until the open job view on the Training page shows `state`. */
export async function waitJobViewState(page: Page, state: string, timeout = 60_000): Promise<void> {
  await page.locator(`[data-testid=job-view] [data-testid=job-state][data-state="${state}"]`).waitFor({ timeout });
}

/** Run `loupe …` as a user would (a child process in the checkout); never throws on a failing exit code. */
export function runLoupe(args: string[], timeoutMs = 120_000): { out: string; err: string; code: number } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin/loupe.mjs'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: timeoutMs });
  return { out: r.stdout, err: r.stderr, code: r.status ?? -1 };
}

/** One contract call through a core; an error reply becomes a thrown Error with its message. */
export async function callCore<T = unknown>(core: { dispatch(method: unknown, payload: unknown): Promise<{ ok: true; result: unknown } | { ok: false; error: { message: string } }> }, method: string, payload: unknown): Promise<T> {
  const r = await core.dispatch(method, payload);
  if (!r.ok) throw new Error(r.error.message);
  return r.result as T;
}

/**
 * `loupe serve` opening its app window: the token must not be in the browser's command line, which every local user
 * can read (`ps`, /proc/PID/cmdline). The real command runs as a child process with a display set and LOUPE_BROWSER
 * pointing at a wrapper that starts Debian's Chromium headless with a DevTools port; the test then reads the argv of
 * every process of that browser and follows the window over CDP until the app has its token. Also: the app opened
 * through a tunnel on another local port (the README's remote recipe) in Chromium.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM, RESULTS, ROOT, launchBrowser, newPage, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';
import { describeIf } from '../support/requirements';
import { setTimeout as sleep } from 'node:timers/promises';

/** Reading another process's argv (what `ps` shows) needs Linux's /proc. */
const HAS_PROC = fs.existsSync('/proc/self/cmdline');
const NEEDS_PROC = { what: '/proc (Linux)', reason: 'this check reads /proc/PID/cmdline, as ps does; run it on Linux', provisioned: false };

/** argv of every running process whose command line mentions `marker` (the browser's own profile folder). */
function processesWith(marker: string): Array<{ pid: number; cmdline: string }> {
  const out: Array<{ pid: number; cmdline: string }> = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let cmdline = '';
    try {
      cmdline = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    if (cmdline.includes(marker)) out.push({ pid: Number(d), cmdline });
  }
  return out;
}

async function until<T>(f: () => T | null | undefined | Promise<T | null | undefined>, timeoutMs: number, what: string): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describeIf(HAS_PROC, NEEDS_PROC, 'loupe serve opens the app window without the token in argv', () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-browser-profile-'));
  let serve: ChildProcess | null = null;
  let browser: Browser | null = null;
  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    serve?.kill('SIGTERM');
    // only the browser this test started: the processes running with its profile folder
    for (const p of processesWith(profile)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  it('hands the token over through a one-time 0600 login file; ps shows neither token nor code', async () => {
    const wrapper = path.join(profile, '..', `${path.basename(profile)}-chromium.sh`);
    fs.writeFileSync(wrapper, `#!/bin/sh\nexec ${CHROMIUM} --headless=new --no-sandbox --disable-gpu --user-data-dir=${profile} --remote-debugging-port=0 "$@"\n`, { mode: 0o700 });
    serve = spawn(process.execPath, [path.join(ROOT, 'bin/loupe.mjs'), 'serve', '--workspace', tempWorkspace('loupe-launch-')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DISPLAY: ':99', LOUPE_BROWSER: wrapper },
    });
    let out = '';
    serve.stdout!.on('data', (d) => (out += d));
    serve.stderr!.on('data', (d) => (out += d));
    const openUrl = await until(() => /open: (http:\/\/\S+\?token=[a-f0-9]+)/.exec(out)?.[1], 60_000, `the URL (${out})`);
    const token = new URL(openUrl).searchParams.get('token')!;
    const origin = new URL(openUrl).origin;

    const procs = await until(() => {
      const p = processesWith(profile);
      return p.length ? p : null;
    }, 30_000, 'the browser to start');
    const appArg = /--app=(\S+)/.exec(procs.map((p) => p.cmdline).join('\n'))?.[1];
    expect(appArg).toMatch(/^file:\/\//);
    const loginFile = decodeURIComponent(new URL(appArg!).pathname);
    const st = fs.statSync(loginFile);
    expect(st.mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(loginFile)).mode & 0o077).toBe(0);
    const code = /code=([a-f0-9]+)/.exec(fs.readFileSync(loginFile, 'utf8'))?.[1];
    expect(code).toBeDefined();

    // The window reaches the app with its token, through the login code.
    const portFile = path.join(profile, 'DevToolsActivePort');
    const port = await until(() => (fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8').split('\n')[0] : null), 30_000, 'DevTools');
    browser = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
    const page = await until(() => browser!.contexts().flatMap((c) => c.pages()).find((p) => p.url().startsWith(`${origin}/`)), 30_000, 'the app page');
    const cookies = await page.context().cookies(origin);
    expect(cookies.find((c) => c.name === 'loupe_token')?.value).toBe(token);
    // The app itself took the token (and removed it from the address bar), and drew its shell.
    await until(async () => (await page.evaluate(() => sessionStorage.getItem('loupe.token'))) === token, 30_000, 'the renderer to keep the token');
    await until(() => !page.url().includes(token), 10_000, 'the token to leave the address bar');
    await page.locator('nav, header, main').first().waitFor({ timeout: 30_000 });
    fs.mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: path.join(RESULTS, 'browser-launch-login-file.png') });

    // Every process of that browser, renderers and helpers included: no token, no code.
    for (const p of processesWith(profile)) {
      expect(p.cmdline).not.toContain(token);
      expect(p.cmdline).not.toContain(code!);
    }
    // The code is spent and its file gone.
    await until(() => !fs.existsSync(loginFile), 10_000, 'the login file to be removed');
    const again = await fetch(`${origin}/login?code=${code}`, { redirect: 'manual' });
    expect(again.status).toBe(401);
  });
});

describe('browser mode through an SSH-style tunnel on another local port, in Chromium', () => {
  let app: AppProcess | null = null;
  let browser: Browser | null = null;
  let tunnel: net.Server | null = null;
  const conns = new Set<net.Socket>();
  afterAll(async () => {
    await browser?.close();
    for (const c of conns) c.destroy();
    tunnel?.close();
    await app?.stop();
  });

  it('opens the app at localhost:OTHER_PORT and talks to the core over the WebSocket', async () => {
    app = await startApp(tempWorkspace('loupe-tunnel-'));
    const target = Number(new URL(app.url).port);
    // What `ssh -L OTHER_PORT:127.0.0.1:PORT` does on the server's side: loopback connections to the real port.
    tunnel = net.createServer((inbound) => {
      const out = net.connect(target, '127.0.0.1');
      conns.add(inbound).add(out);
      inbound.pipe(out).pipe(inbound);
      inbound.on('error', () => out.destroy());
      out.on('error', () => inbound.destroy());
    });
    await new Promise<void>((r) => tunnel!.listen(0, '127.0.0.1', r));
    const port = (tunnel.address() as net.AddressInfo).port;
    browser = await launchBrowser();
    const { page, errors } = await newPage(browser);
    await page.goto(`http://localhost:${port}/?token=${app.token}`);
    // The status bar shows the workspace only after app:info came back over the WebSocket.
    await page.getByText(`workspace: ${app.workspace}`).waitFor({ timeout: 30_000 });
    await screenshot(page, 'browser-mode-via-tunnel');
    expect(page.url()).toBe(`http://localhost:${port}/`);
    expect(errors).toEqual([]);
  });
});

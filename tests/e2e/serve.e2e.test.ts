/**
 * `npx loupe serve` as a new user meets it: from a clean copy of the repository (tracked files only, so no
 * dist/; node_modules linked as `npm install` would leave it) it builds the UI itself and serves the app, on the
 * stable default port 8420 or the next free one after it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { launchBrowser, newPage, ROOT, screenshot, tempWorkspace } from './harness';

const started: ChildProcess[] = [];

/** Start `loupe serve` from `root`; resolves with the printed URL and everything printed before it. */
function serve(root: string, args: string[]): Promise<{ url: URL; out: string }> {
  const child = spawn(process.execPath, [path.join(root, 'bin', 'loupe.mjs'), 'serve', '--no-open', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DISPLAY: '' } });
  started.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL in 240 s:\n${out}`)), 240_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /open: (http:\/\/\S+\?token=[a-f0-9]+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ url: new URL(m[1]), out });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`loupe serve exited with ${code}:\n${out}`));
    });
  });
}

describe('npx loupe serve', () => {
  afterAll(() => {
    for (const c of started) if (c.exitCode === null) c.kill('SIGTERM');
  });

  it('serves the app from a clean clone after npm install (builds the UI on first start) on port 8420 or the next free one', async () => {
    const clone = tempWorkspace('loupe-clone-');
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    for (const f of files) {
      const src = path.join(ROOT, f);
      if (!fs.existsSync(src)) continue; // deleted in the working tree
      fs.mkdirSync(path.dirname(path.join(clone, f)), { recursive: true });
      fs.copyFileSync(src, path.join(clone, f));
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
    expect(fs.existsSync(path.join(clone, 'dist'))).toBe(false);

    const first = await serve(clone, ['--workspace', tempWorkspace('loupe-clone-ws-')]);
    expect(first.out).toMatch(/Building the user interface/);
    const port = Number(first.url.port);
    expect(port).toBeGreaterThanOrEqual(8420);
    expect(port).toBeLessThan(8440);
    // A second Loupe does not fail on the taken port: it takes the next free one.
    const second = await serve(clone, ['--workspace', tempWorkspace('loupe-clone-ws-')]);
    expect(Number(second.url.port)).toBeGreaterThan(port);
    expect(Number(second.url.port)).toBeLessThan(8440);
    expect(second.out).not.toMatch(/Building the user interface/);
    // An explicit --port that is taken: a clear error, not a random port.
    await expect(serve(clone, ['--port', String(port), '--workspace', tempWorkspace('loupe-clone-ws-')])).rejects.toThrow(new RegExp(`port ${port} is in use`));

    const browser = await launchBrowser();
    try {
      const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
      await page.goto(first.url.toString());
      await page.getByTestId('nav-demo').waitFor();
      await screenshot(page, 'serve-clean-clone');
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 400_000);
});

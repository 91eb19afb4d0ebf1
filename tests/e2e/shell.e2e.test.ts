import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser, newPage, ROOT, screenshot, startApp, type AppProcess } from './harness';

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };

describe('app shell in browser mode', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    app = await startApp();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('shows the shell with navigation and a status bar filled from the core', async () => {
    const { page, errors } = await newPage(browser);
    await page.goto(app.openUrl);
    await page.getByTestId('status-version').filter({ hasText: `v${pkg.version}` }).waitFor();
    // The token left the address bar once read.
    expect(page.url()).not.toContain('token=');
    await expect(page.getByTestId('status-workspace').textContent()).resolves.toContain(app.workspace);
    await expect(page.getByTestId('status-engine').textContent()).resolves.toContain('idle');
    for (const name of ['Demo', 'Runs', 'Annotate', 'Training', 'Models', 'Settings']) {
      await expect(page.getByRole('button', { name }).count()).resolves.toBe(1);
    }
    await screenshot(page, 'shell-demo-light');
    expect(errors).toEqual([]);
  });

  it('navigates between pages and keeps the page in the URL', async () => {
    const { page, errors } = await newPage(browser);
    await page.goto(app.openUrl);
    await page.getByTestId('nav-runs').click();
    await page.getByRole('heading', { level: 1, name: 'Runs', exact: true }).waitFor();
    expect(page.url()).toContain('#/runs');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Runs', exact: true }).waitFor();
    expect(errors).toEqual([]);
  });

  it('switches to the dark theme, stores it in the workspace and restores it on reload', async () => {
    const { page, errors } = await newPage(browser);
    await page.goto(`${app.openUrl}#/settings`);
    await page.getByTestId('theme-dark').click();
    await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    const stored = JSON.parse(fs.readFileSync(path.join(app.workspace, 'settings.json'), 'utf8')) as { theme: string };
    expect(stored.theme).toBe('dark');
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).not.toBe('rgb(246, 247, 249)');
    await screenshot(page, 'shell-settings-dark');
    await page.getByTestId('theme-light').click();
    await page.waitForFunction(() => document.documentElement.dataset.theme === 'light');
    expect(errors).toEqual([]);
  });

  it('a page opened without the token cannot reach the core and says so', async () => {
    const { page } = await newPage(browser);
    await page.goto(app.url);
    await page.getByRole('alert').waitFor({ timeout: 20_000 }).catch(() => undefined);
    const versionText = await page.getByTestId('status-version').textContent();
    expect(versionText).not.toContain(pkg.version);
  });
});

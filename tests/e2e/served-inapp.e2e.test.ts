/**
 * Models → Serve a model, backend loupe with no Command, when the core runs inside Electron with no usable Node: the
 * model is served IN the app. The Electron runtime cannot run here; the stand-in, labelled: `loupe serve` started with
 * `process.versions.electron` set the way Electron sets it (a `--import` file through NODE_OPTIONS) and a PATH whose
 * only `node` is too old (a real program answering v18.19.0). Everything else is real: the app in Chromium, the core,
 * loupe-tiny on ONNX, the OpenAI-compatible server, a Demo trajectory through it.
 * Screenshots: test-results/served-inapp-*.png.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GLASS, GLASS_QUESTION } from './demo.fixture';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const TINY = path.join(ROOT, 'models', 'loupe-tiny', 'model');

describe('Serve a model in the app (Electron stand-in: versions.electron set, only an old Node on PATH)', () => {
  let app: AppProcess;
  let browser: Browser;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-inapp-e2e-'));
  const saved = { PATH: process.env.PATH, NODE_OPTIONS: process.env.NODE_OPTIONS };
  beforeAll(async () => {
    const oldDir = path.join(tmp, 'old-bin');
    mkdirSync(oldDir);
    writeFileSync(path.join(oldDir, 'node'), '#!/bin/sh\necho v18.19.0\n');
    chmodSync(path.join(oldDir, 'node'), 0o755);
    const standIn = path.join(tmp, 'electron-stand-in.mjs');
    writeFileSync(standIn, "Object.defineProperty(process.versions, 'electron', { value: '33.2.0', enumerable: true, configurable: true });\n");
    process.env.PATH = oldDir;
    process.env.NODE_OPTIONS = `--import=${standIn}`;
    try {
      app = await startApp(tempWorkspace('loupe-inapp-ws-'));
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.NODE_OPTIONS === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = saved.NODE_OPTIONS;
    }
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('serve → "in the app" ready in the table and the status bar; a Demo run through it; stop → stopped', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('serve-panel').waitFor();
    await page.getByTestId('serve-bounds').filter({ hasText: /MIN_PIXELS \d+ · MAX_PIXELS \d+/ }).waitFor();
    await page.getByTestId('serve-backend').selectOption('loupe');
    await page.getByTestId('serve-folder').fill(TINY);
    await page.getByTestId('serve-name').fill('loupe-tiny');
    await page.getByTestId('serve-dtype').fill('q8');
    await page.getByTestId('serve-start').click();
    await page.getByTestId('status-served').filter({ hasText: /loupe-tiny \(in the app\) ready/ }).waitFor({ timeout: 120_000 });
    await page.getByTestId('served-table').filter({ hasText: /this machine · in the app/ }).waitFor();
    await page.getByTestId('served-log').filter({ hasText: /\(in the app\) loupe serve-model/ }).waitFor();
    await screenshot(page, 'served-inapp-ready');

    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('file-input').setInputFiles(GLASS);
    await page.getByTestId('media-summary').waitFor();
    await page.getByTestId('question').fill(GLASS_QUESTION);
    await page.getByTestId('engine-served').click();
    const option = page.getByTestId('served-engine').locator('option', { hasText: /loupe-tiny · loupe · this machine \(in the app\) · ready/ });
    await page.getByTestId('served-engine').selectOption(await option.getAttribute('value') ?? '');
    await page.getByTestId('max-tokens').fill('32');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /^done$/ }).waitFor({ timeout: 180_000 });
    await page.getByTestId('trajectory-summary').waitFor();
    await screenshot(page, 'served-inapp-demo');

    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('served-stop-loupe-tiny').click();
    await page.getByTestId('status-served').filter({ hasText: /loupe-tiny \(in the app\) stopped/ }).waitFor({ timeout: 30_000 });
    expect(errors).toEqual([]);
  }, 400_000);
});

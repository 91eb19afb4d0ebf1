/**
 * The cluster doors in Chromium against browser mode (real core, real ONNX, real Slurm and sshd):
 * 1. Models → Serve a model: hostile form input gets a clear error; `loupe serve-model` for the committed loupe-tiny
 *    starts on this machine, the status bar says ready, a Demo trajectory runs through it (engine "Served"), Stop →
 *    the status bar says stopped.
 * 2. Runs → New evaluation → Run on cluster: 8 loupe-synth samples as a 2-task array on the real local Slurm through
 *    a saved slurm-ssh connector, ending as one merged run on the Runs page.
 * Screenshots: test-results/cluster-doors-*.png.
 */
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../../main/core';
import { SERVICES, loadServicesEnv, type ServicesEnv } from '../integration/connectors/servicesEnv';
import { saveCiConnector } from '../integration/cluster/helpers';
import { makeSynth } from '../integration/sweeps/helpers';
import { describeIf } from '../support/requirements';
import { GLASS, GLASS_QUESTION } from './demo.fixture';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const env = loadServicesEnv();
const TINY = path.join(ROOT, 'models', 'loupe-tiny', 'model');

describe('Models → Serve a model: loupe serve-model for loupe-tiny drives the Demo', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    app = await startApp(tempWorkspace('loupe-serve-e2e-'));
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('hostile input → a clear form error; serve → ready in the status bar; a Demo run through it; stop → stopped', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('serve-panel').waitFor();
    await page.getByTestId('serve-bounds').filter({ hasText: /MIN_PIXELS \d+ · MAX_PIXELS \d+/ }).waitFor();

    // Hostile: a relative folder, a port that is no number, a port below 1024, bounds that differ from the dialect's.
    await page.getByTestId('serve-folder').fill('models/loupe-tiny; rm -rf ~');
    await page.getByTestId('serve-start').click();
    await page.getByTestId('serve-error').filter({ hasText: /modelDir: must be an absolute path/ }).waitFor();
    await page.getByTestId('serve-folder').fill(TINY);
    await page.getByTestId('serve-port').fill('80; reboot');
    await page.getByTestId('serve-start').click();
    await page.getByTestId('serve-error').filter({ hasText: /port: "80; reboot" is not a whole number/ }).waitFor();
    await page.getByTestId('serve-port').fill('80');
    await page.getByTestId('serve-start').click();
    await page.getByTestId('serve-error').filter({ hasText: /port/ }).waitFor();
    await page.getByTestId('serve-port').fill('');
    await page.getByTestId('serve-min').fill('1');
    await page.getByTestId('serve-backend').selectOption('vllm');
    await page.getByTestId('serve-start').click();
    await page.getByTestId('serve-error').filter({ hasText: /differ from the dialect's eval bounds/ }).waitFor();
    await screenshot(page, 'cluster-doors-serve-error');
    expect(await page.getByTestId('served-table').count()).toBe(0); // nothing started

    await page.getByTestId('serve-backend').selectOption('loupe');
    await page.getByTestId('serve-min').fill('');
    await page.getByTestId('serve-name').fill('loupe-tiny');
    await page.getByTestId('serve-dtype').fill('q8');
    await page.getByTestId('serve-start').click();
    await page.getByTestId('status-served').filter({ hasText: /loupe-tiny \(local\) ready/ }).waitFor({ timeout: 120_000 });
    await page.getByTestId('served-log').filter({ hasText: /serve-model/ }).waitFor();
    await screenshot(page, 'cluster-doors-serve-ready');

    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('file-input').setInputFiles(GLASS);
    await page.getByTestId('media-summary').waitFor();
    await page.getByTestId('question').fill(GLASS_QUESTION);
    await page.getByTestId('engine-served').click();
    const option = page.getByTestId('served-engine').locator('option', { hasText: /loupe-tiny · loupe · this machine · ready/ });
    await page.getByTestId('served-engine').selectOption(await option.getAttribute('value') ?? '');
    await page.getByTestId('max-tokens').fill('32');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /^done$/ }).waitFor({ timeout: 180_000 });
    await page.getByTestId('trajectory-summary').waitFor();
    await screenshot(page, 'cluster-doors-demo-served');

    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('served-stop-loupe-tiny').click();
    await page.getByTestId('status-served').filter({ hasText: /loupe-tiny \(local\) stopped/ }).waitFor({ timeout: 30_000 });
    await screenshot(page, 'cluster-doors-serve-stopped');
    expect(errors).toEqual([]);
  }, 400_000);
});

describeIf(!!env, SERVICES, 'Runs → Run on cluster (real slurm + sshd)', () => {
  const e = env as ServicesEnv;
  let app: AppProcess;
  let browser: Browser;
  let base: string;
  let data: string;
  let replay: string;
  const savedConfig = process.env.LOUPE_CONFIG_DIR;
  beforeAll(async () => {
    base = path.join(e.jobsDir, `doors-e2e-${process.pid}-${Date.now()}`);
    mkdirSync(base, { recursive: true });
    ({ data, replay } = await makeSynth(base, 8));
    // The connector as the Training page saves it (its key in the workspace's secret store, keyed in this config).
    const ws = path.join(base, 'ws');
    process.env.LOUPE_CONFIG_DIR = path.join(base, 'config');
    const core = await createCore({ workspace: ws, transport: 'browser', configDir: process.env.LOUPE_CONFIG_DIR });
    await saveCiConnector(core, e, 'ci', `${base}/logs`);
    await core.dispose();
    app = await startApp(ws);
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (savedConfig === undefined) delete process.env.LOUPE_CONFIG_DIR;
    else process.env.LOUPE_CONFIG_DIR = savedConfig;
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('8 samples as a 2-task array from the Runs page: one merged run, live', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('new-eval-toggle').click();
    await page.getByTestId('eval-model').selectOption('__other__');
    await page.getByTestId('eval-model-path').fill(`replay:${replay}`);
    await page.getByTestId('eval-data').fill(data);
    await page.getByTestId('eval-on-cluster').check();
    await page.getByTestId('eval-cluster-connector').locator('option', { hasText: 'ci' }).waitFor({ state: 'attached' });
    // Hostile: no run name, then shards that are no number.
    await page.getByTestId('eval-cluster-connector').selectOption('ci');
    await page.getByTestId('eval-start').click();
    await page.getByTestId('eval-form-error').filter({ hasText: /Name the run/ }).waitFor();
    await page.getByTestId('eval-cluster-name').fill('synth8');
    await page.getByTestId('eval-cluster-shards').fill('2; scancel -u root');
    await page.getByTestId('eval-start').click();
    await page.getByTestId('eval-form-error').filter({ hasText: /Shards: .* is not a whole number/ }).waitFor();
    await page.getByTestId('eval-cluster-shards').fill('2');
    await page.getByTestId('eval-cluster-loupe').fill(`${process.execPath} ${path.join(ROOT, 'bin', 'loupe.mjs')}`);
    await page.getByTestId('eval-cluster-workspace').fill(`${base}/cluster-ws`);
    await page.getByTestId('eval-cluster-cwd').fill(ROOT);
    await screenshot(page, 'cluster-doors-cluster-form');
    await page.getByTestId('eval-start').click();
    await page.getByTestId('sweep-progress').filter({ hasText: /synth8/ }).filter({ hasText: /cluster · 8\/8 · done/ }).waitFor({ timeout: 300_000 });
    await page.reload();
    await page.getByTestId('runs-table').filter({ hasText: 'synth8' }).waitFor({ timeout: 30_000 });
    await screenshot(page, 'cluster-doors-cluster-run');
    expect(errors).toEqual([]);
  }, 400_000);
});

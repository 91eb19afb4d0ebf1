/**
 * Runs → New evaluation → Run on cluster through a RAY connector, in Chromium against browser mode (real core). No
 * live Ray head can run here: the head answers with the bodies recorded from a real Ray 2.58 head and runs each
 * submitted entrypoint for real with bash (tests/integration/connectors/rayShardHead.ts). The connector select lists
 * the Ray connector beside Slurm ones; a Ray sweep without a workspace on the cluster gets a form error; 8
 * loupe-synth samples as 2 Ray jobs end as one merged run on the Runs page.
 * Screenshots: test-results/cluster-ray-*.png.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../../main/core';
import { startRayShardHead, type RayShardHead } from '../integration/connectors/rayShardHead';
import { makeSynth } from '../integration/sweeps/helpers';
import { launchBrowser, newPage, ROOT, screenshot, startApp, type AppProcess } from './harness';

describe('Runs → Run on cluster through a Ray connector', () => {
  let app: AppProcess;
  let browser: Browser;
  let head: RayShardHead;
  let base: string;
  let data: string;
  let replay: string;
  const savedConfig = process.env.LOUPE_CONFIG_DIR;
  beforeAll(async () => {
    base = mkdtempSync(path.join(os.tmpdir(), 'loupe-ray-e2e-'));
    ({ data, replay } = await makeSynth(base, 8));
    head = await startRayShardHead({ cwd: ROOT, hold: false });
    const ws = path.join(base, 'ws');
    mkdirSync(ws, { recursive: true });
    process.env.LOUPE_CONFIG_DIR = path.join(base, 'config');
    const core = await createCore({ workspace: ws, transport: 'browser', configDir: process.env.LOUPE_CONFIG_DIR });
    const saved = await core.dispatch('training:connectorSave', { config: { kind: 'ray', name: 'ray-head', baseUrl: head.url, followMode: 'poll' } });
    expect(saved.ok, JSON.stringify(saved)).toBe(true);
    await core.dispose();
    app = await startApp(ws);
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await head?.close();
    if (savedConfig === undefined) delete process.env.LOUPE_CONFIG_DIR;
    else process.env.LOUPE_CONFIG_DIR = savedConfig;
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('8 samples as 2 Ray jobs from the Runs page: one merged run', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('new-eval-toggle').click();
    await page.getByTestId('eval-model').selectOption('__other__');
    await page.getByTestId('eval-model-path').fill(`replay:${replay}`);
    await page.getByTestId('eval-data').fill(data);
    await page.getByTestId('eval-on-cluster').check();
    await page.getByTestId('eval-cluster-connector').locator('option', { hasText: 'Ray: ray-head' }).waitFor({ state: 'attached' });
    await page.getByTestId('eval-cluster-connector').selectOption('ray-head');
    await page.getByTestId('eval-cluster-name').fill('ray8');
    // A Ray connector has no folder of its own: the form says what to fill in.
    await page.getByTestId('eval-start').click();
    await page.getByTestId('eval-form-error').filter({ hasText: /Workspace on the cluster: a Ray connector has no folder of its own/ }).waitFor();
    await screenshot(page, 'cluster-ray-form-error');
    expect(head.received.filter((r) => r.method === 'POST')).toHaveLength(0);
    await page.getByTestId('eval-cluster-loupe').fill(`${process.execPath} ${path.join(ROOT, 'bin', 'loupe.mjs')}`);
    await page.getByTestId('eval-cluster-workspace').fill(path.join(base, 'cluster-ws'));
    await screenshot(page, 'cluster-ray-form');
    await page.getByTestId('eval-start').click();
    await page.getByTestId('sweep-progress').filter({ hasText: /ray8/ }).filter({ hasText: /cluster · 8\/8 · done/ }).waitFor({ timeout: 240_000 });
    expect(head.received.filter((r) => r.method === 'POST' && r.path === '/api/jobs/')).toHaveLength(2);
    await page.reload();
    await page.getByTestId('runs-table').filter({ hasText: 'ray8' }).waitFor({ timeout: 30_000 });
    await screenshot(page, 'cluster-ray-run');
    expect(errors).toEqual([]);
  }, 400_000);
});

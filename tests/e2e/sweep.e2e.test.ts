import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const TINY = path.join(ROOT, 'models', 'tiny-random-qwen25vl');

describe('an evaluation sweep started from the UI (tiny random model, real ONNX on CPU)', () => {
  let app: AppProcess;
  let browser: Browser;
  let data: string;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-sweep-');
    data = path.join(ws, 'synth-bench');
    execFileSync(process.execPath, [path.join(ROOT, 'bin/loupe.mjs'), 'synth', '--seed', '7', '--n', '4', '--out', data], { cwd: ROOT, stdio: 'pipe' });
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('runs vcot and notool side by side, streams progress, and the runs can be opened and compared', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('new-eval-toggle').click();
    await page.getByTestId('eval-model').selectOption('__other__');
    await page.getByTestId('eval-model-path').fill(TINY);
    await page.getByTestId('eval-bench').selectOption('loupe-synth');
    await page.getByTestId('eval-data').fill(data);
    await page.getByTestId('eval-limit').fill('3');
    await page.getByTestId('eval-max-tokens').fill('8');
    await page.getByTestId('eval-notool').check();
    await page.getByTestId('eval-start').click();
    // One progress line per run, each appearing with its run's first progress event (the two start together, but
    // their first events need not arrive in the same frame).
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=sweep-progress]').length >= 2, undefined, { timeout: 30_000 });
    expect(await page.getByTestId('sweep-progress').count()).toBe(2);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=sweep-progress]')].every((li) => li.getAttribute('data-state') === 'done'), undefined, { timeout: 180_000 });
    await expect(page.getByTestId('sweep-progress').first().textContent()).resolves.toContain('3/3');
    await screenshot(page, 'sweep-done');

    // The runs are real run folders with three records each.
    const runs = fs.readdirSync(path.join(app.workspace, 'runs'));
    expect(runs).toHaveLength(2);
    for (const r of runs) {
      const lines = fs.readFileSync(path.join(app.workspace, 'runs', r, 'samples.jsonl'), 'utf8').trim().split('\n');
      expect(lines).toHaveLength(3);
    }

    // The runs list refreshes; open a failed sample (random weights: all fail) and see its turns.
    await page.getByRole('button', { name: 'Reload' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=runs-table] tbody tr').length === 2);
    await page.getByTestId('sample-row').first().waitFor();
    await page.getByTestId('sample-row').first().click();
    await page.getByTestId('sample-trajectory').waitFor();

    // Compare the vcot run with the notool run.
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('sample-row').first().waitFor();
    const boxes = page.locator('[data-testid=runs-table] input[type=checkbox]');
    for (let i = 0; i < 2; i++) if (!(await boxes.nth(i).isChecked())) await boxes.nth(i).check();
    await page.getByTestId('compare-runs').click();
    await page.getByTestId('compare-summary').waitFor();
    await expect(page.getByTestId('compare-page').textContent()).resolves.toContain('Shared samples3');
    expect(errors).toEqual([]);
  });

  it('reports a bad data folder as an error on the sweep, and the page keeps working', async () => {
    const { page } = await newPage(browser, { width: 1400, height: 900 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('new-eval-toggle').click();
    await page.getByTestId('eval-model').selectOption('__other__');
    await page.getByTestId('eval-model-path').fill(TINY);
    await page.getByTestId('eval-data').fill(path.join(app.workspace, 'no-such-folder'));
    await page.getByTestId('eval-start').click();
    await page.waitForFunction(() => document.querySelector('[data-testid=eval-error]') || document.querySelector('[data-testid=sweep-progress][data-state=error]'), undefined, { timeout: 60_000 });
    const text = (await page.getByTestId('new-eval').textContent()) ?? '';
    expect(text).toMatch(/no-such-folder/);
    await page.getByTestId('nav-settings').click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
  });
});

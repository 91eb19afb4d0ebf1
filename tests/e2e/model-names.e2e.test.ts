/**
 * The names the app shows work everywhere: the New-evaluation form picks `loupe-tiny` from the registry, the CLI
 * takes the same name (or the folder) for `eval` and `run`, runs record the registered name and content hash
 * (not "model"), and validating the card folder points at the model folder inside it. Real loupe-tiny on CPU.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const run = promisify(execFile);
const EXAMPLES = path.join(ROOT, 'models', 'loupe-tiny', 'examples');
/** A two-scene loupe-synth benchmark (seed 9, the examples' held-out seed), written once for the file. */
const BENCH = path.join(tempWorkspace('loupe-names-bench-'), 'synth');
const LOUPE = path.join(ROOT, 'bin', 'loupe.mjs');

function manifests(ws: string): Array<{ name: string; model: { id: string; path?: string; hash?: string } }> {
  const dir = path.join(ws, 'runs');
  return fs.readdirSync(dir).map((r) => JSON.parse(fs.readFileSync(path.join(dir, r, 'manifest.json'), 'utf8')) as { name: string; model: { id: string; path?: string; hash?: string } });
}

describe('model names work everywhere (UI, CLI, run records)', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    await run(process.execPath, [path.join(ROOT, 'bin', 'loupe.mjs'), 'synth', '--seed', '9', '--n', '2', '--kinds', 'ring-digits,tag-letter', '--out', BENCH], { cwd: ROOT });
    app = await startApp(tempWorkspace('loupe-names-'));
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('the New-evaluation form offers loupe-tiny by name and the run records its name and hash', async () => {
    const { page, errors } = await newPage(browser, { width: 1280, height: 900 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('new-eval-toggle').click();
    await page.getByTestId('eval-model').locator('option', { hasText: 'loupe-tiny' }).first().waitFor({ state: 'attached' });
    await expect(page.getByTestId('eval-model').inputValue()).resolves.toBe('loupe-tiny');
    await page.getByTestId('eval-data').fill(BENCH);
    await page.getByTestId('eval-limit').fill('1');
    await screenshot(page, 'names-new-eval');
    await page.getByTestId('eval-start').click();
    await page.waitForFunction(() => document.querySelector('[data-testid=sweep-progress]')?.getAttribute('data-state') === 'done', undefined, { timeout: 120_000 });
    await expect(page.getByTestId('sweep-progress').first().textContent()).resolves.toMatch(/^loupe-tiny-loupe-synth/);
    const [m] = manifests(app.workspace);
    expect(m?.model.id).toBe('loupe-tiny');
    expect(m?.model.path).toBe(path.join(ROOT, 'models', 'loupe-tiny', 'model'));
    expect(m?.model.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(errors).toEqual([]);
  });

  it('validating the card folder models/loupe-tiny suggests models/loupe-tiny/model', async () => {
    const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('model-folder').fill(path.join('models', 'loupe-tiny'));
    await page.getByTestId('model-validate').click();
    await page.getByTestId('model-suggestion').waitFor();
    await expect(page.getByTestId('model-suggestion').textContent()).resolves.toContain(path.join('models', 'loupe-tiny', 'model'));
    await screenshot(page, 'names-validate-suggestion');
    await page.getByTestId('model-use-suggestion').click();
    await page.getByTestId('model-report').filter({ hasText: 'Usable model folder' }).waitFor();
    await expect(page.getByTestId('model-folder').inputValue()).resolves.toBe(path.join(ROOT, 'models', 'loupe-tiny', 'model'));
    expect(errors).toEqual([]);
  });

  it('loupe eval and loupe run take the registered name or the folder, and record the name, not "model"', async () => {
    const ws = tempWorkspace('loupe-names-cli-');
    const common = ['eval', '--bench', 'loupe-synth', '--data', BENCH, '--limit', '1', '--json', '--workspace', ws, '--no-progress'];
    const byName = await run(process.execPath, [LOUPE, ...common, '--model', 'loupe-tiny', '--run', 'by-name'], { cwd: ROOT });
    const byFolder = await run(process.execPath, [LOUPE, ...common, '--model', path.join('models', 'loupe-tiny', 'model'), '--run', 'by-folder'], { cwd: ROOT });
    for (const out of [byName, byFolder]) {
      const last = JSON.parse(out.stdout.trim().split('\n').pop() ?? '{}') as { model?: string };
      expect(last.model).toBe('loupe-tiny');
    }
    const hashes = manifests(ws).map((m) => m.model.hash);
    expect(hashes).toHaveLength(2);
    expect(hashes[0]).toMatch(/^sha256:/);
    expect(hashes[1]).toBe(hashes[0]);
    // A name nobody registered: the error lists the names that work.
    const bad = await run(process.execPath, [LOUPE, ...common, '--model', 'loupe-huge'], { cwd: ROOT }).catch((e: { stderr: string; code: number }) => e);
    expect('code' in bad ? bad.code : 0).not.toBe(0);
    expect(bad.stderr).toMatch(/no model is named "loupe-huge".*known models: .*loupe-tiny/s);
    // `loupe run` with the name.
    const image = path.join(EXAMPLES, 'images', 'synth-9-00014.jpg');
    const one = await run(process.execPath, [LOUPE, 'run', '--model', 'loupe-tiny', '--image', image, '--workspace', ws, 'What number is written inside the red ring?'], { cwd: ROOT });
    expect(one.stdout).toMatch(/^model loupe-tiny \(local/m);
    expect(one.stdout).toContain('\\boxed{352}');
  }, 400_000);
});

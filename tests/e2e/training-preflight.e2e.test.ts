/**
 * The loupe-tiny fine-tune's pre-flight check on the Training page, in Chromium: with a Python that lacks the trainer's
 * modules (LOUPE_PYTHON = a real /usr/bin/python3 started with -S, so its site packages — torch, numpy, Pillow — are not
 * on its path) the template list and the notice say "torch is missing", not "not in this build"; after the Python is
 * given its packages (the same launcher without -S), "Check again" looks again without a restart and the template
 * becomes runnable.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { openTrainingPage, screenshot, type AppProcess } from './harness';

const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-preflight-'));
const launcher = path.join(dir, 'python3');
const REAL = process.env['LOUPE_PYTHON'] ?? '/usr/bin/python3';
function setLauncher(withPackages: boolean): void {
  writeFileSync(launcher, `#!/bin/sh\nexec ${REAL}${withPackages ? '' : ' -S'} "$@"\n`);
  chmodSync(launcher, 0o755);
}

describe('Training page · loupe-tiny pre-flight', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  const saved = process.env['LOUPE_PYTHON'];
  beforeAll(async () => {
    setLauncher(false);
    process.env['LOUPE_PYTHON'] = launcher; // the app inherits it: the check and the job use this Python
    ({ app, browser, page, errors } = await openTrainingPage('loupe-preflight-', { width: 1280, height: 900 }));
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env['LOUPE_PYTHON'];
    else process.env['LOUPE_PYTHON'] = saved;
    await browser?.close();
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says which module is missing, and Check again finds it once installed', async () => {
    const select = page.getByTestId('template-select');
    await select.locator('option[value="loupe-tiny-finetune"]').waitFor({ state: 'attached' });
    await select.selectOption('loupe-tiny-finetune');
    const option = select.locator('option[value="loupe-tiny-finetune"]');
    await expect(option.textContent()).resolves.toMatch(/ — torch, numpy, PIL are missing$/);
    expect(await option.textContent()).not.toMatch(/not in this build/);
    const notice = page.getByTestId('template-notice');
    await expect(notice.textContent()).resolves.toMatch(/^Torch, numpy, PIL are missing: the fine-tune needs Python 3 with torch, numpy, PIL \(.*python3: no torch, numpy, PIL\)/);
    await expect(notice.textContent()).resolves.toContain('press Check again');
    await screenshot(page, 'training-preflight-missing');

    // installed meanwhile: the cached answer must not stand until a restart
    setLauncher(true);
    await page.getByTestId('template-recheck').click();
    await page.getByTestId('template-notice').filter({ hasText: /^Runs here: synth → prepare → train on \S+python3 \(torch [\d.]+/ }).waitFor({ timeout: 200_000 });
    expect(await option.textContent()).toBe('loupe-tiny · local fine-tune');
    expect(await page.getByTestId('template-recheck').count()).toBe(0);
    await screenshot(page, 'training-preflight-found');
    expect(errors).toEqual([]);
  }, 360_000);
});

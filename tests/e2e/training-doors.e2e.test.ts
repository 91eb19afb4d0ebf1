/**
 * The Training page and `npx loupe train` are two doors onto one job store: a job the CLI submits appears on the
 * open page (no reload) and its log streams there; a job the page submits is in `loupe train list`. Real app in
 * browser mode, real Chromium, real `loupe` child processes, the real local connector.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { openTrainingPage, runLoupe as loupe, screenshot, waitJobViewState, type AppProcess } from './harness';

describe('Training page and `loupe train` share jobs', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    ({ app, browser, page, errors } = await openTrainingPage('loupe-training-doors-', { width: 1440, height: 1000 }));
    await page.getByTestId('template-select').locator('option[value="custom-script"]').waitFor({ state: 'attached' });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('a job submitted with `loupe train submit` appears on the open page with its live log', async () => {
    const script = 'for i in 1 2 3 4 5 6; do echo "cli-line-$i"; sleep 1; done';
    const r = loupe(['train', 'submit', 'custom-script', '--workspace', app.workspace, '--name', 'from-the-shell', '--set', `script=${JSON.stringify(script)}`]);
    expect(r.code).toBe(0);
    const id = r.out.trim();
    expect(id).toMatch(/^local-\d+-[0-9a-f]{8}$/);
    const row = page.locator(`[data-testid=job-row][data-key="local/${id}"]`);
    await row.waitFor({ timeout: 30_000 });
    await expect(row.textContent()).resolves.toContain('from-the-shell');
    await row.click();
    await page.locator('[data-testid=job-log]').filter({ hasText: 'cli-line-1' }).waitFor({ timeout: 30_000 });
    await waitJobViewState(page, 'succeeded');
    await expect(page.getByTestId('job-log').textContent()).resolves.toContain('cli-line-6');
    await screenshot(page, 'training-cli-job');
  });

  it('a job submitted from the page is in `loupe train list`', async () => {
    await page.getByTestId('template-select').selectOption('custom-script');
    await page.locator('[data-field="script"] textarea').fill('echo from-the-page');
    await page.getByTestId('job-name').fill('from-the-page');
    await page.getByTestId('script-preview').filter({ hasText: 'echo from-the-page' }).waitFor();
    await page.getByTestId('submit-job').click();
    await page.locator('[data-testid=job-view] .tr-jobview-title').filter({ hasText: 'from-the-page' }).waitFor();
    const key = (await page.getByTestId('job-view').getAttribute('data-key')) ?? '';
    expect(key).toMatch(/^local\//);
    const list = loupe(['train', 'list', '--workspace', app.workspace]);
    expect(list.code).toBe(0);
    const rows = list.out.trim().split('\n').map((l) => l.split('\t'));
    expect(rows.find((c) => c[0] === key)?.[3]).toBe('from-the-page');
    expect(rows.some((c) => c[3] === 'from-the-shell' && c[1] === 'succeeded')).toBe(true);
    expect(errors).toEqual([]);
  });
});

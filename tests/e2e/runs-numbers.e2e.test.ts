/**
 * Numbers mean one thing on the Runs page: statistics per run (two ticked runs are two sets of numbers; pooling
 * is an explicit choice), one interval method (95 % Wilson) for the same samples in every row and in
 * `loupe report`, "—" for a Demo question with no ground truth, and a Demo run is not where the page (and
 * Annotate's failure queue) starts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { RunStore } from '../../app/workspace';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

/** A graded run of `n` vstar samples of one category, the first `correct` of them right. */
async function writeRun(ws: string, id: string, prompt: 'vcot' | 'notool', n: number, correct: number): Promise<void> {
  const store = new RunStore(path.join(ws, 'runs'));
  const h = await store.createRun({ id, name: id, kind: 'eval', model: { id: 'loupe-tiny' }, engine: 'local', dialect: 'pixel-reasoner', prompt, bench: { id: 'vstar' } });
  for (let i = 0; i < n; i++) {
    const ok = i < correct;
    await h.appendSample({ qid: `q${i}`, bench: 'vstar', category: 'direct_attributes', question: `What colour is thing ${i}?`, answer: 'A', prediction: ok ? 'A' : 'B', score: ok ? 1 : 0, correct: ok, stop_reason: 'answer', calls: prompt === 'vcot' ? 1 : 0, tool_errors: 0 });
  }
  await h.close();
}

async function writeDemoRun(ws: string): Promise<void> {
  const store = new RunStore(path.join(ws, 'runs'));
  const h = await store.createRun({ id: 'demo-question', name: 'demo What is on the sign?', kind: 'demo', model: { id: 'loupe-tiny' }, engine: 'local', dialect: 'pixel-reasoner', prompt: 'vcot' });
  await h.appendSample({ qid: 'b0', bench: 'demo', question: 'What is on the sign?', answer: null, prediction: 'STOP', score: 0, correct: false, stop_reason: 'answer', calls: 1, tool_errors: 0, source: 'demo' });
  await h.close();
}

describe('Runs: numbers mean one thing', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-numbers-');
    await writeRun(ws, 'vcot-76', 'vcot', 76, 50);
    await writeRun(ws, 'notool-76', 'notool', 76, 30);
    await writeDemoRun(ws); // the newest run
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('shows stats per run, pools only on request, one named interval everywhere, and "—" without ground truth', async () => {
    const { page, errors } = await newPage(browser, { width: 1920, height: 1080 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('overall-accuracy').waitFor();
    // The page starts on a graded run, not on the newest Demo question.
    expect(await page.getByTestId('stats-panel').count()).toBe(1);
    await expect(page.getByTestId('overall-accuracy').textContent()).resolves.toMatch(/%.*n = 76/);
    // The Demo question's accuracy is "—", not 0.0 %.
    const demoRow = page.locator('[data-testid=runs-table] tbody tr', { hasText: 'demo What is on the sign?' });
    await expect(demoRow.locator('td.num').last().textContent()).resolves.toBe('—');

    // One method, named: the same 76 samples show the same interval overall, for the bench and for the category.
    await expect(page.getByTestId('stats-panel').textContent()).resolves.toContain('95 % Wilson score interval');
    const overall = /\[[\d.]+, [\d.]+\]/.exec((await page.getByTestId('overall-accuracy').textContent()) ?? '')?.[0];
    expect(overall).toBeTruthy();
    const rowCis = await page.locator('[data-testid=stats-panel] tbody tr td:nth-child(4)').allTextContents();
    expect(rowCis).toEqual([overall, overall]);
    // …and the same one in `loupe report` (the page starts on the newest graded run, notool-76).
    const report = JSON.parse(execFileSync(process.execPath, [path.join(ROOT, 'bin', 'loupe.mjs'), 'report', 'notool-76', '--json', '--workspace', app.workspace], { cwd: ROOT, encoding: 'utf8' }).trim()) as { ci95: [number, number]; interval: string };
    expect(report.interval).toBe('wilson-95');
    expect(`[${(100 * report.ci95[0]).toFixed(1)}, ${(100 * report.ci95[1]).toFixed(1)}]`).toBe(overall);

    // Two ticked runs: two sets of numbers, not one pooled accuracy.
    const boxes = page.locator('[data-testid=runs-table] input[type=checkbox]');
    for (const id of ['vcot-76', 'notool-76']) {
      const box = page.getByLabel(`select ${id}`);
      if (!(await box.isChecked())) await box.check();
    }
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=stats-panel]').length === 2);
    const accs = await page.getByTestId('overall-accuracy').allTextContents();
    expect(accs.map((t) => /^[\d.]+ %/.exec(t)?.[0]).sort()).toEqual(['39.5 %', '65.8 %']);
    for (const t of accs) expect(t).toContain('n = 76');
    await screenshot(page, 'numbers-per-run-1920');
    await page.setViewportSize({ width: 1024, height: 768 });
    await screenshot(page, 'numbers-per-run-1024');
    // Pooling is an explicit, labelled choice.
    await page.getByTestId('stats-pool').check();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=stats-panel]').length === 1);
    await expect(page.getByTestId('stats-run-title').textContent()).resolves.toBe('2 runs pooled');
    await expect(page.getByTestId('overall-accuracy').textContent()).resolves.toMatch(/52\.6 %.*n = 152/);
    await page.getByTestId('stats-pool').uncheck();

    // The Demo question alone: no accuracy, said plainly.
    for (const id of ['vcot-76', 'notool-76']) await page.getByLabel(`select ${id}`).uncheck();
    await page.getByLabel('select demo-question').check();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=stats-panel]').length === 1 && /no ground truth/.test(document.querySelector('[data-testid=overall-accuracy]')?.textContent ?? ''));
    await expect(page.getByTestId('overall-accuracy').textContent()).resolves.toMatch(/^— .*no ground truth/);
    expect(await boxes.count()).toBe(3);
    expect(errors).toEqual([]);
  });
});

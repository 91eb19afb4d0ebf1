/**
 * Runs stay tidy, in Chromium against `loupe serve` (issue 28's Runs, Numbers, Charts and import bullets):
 * - a Demo question abandoned while paused waits in the Demo scratch space, not among the runs, their statistics
 *   or Annotate's queue; "Save as run" makes it a run whose accuracy is "—";
 * - the Import dialog reads the recorded DeepEyes V* outputs (tests/fixtures/importers/deepeyes); the same files
 *   imported as pixel-reasoner give one line naming `deepeyes`; two imports of one kind get distinct names;
 * - Delete asks first;
 * - the free-text search finds a sample by its image file name;
 * - Compare has a per-category A/B table (n, accuracies, Δ, all with the named intervals);
 * - Training charts: ticks on both axes, values on hover, several jobs overlaid.
 * Screenshots at 1024×768 and 1920×1080 go to test-results/tidy-*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { RunStore } from '../../app/workspace';
import { GLASS_QUESTION, writeRecordedRun, GLASS } from './demo.fixture';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, waitJobViewState, type AppProcess } from './harness';

const DEEPEYES = path.join(ROOT, 'tests', 'fixtures', 'importers', 'deepeyes');

/** A graded V* run over two categories: `right[c]` of the first `n[c]` samples of category c correct. */
async function writeCategoryRun(ws: string, id: string, right: Record<string, number>, n = 20): Promise<void> {
  const store = new RunStore(path.join(ws, 'runs'));
  const h = await store.createRun({ id, name: id, kind: 'eval', model: { id }, engine: 'local', dialect: 'pixel-reasoner', prompt: 'vcot', bench: { id: 'vstar' } });
  for (const category of Object.keys(right)) {
    for (let i = 0; i < n; i++) {
      const ok = i < right[category]!;
      await h.appendSample({ qid: `${category}.q${i}`, bench: 'vstar', category, question: `Question ${i} about ${category}?`, answer: 'A', prediction: ok ? 'A' : 'B', score: ok ? 1 : 0, correct: ok, stop_reason: 'answer', calls: 1, tool_errors: 0 });
    }
  }
  await h.close();
}

async function pause(page: Page): Promise<void> {
  await page.getByTestId('file-input').waitFor({ state: 'attached', timeout: 20_000 });
  await page.getByTestId('file-input').setInputFiles(GLASS);
  await page.getByTestId('media-summary').filter({ hasText: '1920×830' }).waitFor();
  await page.getByTestId('question').fill(GLASS_QUESTION);
  await page.getByTestId('engine-replay').click();
  await page.getByTestId('replay-source').locator('option', { hasText: 'recorded glass' }).first().waitFor({ state: 'attached' });
  const value = await page.getByTestId('replay-source').locator('option', { hasText: 'recorded glass' }).first().getAttribute('value');
  await page.getByTestId('replay-source').selectOption(value!);
  await page.getByTestId('step-mode').check();
  await page.getByTestId('run').click();
  await page.getByTestId('pause-panel').waitFor();
}

describe('Runs stay tidy', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-tidy-');
    await writeRecordedRun(ws);
    // A: 14/20 on direct_attributes, 10/20 on relative_position; B: 19/20 and 9/20.
    await writeCategoryRun(ws, 'base-vcot', { direct_attributes: 14, relative_position: 10 });
    await writeCategoryRun(ws, 'tuned-vcot', { direct_attributes: 19, relative_position: 9 });
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('a Demo question abandoned while paused stays in the Demo scratch space until saved; saved, its accuracy is "—"', async () => {
    const { page, errors } = await newPage(browser, { width: 1920, height: 1080 });
    await page.goto(`${app.openUrl}#/demo`);
    await pause(page);
    // Abandon it: leave for the Runs page while it is paused.
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('demo-scratch').waitFor();
    const row = page.getByTestId('demo-scratch-row');
    await expect(row.count()).resolves.toBe(1);
    await expect(row.textContent()).resolves.toContain(GLASS_QUESTION);
    const runId = (await row.getAttribute('data-run'))!;
    // Not a run: not in the table, not in the files of runs/, not in what Annotate queues.
    await expect(page.getByTestId('runs-table').textContent()).resolves.not.toContain('demo ');
    expect(fs.existsSync(path.join(app.workspace, 'runs', runId))).toBe(false);
    expect(fs.existsSync(path.join(app.workspace, 'demo', runId, 'manifest.json'))).toBe(true);
    await page.getByTestId('overall-accuracy').waitFor();
    await screenshot(page, 'tidy-demo-scratch-1920');
    await page.setViewportSize({ width: 1024, height: 768 });
    await page.getByTestId('demo-scratch').scrollIntoViewIfNeeded();
    await screenshot(page, 'tidy-demo-scratch-1024');
    await page.goto(`${app.openUrl}#/annotate`);
    await page.getByTestId('annotate-page').waitFor();
    await page.getByTestId('queue-position').filter({ hasText: /of|no samples|tick/ }).waitFor();
    await expect(page.getByTestId('annotate-page').textContent()).resolves.not.toContain(GLASS_QUESTION);

    // Save it (the paused run is stopped where it was): it becomes a run, accuracy "—", the scratch space is empty.
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId(`demo-save-${runId}`).click();
    await page.getByTestId('demo-save-name').fill('glass talk question');
    await page.getByTestId('demo-save-confirm').click();
    const saved = page.locator('[data-testid=runs-table] tbody tr', { hasText: 'glass talk question' });
    await saved.waitFor();
    await expect(saved.locator('td.num').last().textContent()).resolves.toBe('—');
    await expect(page.getByTestId('demo-scratch').count()).resolves.toBe(0);
    expect(fs.existsSync(path.join(app.workspace, 'runs', runId, 'samples.jsonl'))).toBe(true);
    expect(fs.existsSync(path.join(app.workspace, 'demo', runId))).toBe(false);
    const rec = JSON.parse(fs.readFileSync(path.join(app.workspace, 'runs', runId, 'samples.jsonl'), 'utf8').trim().split('\n')[0]!) as { question: string; trajectory: { stopReason: string } };
    expect(rec.question).toBe(GLASS_QUESTION);
    expect(rec.trajectory.stopReason).toBe('cancelled');
    expect(errors).toEqual([]);
  }, 90_000);

  it('imports in the dialog: a wrong format names the right one in one line; two imports get distinct names; delete asks first', async () => {
    const { page, errors } = await newPage(browser, { width: 1920, height: 1080 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('import-open').click();
    await page.getByTestId('import-path').fill(DEEPEYES);
    await page.getByTestId('import-from').selectOption('pixel-reasoner');
    await page.getByTestId('import-submit').click();
    const err = (await page.getByTestId('import-error').textContent())!;
    expect(err).toMatch(/looks like deepeyes output: try --from deepeyes/);
    expect(err.length).toBeLessThan(400);
    expect(err.split('\n')).toHaveLength(1);
    await screenshot(page, 'tidy-import-hint-1920');
    await page.setViewportSize({ width: 1024, height: 768 });
    await screenshot(page, 'tidy-import-hint-1024');
    await page.setViewportSize({ width: 1920, height: 1080 });

    await page.getByTestId('import-from').selectOption('deepeyes');
    await page.getByTestId('import-submit').click();
    await expect(page.getByTestId('import-result').textContent()).resolves.toMatch(/Imported “deepeyes-vstar”: read 191 record\(s\)/);
    await page.getByTestId('import-submit').click();
    await expect(page.getByTestId('import-result').textContent()).resolves.toMatch(/Imported “deepeyes-vstar \(2\)”/);
    // the result line comes back before the runs table has reloaded: wait for the new row (a missing row times out here)
    await page.locator('[data-testid=runs-table] tbody tr', { hasText: 'deepeyes-vstar (2)' }).waitFor();
    const names = await page.locator('[data-testid=runs-table] tbody tr td:nth-child(2)').allTextContents();
    expect(names.filter((n) => n.startsWith('deepeyes-vstar'))).toEqual(expect.arrayContaining(['deepeyes-vstar', 'deepeyes-vstar (2)']));

    // Delete asks; Cancel keeps the run, Delete moves it to the trash.
    const second = (await page.locator('[data-testid=runs-table] tbody tr', { hasText: 'deepeyes-vstar (2)' }).locator('td').nth(1).getAttribute('title'))!;
    await page.getByTestId(`trash-${second}`).click();
    await page.getByTestId(`trash-confirm-${second}`).getByRole('button', { name: 'Cancel' }).click();
    await page.getByTestId(`trash-${second}`).waitFor();
    await page.getByTestId(`trash-${second}`).click();
    await page.getByTestId(`trash-yes-${second}`).click();
    await page.getByTestId('trash-toggle').waitFor();
    await expect(page.getByTestId('runs-table').textContent()).resolves.not.toContain('deepeyes-vstar (2)');
    expect(fs.existsSync(path.join(app.workspace, 'runs', '.trash', second, 'samples.jsonl'))).toBe(true);
    expect(errors).toEqual([]);
  }, 90_000);

  it('the free-text search finds a sample by its image file name', async () => {
    const { page, errors } = await newPage(browser, { width: 1920, height: 1080 });
    await page.goto(`${app.openUrl}#/runs`);
    const de = page.locator('[data-testid=runs-table] tbody tr', { hasText: /^deepeyes-vstar$/ });
    await page.locator('[data-testid=runs-table] tbody tr').filter({ has: page.locator('td', { hasText: /^deepeyes-vstar$/ }) }).first().waitFor();
    void de;
    // Tick only the DeepEyes run.
    for (const box of await page.locator('[data-testid=runs-table] input[type=checkbox]').all()) if (await box.isChecked()) await box.uncheck();
    await page.locator('[data-testid=runs-table] tbody tr').filter({ has: page.locator('td', { hasText: /^deepeyes-vstar$/ }) }).locator('input[type=checkbox]').check();
    await page.getByTestId('row-count').filter({ hasText: /^191 / }).waitFor();
    await page.getByTestId('search-input').fill('sa_30411.jpg');
    await page.getByTestId('row-count').filter({ hasText: /^1 / }).waitFor();
    await expect(page.getByTestId('sample-table').textContent()).resolves.toContain("What is the color of the man's cap?");
    expect(errors).toEqual([]);
  }, 60_000);

  it('Compare shows a per-category A/B table with n, both accuracies, Δ and the named intervals', async () => {
    const { page, errors } = await newPage(browser, { width: 1920, height: 1080 });
    await page.goto(`${app.openUrl}#/runs/compare/base-vcot/tuned-vcot`);
    await page.getByTestId('compare-categories').waitFor();
    await expect(page.getByTestId('compare-names').textContent()).resolves.toBe('A = base-vcot · B = tuned-vcot');
    const rows = page.getByTestId('compare-category-row');
    await expect(rows.count()).resolves.toBe(2);
    const cells = async (i: number) => (await rows.nth(i).locator('td').allTextContents()).map((t) => t.trim());
    const da = await cells(0);
    expect(da.slice(0, 3)).toEqual(['vstar / direct_attributes', '20', '70.0 %']);
    expect(da[4]).toBe('95.0 %');
    expect(da[6]).toBe('+25.0');
    expect(da[8]).toBe('0 / 5'); // A better on none, B better on 5
    // Wilson 95 % for 14/20 is [48.1, 85.5]; for 19/20 [76.4, 99.1].
    expect(da[3]).toBe('[48.1, 85.5]');
    expect(da[5]).toBe('[76.4, 99.1]');
    const rp = await cells(1);
    expect(rp.slice(0, 3)).toEqual(['vstar / relative_position', '20', '50.0 %']);
    expect(rp[6]).toBe('−5.0');
    // Newcombe's paired interval of Δ contains Δ and 0 for the small, mixed change.
    const [lo, hi] = rp[7]!.slice(1, -1).split(', ').map(Number) as [number, number];
    expect(lo).toBeLessThan(-5);
    expect(hi).toBeGreaterThan(0);
    await expect(page.getByTestId('compare-categories').textContent()).resolves.toContain('95 % Wilson score interval');
    await screenshot(page, 'tidy-compare-categories-1920');
    await page.setViewportSize({ width: 1024, height: 768 });
    await screenshot(page, 'tidy-compare-categories-1024');
    expect(errors).toEqual([]);
  });
});

/** A job script printing `step:s - critic/score/mean:<a + b·s>` for s = 1…10 (verl console format). */
const curve = (a: number, b: number) =>
  `for s in $(seq 1 10); do awk -v s=$s 'BEGIN { printf "step:%d - critic/score/mean:np.float64(%.4f)\\n", s, ${a} + ${b}*s }'; done`;

async function submit(page: Page, name: string, script: string): Promise<string> {
  await page.getByTestId('template-select').selectOption('custom-script');
  await page.locator('[data-field="script"] textarea').fill(script);
  await page.getByTestId('job-name').fill(name);
  await page.getByTestId('script-preview').filter({ hasText: script.split('\n')[0]!.slice(0, 40) }).waitFor();
  await page.getByTestId('submit-job').click();
  await page.locator('[data-testid=job-view] .tr-jobview-title', { hasText: name }).waitFor();
  await waitJobViewState(page, 'succeeded');
  return (await page.getByTestId('job-view').getAttribute('data-key')) ?? '';
}

describe('Training charts', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    app = await startApp(tempWorkspace('loupe-charts-'));
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('have ticks on both axes, show values on hover, and overlay several jobs', async () => {
    const { page, errors } = await newPage(browser, { width: 1920, height: 1080 });
    await page.goto(`${app.openUrl}#/training`);
    await page.getByTestId('template-select').locator('option[value="custom-script"]').waitFor({ state: 'attached', timeout: 60_000 });
    const a = await submit(page, 'curve-a', curve(0.1, 0.05));
    const b = await submit(page, 'curve-b', curve(0.2, 0.03));
    await submit(page, 'curve-c', curve(0.5, -0.02));
    const chart = page.locator('[data-testid=metric-chart][data-metric="critic/score/mean"]');
    await chart.waitFor();
    await expect(chart.getAttribute('data-points')).resolves.toBe('10');
    // Raw values (no smoothing), so the hover reads the log's numbers.
    await page.getByTestId('smoothing').focus();
    await page.keyboard.press('Home');
    await page.getByTestId('baseline-select').selectOption(a);
    await page.getByTestId('baseline-select').selectOption(b);
    await page.waitForFunction(() => (globalThis as unknown as { document: { querySelector(s: string): { getAttribute(a: string): string | null } | null } }).document.querySelector('[data-testid=metric-chart][data-metric="critic/score/mean"]')?.getAttribute('data-overlays') === '2');
    await expect(chart.locator('[data-testid=baseline-line]').count()).resolves.toBe(2);
    await expect(page.getByTestId('overlay-chip').count()).resolves.toBe(2);
    // Real axes: several labelled ticks on x (steps 1…10) and y.
    const xt = (await chart.getByTestId('x-tick').allTextContents()).map(Number);
    expect(xt.length).toBeGreaterThanOrEqual(4);
    expect(xt).toContain(2);
    expect(xt).toContain(10);
    expect(await chart.getByTestId('y-tick').count()).toBeGreaterThanOrEqual(3);
    // Hover at step 5 (x = 58 + (5 − 1)/9 · 488 in the 560-wide view box): every series' value there.
    const svg = (await chart.getByTestId('chart-svg').boundingBox())!;
    await page.mouse.move(svg.x + ((58 + (4 / 9) * 488) / 560) * svg.width, svg.y + svg.height / 2);
    const tip = chart.getByTestId('chart-hover');
    await tip.waitFor();
    const text = (await tip.textContent())!;
    expect(text).toContain('step 5');
    expect(text).toContain('0.4'); // curve-c: 0.5 − 0.02·5
    expect(text).toContain('0.35'); // curve-a: 0.1 + 0.05·5
    expect(text).toContain('0.35'); // curve-b: 0.2 + 0.03·5
    expect(text).toMatch(/this job\s*0\.4/);
    await screenshot(page, 'tidy-charts-1920');
    await page.setViewportSize({ width: 1024, height: 768 });
    await chart.scrollIntoViewIfNeeded();
    const svg2 = (await chart.getByTestId('chart-svg').boundingBox())!;
    await page.mouse.move(svg2.x + svg2.width * 0.7, svg2.y + svg2.height / 2);
    await tip.waitFor();
    await screenshot(page, 'tidy-charts-1024');
    expect(errors).toEqual([]);
  }, 180_000);
});

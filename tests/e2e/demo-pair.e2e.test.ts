/**
 * The Demo's side by side in Chromium against `loupe serve`, on the real loupe-tiny on the CPU: vcot vs notool on one
 * example at once (both columns stream text before either ends), step mode pausing each column on its own (A goes on
 * while B stays paused), the pair's two-column HTML export, and the saved pair opened in Compare.
 * Long tasks in the page while both stream go to test-results/demo-pair-longtasks.json (measured, not asserted: the
 * issue's goal is none over 100 ms); screenshots to test-results/demo-pair-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { ModelRegistry } from '../../app/engines/modelRegistry';
import { launchBrowser, newPage, RESULTS, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const ROOT = path.resolve(import.meta.dirname, '../..');
const EXAMPLE = 'synth-9-00014';

/** Long tasks (> 50 ms) from page load on; `__pairSeen` records the first moment both columns show text while both run. */
async function observe(page: Page): Promise<void> {
  await page.addInitScript(`
    window.__longTasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push(Math.round(e.duration)); }).observe({ type: 'longtask', buffered: true });
  `);
}

/** Samples the columns every 25 ms (in the page, so no round trip misses a short overlap). */
async function watchBothStreaming(page: Page): Promise<void> {
  await page.evaluate(`
    window.__pairSeen = null;
    window.__pairTimer = setInterval(() => {
      const st = (s) => document.querySelector('[data-testid="pair-status-' + s + '"]')?.textContent ?? '';
      const hasText = (s) => [...document.querySelectorAll('[data-testid^="pair-cell-' + s + '-"] .pair-text')].some((e) => (e.textContent ?? '').trim().length > 0);
      const live = (s) => st(s) === 'running' || st(s) === 'paused' || st(s) === 'starting';
      if (!window.__pairSeen && live('A') && live('B') && hasText('A') && hasText('B')) window.__pairSeen = { at: Date.now(), a: st('A'), b: st('B') };
    }, 25);
  `);
}

async function openExample(page: Page, app: AppProcess): Promise<void> {
  await page.goto(`${app.openUrl}#/demo`);
  await page.getByTestId(`example-${EXAMPLE}`).click({ timeout: 30_000 });
  await page.getByTestId('media-summary').waitFor();
  await expect(page.getByTestId('local-model').inputValue()).resolves.toBe('loupe-tiny');
  await page.getByTestId('pair-mode').check();
  await page.getByTestId('pair-setup').waitFor();
}

const longTasks: Record<string, unknown> = {};

/**
 * The renderer main thread's tasks in a Chromium trace: the longest by wall time and by the thread's own CPU time.
 * On a loaded machine a long task (wall) can be the thread waiting for a core; its CPU time says what the page did.
 */
function mainThreadTasks(traceFile: string): { tasks: number; maxWallMs: number; maxCpuMs: number; totalCpuMs: number; longByWall: Array<[number, number]> } {
  type Ev = { ph?: string; name?: string; pid: number; tid: number; dur?: number; tdur?: number; args?: { name?: string } };
  const raw = JSON.parse(fs.readFileSync(traceFile, 'utf8')) as { traceEvents: Ev[] } | Ev[];
  const ev = Array.isArray(raw) ? raw : raw.traceEvents;
  const main = new Set(ev.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const tasks = ev.filter((e) => e.ph === 'X' && (e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask') && main.has(`${e.pid}:${e.tid}`));
  const ms = (us: number | undefined) => Math.round((us ?? 0) / 100) / 10;
  return {
    tasks: tasks.length,
    maxWallMs: Math.max(0, ...tasks.map((t) => ms(t.dur))),
    maxCpuMs: Math.max(0, ...tasks.map((t) => ms(t.tdur))),
    totalCpuMs: ms(tasks.reduce((a, t) => a + (t.tdur ?? 0), 0)),
    longByWall: tasks.filter((t) => (t.dur ?? 0) > 50_000).map((t) => [ms(t.dur), ms(t.tdur)]),
  };
}

describe('Demo side by side in browser mode (loupe-tiny on the CPU)', () => {
  let app: AppProcess;
  let browser: Browser;
  let ws: string;
  beforeAll(async () => {
    ws = tempWorkspace('loupe-demo-pair-e2e-');
    // A second name for loupe-tiny's folder (as a second checkpoint would be added): both sides can then make calls
    // in step mode; one folder is one engine process, whose turns the manager queues in order.
    await new ModelRegistry(ws).add(path.join(ROOT, 'models', 'loupe-tiny', 'model'), { id: 'loupe-tiny-b', name: 'loupe-tiny (second name)' });
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    fs.mkdirSync(RESULTS, { recursive: true });
    fs.writeFileSync(path.join(RESULTS, 'demo-pair-longtasks.json'), JSON.stringify(longTasks, null, 2));
    await browser?.close();
    await app?.stop();
  });

  it('vcot vs notool at once: both columns stream before either ends, boxes on one image, answers, export, Compare', async () => {
    const { page, errors } = await newPage(browser, { width: 1440, height: 900 });
    await observe(page);
    await openExample(page, app);
    await expect(page.getByTestId('pair-b-prompt').inputValue()).resolves.toBe('notool');
    await expect(page.getByTestId('pair-b-model').inputValue()).resolves.toBe('loupe-tiny');
    await page.evaluate('window.__longTasks.splice(0)');
    await watchBothStreaming(page);
    const trace = path.join(RESULTS, 'demo-pair-trace.json');
    fs.mkdirSync(RESULTS, { recursive: true });
    await browser.startTracing(page, { path: trace, categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink.user_timing'] });
    await page.getByTestId('pair-run').click();
    let seen: unknown = null;
    let last = '';
    for (let i = 0; i < 1200 && !seen; i++) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await page.evaluate('window.__pairSeen');
      last = (await page.evaluate(`[...document.querySelectorAll('[data-testid^="pair-status-"], [data-testid^="pair-cell-"]')].map((e) => e.getAttribute('data-testid') + '=' + (e.textContent ?? '').slice(0, 40)).join(' | ')`)) as string;
      if (/pair-status-A=(done|error)/.test(last) && /pair-status-B=(done|error)/.test(last)) break;
    }
    if (!seen) await screenshot(page, 'demo-pair-failure');
    expect(seen, last).not.toBeNull();
    await screenshot(page, 'demo-pair-midstream');
    for (const side of ['A', 'B']) await page.getByTestId(`pair-status-${side}`).filter({ hasText: /^(done|error)$/ }).waitFor({ timeout: 120_000 });
    longTasks['vcot-vs-notool'] = (await page.evaluate('window.__longTasks.splice(0)')) as number[];
    await browser.stopTracing();
    const main = mainThreadTasks(trace);
    longTasks['vcot-vs-notool main thread (trace)'] = main;
    expect(main.tasks).toBeGreaterThan(0);
    await page.evaluate('clearInterval(window.__pairTimer)');
    await expect(page.getByTestId('pair-status-A').textContent()).resolves.toBe('done');
    await expect(page.getByTestId('pair-status-B').textContent()).resolves.toBe('done');
    // A zoomed (its box on the shared image, its crop in row 1); B answered without tools.
    await page.getByTestId('pair-box-A-1').waitFor();
    await expect(page.getByTestId('pair-cell-A-0').textContent()).resolves.toContain('crop_image_normalized');
    expect(await page.locator('[data-testid^="pair-box-B-"]').count()).toBe(0);
    await expect(page.getByTestId('pair-answer-A').textContent()).resolves.toMatch(/Answer A.*\d.*s/);
    await expect(page.getByTestId('pair-answer-B').textContent()).resolves.toMatch(/Answer B.*\d.*s/);
    // Aligned rows: row 0 of A and B start at the same height.
    const [ya, yb] = await Promise.all(['A', 'B'].map(async (s) => (await page.getByTestId(`pair-cell-${s}-0`).boundingBox())!.y));
    expect(Math.abs(ya! - yb!)).toBeLessThan(1);
    await screenshot(page, 'demo-pair-ended');

    await page.getByTestId('pair-present').click();
    await page.getByTestId('pair-presentation').waitFor();
    await expect(page.getByTestId('pair-present-counter').textContent()).resolves.toMatch(/^1\/\d+$/);
    await page.keyboard.press('ArrowRight');
    await expect(page.getByTestId('pair-present-counter').textContent()).resolves.toMatch(/^2\/\d+$/);
    await page.getByTestId('pair-slide-A').waitFor();
    await page.getByTestId('pair-slide-B').waitFor();
    await screenshot(page, 'demo-pair-present');
    await page.keyboard.press('Escape');

    await page.getByTestId('pair-export-html').click();
    const name = await page.getByTestId('pair-export-link').textContent();
    const file = path.join(ws, 'exports', name!.split(' ')[0]!);
    const html = fs.readFileSync(file, 'utf8');
    expect(html).toContain('data-side="A"');
    expect(html).toContain('data-side="B"');
    const view = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await view.goto(pathToFileURL(file).href);
    expect(await view.locator('section.side').count()).toBe(2);
    expect(await view.locator('section.side-a img').count()).toBeGreaterThan(1);
    await view.screenshot({ path: path.join(RESULTS, 'demo-pair-export.png') });
    await view.close();

    await page.getByTestId('pair-compare').click();
    await page.getByTestId('compare-page').waitFor();
    await page.getByTestId('compare-side-by-side').waitFor();
    await page.getByTestId('compare-traj-0').waitFor();
    await page.getByTestId('compare-traj-1').waitFor();
    await expect(page.getByTestId('compare-names').textContent()).resolves.toMatch(/A = .*A: loupe-tiny · vcot.*B = .*B: loupe-tiny · notool/);
    // Demo questions have no answer key: both sides say so instead of "wrong"
    await expect(page.getByTestId('compare-side-by-side').locator('h3 .pill').allTextContents()).resolves.toEqual(['unscored', 'unscored']);
    await screenshot(page, 'demo-pair-compare');
    expect(errors).toEqual([]);
  });

  it('step mode pauses each column on its own: A continues to its answer while B stays paused', async () => {
    const { page, errors } = await newPage(browser, { width: 1440, height: 900 });
    await observe(page);
    await openExample(page, app);
    await page.getByTestId('pair-b-model').selectOption('loupe-tiny-b');
    await page.getByTestId('pair-b-prompt').selectOption('vcot');
    await page.getByTestId('step-mode').check();
    await page.evaluate('window.__longTasks.splice(0)');
    await page.getByTestId('pair-run').click();
    await page.getByTestId('pair-pause-A').waitFor({ timeout: 120_000 });
    await page.getByTestId('pair-pause-B').waitFor({ timeout: 120_000 });
    await page.getByTestId('pair-continue-A').click();
    await page.getByTestId('pair-status-A').filter({ hasText: 'done' }).waitFor({ timeout: 120_000 });
    // B is still where it stopped: paused before its call, nothing run.
    await expect(page.getByTestId('pair-status-B').textContent()).resolves.toBe('paused');
    await page.getByTestId('pair-pause-B').waitFor();
    expect(await page.locator('[data-testid="pair-cell-B-1"]:not(.pair-cell-empty)').count()).toBe(0);
    await screenshot(page, 'demo-pair-step-a-done-b-paused');
    await page.getByTestId('pair-continue-B').click();
    await page.getByTestId('pair-status-B').filter({ hasText: 'done' }).waitFor({ timeout: 120_000 });
    await page.getByTestId('pair-box-B-1').waitFor();
    longTasks['step-mode'] = (await page.evaluate('window.__longTasks.splice(0)')) as number[];
    expect(errors).toEqual([]);
  });

  it('B repeating A: B\'s column says why, A runs to its answer', async () => {
    const { page, errors } = await newPage(browser, { width: 1440, height: 900 });
    await openExample(page, app);
    await page.getByTestId('pair-b-prompt').selectOption('vcot');
    await page.getByTestId('pair-run').click();
    await page.getByTestId('pair-col-error-B').filter({ hasText: 'B repeats A (loupe-tiny · vcot)' }).waitFor({ timeout: 60_000 });
    await page.getByTestId('pair-status-A').filter({ hasText: 'done' }).waitFor({ timeout: 120_000 });
    await expect(page.getByTestId('pair-status-B').textContent()).resolves.toBe('error');
    await expect(page.getByTestId('pair-answer-A').textContent()).resolves.toContain('352');
    await screenshot(page, 'demo-pair-b-refused');
    expect(errors).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

function genRun(workspace: string, n: number, seed: number): void {
  execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/gen-large-run.ts'), '--workspace', workspace, '--n', String(n), '--seed', String(seed)], { cwd: ROOT, stdio: 'pipe' });
}

async function rowCount(page: Page): Promise<number> {
  const text = (await page.getByTestId('row-count').textContent()) ?? '';
  return Number(text.replace(/[^\d].*$/, '').replace(/,/g, ''));
}

describe('Runs: results, sample table, sample view, compare', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-browse-');
    genRun(ws, 400, 1);
    genRun(ws, 400, 2);
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('shows results with CIs, filters with the query language, sorts, and opens a sample', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('overall-accuracy').waitFor();
    await expect(page.getByTestId('overall-accuracy').textContent()).resolves.toMatch(/\d+\.\d %.*\[\d+\.\d, \d+\.\d\].*n = 400/);
    await page.getByTestId('sample-row').first().waitFor();
    expect(await rowCount(page)).toBe(400);

    await page.getByTestId('query-input').fill('correct = false and calls > 1');
    await page.getByTestId('query-input').press('Enter');
    await page.waitForFunction(() => !/^400 /.test(document.querySelector('[data-testid=row-count]')?.textContent ?? ''));
    const filtered = await rowCount(page);
    expect(filtered).toBeGreaterThan(0);
    expect(filtered).toBeLessThan(400);
    // Every visible row satisfies the filter.
    const cells = await page.getByTestId('sample-row').evaluateAll((rows) => rows.map((r) => [r.children[4]?.textContent, Number(r.children[6]?.textContent)]));
    for (const [correct, calls] of cells) {
      expect(correct).toBe('✗');
      expect(calls).toBeGreaterThan(1);
    }

    // Save the filter as a slice; it survives a reload and applies with one click.
    await page.getByTestId('save-slice').click();
    await page.getByTestId('slice-name').fill('wrong after several zooms');
    await page.getByTestId('slice-name').press('Enter');
    await page.getByTestId('slice-chip').filter({ hasText: 'wrong after several zooms' }).waitFor();
    await page.reload();
    await page.getByTestId('sample-row').first().waitFor();
    // The rows can paint before the count line is filled in: wait for a number, then check it.
    await page.waitForFunction(() => /^\d/.test(document.querySelector('[data-testid=row-count]')?.textContent ?? ''));
    expect(await rowCount(page)).toBe(400);
    await page.getByTestId('slice-chip').filter({ hasText: 'wrong after several zooms' }).click();
    await page.waitForFunction((n) => (document.querySelector('[data-testid=row-count]')?.textContent ?? '').startsWith(`${n} `), filtered);

    await page.getByTestId('query-input').fill('correct = maybe and');
    await page.getByTestId('query-input').press('Enter');
    await page.getByTestId('query-problem').waitFor();
    await expect(page.getByTestId('query-problem').textContent()).resolves.toMatch(/column \d+/);
    await screenshot(page, 'runs-query-error');

    await page.getByTestId('query-input').fill('');
    await page.getByTestId('query-input').press('Enter');
    await page.getByTestId('sort-calls').click();
    await page.getByTestId('sort-calls').click(); // descending
    await page.waitForFunction(() => document.querySelector('[data-testid=sort-calls]')?.textContent?.includes('▼'));
    await page.waitForTimeout(300);
    const callsCol = await page.getByTestId('sample-row').evaluateAll((rows) => rows.slice(0, 20).map((r) => Number(r.children[6]?.textContent)));
    expect(callsCol.length).toBeGreaterThan(5);
    expect([...callsCol].sort((a, b) => b - a)).toEqual(callsCol);
    await screenshot(page, 'runs-overview');

    await page.getByTestId('sample-row').first().click();
    await page.getByTestId('sample-page').waitFor();
    await page.getByTestId('sample-trajectory').waitFor();
    await expect(page.getByTestId('ground-truth').textContent()).resolves.not.toBe('');
    await page.getByTestId('raw-toggle').check();
    await page.getByTestId('raw-prompt').waitFor();
    await page.getByTestId('turn-list').waitFor();
    await screenshot(page, 'sample-view');
    expect(errors).toEqual([]);
  });

  it('scrolls the sample table in place: row elements are rewritten, never moved, and stay in row order on screen', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('sample-row').first().waitFor();
    await page.waitForFunction(() => /^400 /.test(document.querySelector('[data-testid=row-count]')?.textContent ?? ''));
    // Each row element's place (aria-rowindex → translateY) and text, keyed by the row it shows.
    const snapshot = () =>
      page.evaluate(() => {
        const rows = [...document.querySelectorAll<HTMLElement>('[data-testid=sample-table] .st-body [data-testid=sample-row]')];
        return rows.map((r) => ({ index: Number(r.getAttribute('aria-rowindex')) - 2, y: r.style.transform, question: r.children[3]?.textContent ?? '' }));
      });
    const top = await snapshot();
    await page.evaluate(() => {
      const body = document.querySelector('[data-testid=sample-table] .st-body')!;
      const w = window as unknown as { __rowMoves: number; __rowEls: Set<Element> };
      w.__rowMoves = 0;
      w.__rowEls = new Set(body.querySelectorAll('[data-testid=sample-row]'));
      new MutationObserver((ms) => {
        // A row element taken out of the DOM (React moves an element by removing and inserting it). Slots empty at
        // the top of the table get elements of their own further down, and lose them again on the way back.
        for (const m of ms) for (const n of m.removedNodes) if (w.__rowEls.has(n as Element)) w.__rowMoves++;
      }).observe(body, { childList: true, subtree: true });
    });
    // Down 20 rows a frame to row 200, then back up, as a fast wheel would.
    for (const step of [600, -600]) {
      await page.evaluate(async (dy) => {
        const body = document.querySelector('[data-testid=sample-table] .st-body')!;
        for (let i = 0; i < 10; i++) {
          body.scrollTop += dy;
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        }
      }, step);
      if (step > 0) {
        const mid = await snapshot();
        const shown = mid.map((r) => r.index).sort((a, b) => a - b);
        expect(shown[0]).toBeLessThanOrEqual(200);
        expect(shown[shown.length - 1]).toBeGreaterThan(200);
        // Every slot shows a distinct row, the rows on screen are consecutive, each at its own place.
        expect(new Set(shown).size).toBe(shown.length);
        expect(shown[shown.length - 1]! - shown[0]!).toBe(shown.length - 1);
        for (const r of mid) expect(r.y).toBe(`translateY(${r.index * 30}px)`);
        // The same filter applied again (what a runs-list reload does too): the table keeps its rows and its place
        // while the new answer comes, instead of collapsing to no rows, which threw the view back to the top.
        const kept = await page.evaluate(async () => {
          const body = document.querySelector('[data-testid=sample-table] .st-body')!;
          const input = document.querySelector<HTMLInputElement>('[data-testid=query-input]')!;
          const count = () => document.querySelector('[data-testid=row-count]')?.textContent ?? '';
          let leastHeight = body.scrollHeight;
          let cleared = false;
          const obs = new MutationObserver(() => {
            leastHeight = Math.min(leastHeight, body.scrollHeight);
            if (!/ ms$/.test(count())) cleared = true;
          });
          obs.observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
          input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
          const t0 = performance.now();
          while ((!cleared || !/ ms$/.test(count())) && performance.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
          obs.disconnect();
          return { cleared, leastHeight, scrollTop: body.scrollTop, count: count() };
        });
        expect(kept.cleared, 'the filter ran again').toBe(true);
        expect(kept.count).toMatch(/^400 samples · \d+ ms$/);
        expect(kept.leastHeight).toBe(400 * 30);
        expect(kept.scrollTop).toBe(6000);
      }
    }
    const back = await snapshot();
    const byIndex = (xs: typeof top) => Object.fromEntries(xs.map((r) => [r.index, r]));
    expect(byIndex(back)).toEqual(byIndex(top));
    const moves = await page.evaluate(() => {
      const w = window as unknown as { __rowMoves: number; __rowEls: Set<Element> };
      const now = [...document.querySelectorAll('[data-testid=sample-table] .st-body [data-testid=sample-row]')];
      return { moves: w.__rowMoves, same: now.every((el) => w.__rowEls.has(el)) };
    });
    expect(moves).toEqual({ moves: 0, same: true });
    expect(errors).toEqual([]);
  });

  it('searches full text across question and model text', async () => {
    const { page } = await newPage(browser, { width: 1400, height: 900 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('sample-row').first().waitFor();
    await page.getByTestId('search-input').fill('zzzz-no-such-text');
    await page.waitForFunction(() => (document.querySelector('[data-testid=row-count]')?.textContent ?? '').startsWith('0 '));
    expect(await rowCount(page)).toBe(0);
  });

  it('compares two runs on their shared samples with McNemar', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 900 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('sample-row').first().waitFor();
    const boxes = page.locator('[data-testid=runs-table] input[type=checkbox]');
    expect(await boxes.count()).toBe(2);
    for (let i = 0; i < 2; i++) if (!(await boxes.nth(i).isChecked())) await boxes.nth(i).check();
    await page.getByTestId('compare-runs').click();
    await page.getByTestId('compare-summary').waitFor();
    await expect(page.getByTestId('mcnemar-p').textContent()).resolves.toMatch(/p = (0|1)(\.\d+)?/);
    await page.getByTestId('compare-key').first().click();
    await page.getByTestId('compare-side-by-side').waitFor();
    await page.getByTestId('compare-traj-0').waitFor();
    await page.getByTestId('compare-traj-1').waitFor();
    await screenshot(page, 'compare');
    expect(errors).toEqual([]);
  });
});

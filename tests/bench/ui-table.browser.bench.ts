/**
 * The sample table at the scale of real runs, measured in Chromium: a generated 50 000-sample run
 * (122 MB of samples.jsonl), the real app in browser mode, the Runs page. Reports time to first rows
 * (cold: the core scans and indexes the run), filter and search latency as the user sees them, frame
 * times while scrolling the virtualized table, and the page's JS heap.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { launchBrowser, ROOT, startApp, tempWorkspace } from '../e2e/harness';

const N = Number(process.env.LOUPE_BENCH_ROWS ?? 50_000);

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const ws = tempWorkspace('loupe-uibench-');
  execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/gen-large-run.ts'), '--workspace', ws, '--n', String(N), '--seed', '1'], { cwd: ROOT, stdio: 'pipe' });
  const app = await startApp(ws);
  const browser = await launchBrowser();
  const rows: Array<Record<string, string | number>> = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    const count = () => page.evaluate(() => document.querySelector('[data-testid=row-count]')?.textContent ?? '');

    let t0 = Date.now();
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('sample-row').first().waitFor({ timeout: 180_000 });
    await page.waitForFunction(() => document.querySelector('[data-testid=sample-row] .st-cell') !== null && !document.querySelector('[data-testid=sample-row].loading'));
    rows.push({ measure: 'time to first rows (cold: scan + index)', value: Date.now() - t0, unit: 'ms', rows: N });

    t0 = Date.now();
    await page.reload();
    await page.getByTestId('sample-row').first().waitFor();
    rows.push({ measure: 'time to first rows (warm: index cached in the core)', value: Date.now() - t0, unit: 'ms', rows: N });

    const filters = ['correct = false and calls > 1', 'bench = vstar and stop != answer', 'tool_errors >= 1 or latency > 20s', 'calls = 0'];
    for (const q of filters) {
      const before = await count();
      t0 = Date.now();
      await page.getByTestId('query-input').fill(q);
      await page.getByTestId('query-input').press('Enter');
      await page.waitForFunction((b) => { const t = document.querySelector('[data-testid=row-count]')?.textContent ?? ''; return t !== b && / ms$/.test(t); }, before);
      await page.getByTestId('sample-row').first().waitFor();
      rows.push({ measure: `filter: ${q}`, value: Date.now() - t0, unit: 'ms', rows: (await count()).split(' ')[0] ?? '' });
    }
    await page.getByTestId('query-input').fill('');
    await page.getByTestId('query-input').press('Enter');
    await page.waitForFunction((n) => (document.querySelector('[data-testid=row-count]')?.textContent ?? '').startsWith(n.toLocaleString('en-US')), N);
    for (const q of ['umbrella', 'zzzz-not-there']) {
      const before = await count();
      t0 = Date.now();
      await page.getByTestId('search-input').fill(q);
      await page.waitForFunction((b) => { const t = document.querySelector('[data-testid=row-count]')?.textContent ?? ''; return t !== b && / ms$/.test(t); }, before);
      rows.push({ measure: `search: "${q}" (includes the 200 ms typing debounce)`, value: Date.now() - t0, unit: 'ms', rows: (await count()).split(' ')[0] ?? '' });
    }
    await page.getByTestId('search-input').fill('');
    await page.waitForFunction((n) => (document.querySelector('[data-testid=row-count]')?.textContent ?? '').startsWith(n.toLocaleString('en-US')), N);

    // Scroll the virtualized table for 3 s at a steady speed, recording every frame.
    // A string, not a function: tsx's transform would add helpers (__name) the page does not have.
    const frames = (await page.evaluate(`(async () => {
      const el = document.querySelector('.st-body');
      const times = [];
      let last = performance.now();
      const end = last + 3000;
      await new Promise((resolve) => {
        function step(now) {
          times.push(now - last);
          last = now;
          el.scrollTop += 600;
          if (now < end) requestAnimationFrame(step);
          else resolve();
        }
        requestAnimationFrame(step);
      });
      return times.slice(1);
    })()`)) as number[];
    frames.sort((a, b) => a - b);
    const q = (p: number) => frames[Math.min(frames.length - 1, Math.floor(p * frames.length))] ?? NaN;
    rows.push({ measure: 'scroll frame time, median', value: q(0.5), unit: 'ms', rows: frames.length });
    rows.push({ measure: 'scroll frame time, p95', value: q(0.95), unit: 'ms', rows: frames.length });
    rows.push({ measure: 'scroll frames over 50 ms', value: frames.filter((f) => f > 50).length, unit: 'frames', rows: frames.length });

    const metrics = (await cdp.send('Performance.getMetrics')).metrics;
    const heap = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN;
    rows.push({ measure: 'page JS heap used', value: heap / 2 ** 20, unit: 'MiB', rows: N });
  } finally {
    await browser.close();
    await app.stop();
  }
  return rows;
}

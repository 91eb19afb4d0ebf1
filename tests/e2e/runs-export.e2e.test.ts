/**
 * Training data out of runs, from both doors: the Runs page's "Export training data" button and
 * `npx loupe export-data` write the same rows (RL rows for verl / Pixel Reasoner / ms-swift, SFT traces from the
 * correct trajectories). Real app in browser mode, real Chromium, a real recorded run with real media.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser, newPage, runLoupe, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';
import { RECORDED_RUN, writeRecordedRun } from './demo.fixture';

const rows = (file: string): Array<Record<string, unknown>> =>
  fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('export training data from runs', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-export-data-');
    await writeRecordedRun(ws);
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('the Runs page button and `loupe export-data` write the RL rows and the SFT trace of a correct run', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 900 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByRole('checkbox', { name: `select ${RECORDED_RUN}` }).waitFor();
    if (!(await page.getByRole('checkbox', { name: `select ${RECORDED_RUN}` }).isChecked())) await page.getByRole('checkbox', { name: `select ${RECORDED_RUN}` }).check();
    await page.getByTestId('export-data').click();
    const result = page.getByTestId('export-data-result');
    await result.waitFor();
    await expect(result.textContent()).resolves.toContain('sft.pixel-reasoner.jsonl (1)');
    await expect(result.textContent()).resolves.toContain('rl.verl.jsonl (1)');
    await screenshot(page, 'runs-export-data');
    const dir = (await result.getAttribute('title')) ?? '';
    expect(dir.startsWith(path.join(app.workspace, 'exports'))).toBe(true);
    const [trace] = rows(path.join(dir, 'sft.pixel-reasoner.jsonl')) as Array<{ message_list: Array<{ role: string; content: Array<{ type: string; image?: string; text?: string }> }> }>;
    const image = trace!.message_list[0]!.content.find((p) => p.type === 'image')?.image ?? '';
    expect(fs.existsSync(image)).toBe(true);
    expect(trace!.message_list.at(-1)!.content[0]!.text).toContain('\\boxed{green}');
    expect(rows(path.join(dir, 'rl.verl.jsonl'))[0]).toMatchObject({ reward_model: { ground_truth: 'green' } });
    expect(errors).toEqual([]);

    // The CLI writes the same rows.
    const out = path.join(app.workspace, 'cli-export');
    const r = runLoupe(['export-data', '--run', RECORDED_RUN, '--out', out, '--workspace', app.workspace]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`${path.join(out, 'sft.ms-swift.jsonl')}\t1`);
    for (const f of ['rl.verl.jsonl', 'rl.pixel-reasoner.jsonl', 'rl.ms-swift.jsonl', 'sft.pixel-reasoner.jsonl', 'sft.ms-swift.jsonl']) {
      expect(fs.readFileSync(path.join(out, f), 'utf8')).toBe(fs.readFileSync(path.join(dir, f), 'utf8'));
    }
    const bad = runLoupe(['export-data', '--run', 'no-such-run', '--out', out, '--workspace', app.workspace]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/loupe export-data: .*no-such-run/);
  });
});

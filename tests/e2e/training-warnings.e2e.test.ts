/**
 * A jobs.jsonl with a line from another version and a torn line: the Training page still loads, lists the good
 * jobs and says which lines were skipped (real app in browser mode, real Chromium). Before, training:jobs failed
 * on every refresh and the page showed no jobs at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newPage, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const job = (key: string, submittedAt: string, extra: Record<string, unknown> = {}) => ({
  key,
  id: key.split('/')[1],
  name: key.split('/')[1],
  connector: 'old-cluster',
  connectorKind: 'ray',
  templateId: 'custom-script',
  templateTitle: 'Custom bash script',
  params: {},
  metricsFormat: 'auto',
  state: 'succeeded',
  rawState: 'SUCCEEDED',
  submittedAt,
  checkpoints: [],
  ...extra,
});

describe('Training page with unreadable job records', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-e2e-jobwarn-');
    fs.mkdirSync(path.join(ws, 'training'), { recursive: true });
    const lines = [
      JSON.stringify(job('old-cluster/first-job', '2026-11-27T09:00:00.000Z')),
      JSON.stringify(job('old-cluster/from-v9', '2026-11-27T09:30:00.000Z', { state: 'preempted' })),
      JSON.stringify(job('old-cluster/second-job', '2026-11-27T10:00:00.000Z')),
      '{"key":"old-cluster/torn","id":"to',
    ];
    fs.writeFileSync(path.join(ws, 'training', 'jobs.jsonl'), `${lines.join('\n')}\n`);
    app = await startApp(ws);
    browser = await launchBrowser();
    ({ page, errors } = await newPage(browser, { width: 1280, height: 800 }));
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('lists the good jobs and names the skipped lines', async () => {
    await page.goto(`${app.openUrl}#/training`);
    await page.getByTestId('job-list').waitFor();
    const rows = page.getByTestId('job-row');
    expect(await rows.count()).toBe(2);
    const warn = page.getByTestId('jobs-warnings');
    await warn.waitFor();
    const text = (await warn.textContent()) ?? '';
    expect(text).toContain('2 lines of training/jobs.jsonl could not be read and were skipped');
    expect(text).toMatch(/jobs\.jsonl:2: not a job record: state: Invalid option/);
    expect(text).toMatch(/jobs\.jsonl:4: not valid JSON/);
    await screenshot(page, 'training-jobs-warnings');
    expect(errors).toEqual([]);
  });
});

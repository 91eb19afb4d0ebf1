/**
 * The Demo at a talk (projector size 1024×768 and a 1080p screen), on a fresh workspace: it opens on Local Model
 * with the example row on screen from the first paint, the answer shows as a chip (not raw `\boxed{}`), a paused
 * step says it is paused (not "generating…"), and developer diagnostics stay off screen unless Settings turns
 * them on. Real loupe-tiny on CPU.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser, newPage, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

describe('Demo at a talk', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    app = await startApp(tempWorkspace('loupe-talk-'));
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('opens on Local Model with the examples, shows the answer as a chip, downloads its exports, and no diagnostics', async () => {
    const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/demo`);
    // The row is there at once (loading, then the scenes), and the engine is the model that runs here.
    await page.getByTestId('examples').waitFor({ timeout: 10_000 });
    await expect(page.getByTestId('engine-local').getAttribute('aria-checked')).resolves.toBe('true');
    await page.getByTestId('example-synth-9-00014').click();
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 120_000 });
    await expect(page.getByTestId('answer-chip').textContent()).resolves.toBe('352');
    expect(await page.getByTestId('long-tasks').count()).toBe(0);
    await screenshot(page, 'talk-demo-1024');
    await page.setViewportSize({ width: 1920, height: 1080 });
    await screenshot(page, 'talk-demo-1920');
    // The answer slide of presentation mode: a chip too.
    await page.getByTestId('present').click();
    await page.keyboard.press('End');
    for (let i = 0; i < 12 && !(await page.getByTestId('present-answer').count()); i++) await page.keyboard.press('ArrowRight');
    await expect(page.getByTestId('present-answer-chip').textContent()).resolves.toBe('352');
    await screenshot(page, 'talk-present-answer-1920');
    await page.keyboard.press('Escape');

    // Exports download over HTTP (browser mode: the file on the server is no use over an SSH tunnel).
    const magic: Record<string, (b: Buffer) => boolean> = {
      html: (b) => /^<!doctype html>/i.test(b.subarray(0, 20).toString('utf8')),
      gif: (b) => b.subarray(0, 6).toString('latin1') === 'GIF89a',
      webp: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
    };
    for (const format of ['html', 'webp', 'gif'] as const) {
      await page.getByTestId(`export-${format}`).click();
      await page.getByTestId(`export-download-${format}`).waitFor({ timeout: 90_000 });
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId(`export-download-${format}`).click()]);
      expect(download.suggestedFilename()).toMatch(new RegExp(`\\.${format}$`));
      const saved = path.join(app.workspace, `downloaded.${format}`);
      await download.saveAs(saved);
      const bytes = fs.readFileSync(saved);
      expect(magic[format]!(bytes)).toBe(true);
      expect(bytes.length).toBe(fs.statSync(path.join(app.workspace, 'exports', download.suggestedFilename())).size);
    }
    await screenshot(page, 'talk-exports-1920');

    // Diagnostics are a developer's choice.
    await page.getByTestId('nav-settings').click();
    await page.getByTestId('settings-developer').check();
    await page.getByTestId('nav-demo').click();
    await page.getByTestId('long-tasks').waitFor();
    await page.getByTestId('nav-settings').click();
    await page.getByTestId('settings-developer').uncheck();
    expect(errors).toEqual([]);
  }, 300_000);

  it('the OpenAI-compatible engine without a model name says so plainly', async () => {
    const { page } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('example-synth-9-00014').click();
    await page.getByTestId('engine-openai').click();
    await page.getByTestId('openai-model').fill('');
    await page.getByTestId('run').click();
    await page.getByTestId('demo-error').waitFor();
    const text = (await page.getByTestId('demo-error').textContent()) ?? '';
    expect(text).toMatch(/^Name the model to ask/);
    expect(text).not.toMatch(/Invalid payload|Too small|engine\.model/);
  });

  it('a paused step says it is paused, not "generating…"', async () => {
    const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('example-synth-9-00031').click();
    await page.getByTestId('step-mode').check();
    await page.getByTestId('run').click();
    await page.getByTestId('pause-panel').waitFor({ timeout: 120_000 });
    await expect(page.getByTestId('run-status').textContent()).resolves.toBe('paused');
    expect(await page.getByText('generating…').count()).toBe(0);
    const state = page.getByTestId('streaming-state');
    if (await state.count()) await expect(state.textContent()).resolves.toBe('paused before its tool call');
    await screenshot(page, 'talk-paused-1024');
    await page.getByTestId('continue-stop').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 60_000 });
    expect(errors).toEqual([]);
  });

  it('step mode at 1024×768: the trajectory above the fold, the footer whole, big handles outside a small box, keyboard nudging', async () => {
    const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('example-synth-9-00014').click();
    await page.getByTestId('step-mode').check();
    await page.getByTestId('run').click();
    const box = page.getByTestId('edit-box');
    await box.waitFor({ timeout: 120_000 });
    // Above the fold: the image with the box to edit, and the footer is on screen, not cut.
    const viewer = (await page.getByTestId('image-viewer').first().boundingBox())!;
    expect(viewer.y).toBeLessThan(400);
    expect(viewer.y + viewer.height).toBeLessThanOrEqual(768);
    const bar = (await page.getByTestId('statusbar').boundingBox())!;
    expect(bar.y + bar.height).toBeLessThanOrEqual(768);
    expect(await page.getByTestId('statusbar').evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth <= window.innerWidth)).toBe(true);
    // Handles: at least 24 px to hit; on this small box they sit outside it and leave it free.
    const b = (await box.boundingBox())!;
    expect(Math.min(b.width, b.height)).toBeLessThan(84);
    for (const h of ['nw', 'ne', 'sw', 'se']) {
      const r = (await page.getByTestId(`edit-handle-${h}`).boundingBox())!;
      expect(Math.min(r.width, r.height)).toBeGreaterThanOrEqual(24);
      const overlapX = Math.max(0, Math.min(r.x + r.width, b.x + b.width) - Math.max(r.x, b.x));
      const overlapY = Math.max(0, Math.min(r.y + r.height, b.y + b.height) - Math.max(r.y, b.y));
      expect(overlapX * overlapY).toBe(0);
    }
    // Keyboard: the box has the focus; arrows move it, Shift+arrows resize it; the hint says so.
    await expect(page.getByTestId('edit-hint').textContent()).resolves.toMatch(/move · Shift\+arrows resize/);
    await expect(box.evaluate((el) => el === document.activeElement)).resolves.toBe(true);
    const style = () => box.evaluate((el) => ({ left: parseFloat((el as HTMLElement).style.left), top: parseFloat((el as HTMLElement).style.top), width: parseFloat((el as HTMLElement).style.width), height: parseFloat((el as HTMLElement).style.height) }));
    const s0 = await style();
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowUp');
    const s1 = await style();
    expect(s1.left).toBeCloseTo(s0.left - 2, 3);
    expect(s1.top).toBeCloseTo(s0.top - 1, 3);
    expect(s1.width).toBeCloseTo(s0.width, 3);
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('Shift+ArrowDown');
    const s2 = await style();
    expect(s2.left).toBeCloseTo(s1.left, 3);
    expect(s2.width).toBeCloseTo(s1.width + 1, 3);
    expect(s2.height).toBeCloseTo(s1.height + 1, 3);
    await screenshot(page, 'talk-step-1024');
    await page.setViewportSize({ width: 1920, height: 1080 });
    await screenshot(page, 'talk-step-1920');
    // 4K at 100 %: the same layout at twice the size, no tiny text, the footer still whole.
    await page.setViewportSize({ width: 3840, height: 2160 });
    const px = await page.getByTestId('question').evaluate((el) => parseFloat(getComputedStyle(el).fontSize) * parseFloat(getComputedStyle(document.documentElement).zoom || '1'));
    expect(px).toBeGreaterThanOrEqual(28);
    const bar4k = (await page.getByTestId('statusbar').boundingBox())!;
    expect(bar4k.y + bar4k.height).toBeLessThanOrEqual(2160);
    expect(bar4k.y).toBeGreaterThan(2000);
    await screenshot(page, 'talk-step-3840');
    // The edited box is what the call runs on.
    await page.getByTestId('continue-stop').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 60_000 });
    expect(errors).toEqual([]);
  }, 300_000);
});

/**
 * "Where it looked" in the Demo, in Chromium against browser mode with the real loupe-tiny (q8, CPU): after a run on a
 * non-square example scene (1304×869), the crop step's card asks for the attention map; the viewer draws it over the
 * whole image, one canvas pixel per merged vision token (the grid the card names), under the model's box; layer and
 * opacity controls change it; the legend shows the colour scale; the Models page shows loupe-tiny's measure.
 * Screenshots: attention-map-mean, attention-map-layer3, attention-models-card.
 */
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newPage, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

describe('Demo · attention map of a crop step (loupe-tiny)', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    app = await startApp(tempWorkspace('loupe-attention-'));
    browser = await launchBrowser();
    ({ page, errors } = await newPage(browser, { width: 1400, height: 900 }));
    await page.goto(app.openUrl);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('overlays the map on the non-square image, exactly over it, with the box; layer, opacity and legend work', async () => {
    await page.getByTestId('engine-local').click();
    await page.locator('[data-testid^="example-"]').first().click();
    await page.getByTestId('media-summary').waitFor();
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 120_000 });
    const card = page.getByTestId('step-card-1');
    await card.click();
    await card.getByTestId('attention-load').click();
    const heat = page.getByTestId('attention-heat');
    await heat.waitFor({ timeout: 120_000 });
    // the grid: loupe-tiny sees this scene at 364×252 (smart_resize under its max pixels) = 13×9 cells of 28 px
    const meta = await page.getByTestId('attention-meta').textContent();
    const m = /(\d+)×(\d+) cells of 28 px on (\d+)×(\d+)/.exec(meta ?? '');
    expect(m).not.toBeNull();
    const [gw, gh, iw, ih] = m!.slice(1).map(Number) as [number, number, number, number];
    expect([gw * 28, gh * 28]).toEqual([iw, ih]);
    expect(await heat.evaluate((c) => [(c as HTMLCanvasElement).width, (c as HTMLCanvasElement).height])).toEqual([gw, gh]);
    // exactly over the image (the map is over the image the box was drawn on), the box above it
    const img = page.getByTestId('image-viewer').locator('img').first();
    const [hb, ib] = [await heat.boundingBox(), await img.boundingBox()];
    for (const k of ['x', 'y', 'width', 'height'] as const) expect(Math.abs(hb![k] - ib![k])).toBeLessThan(1.5);
    const box = page.getByTestId('box-step-1');
    expect(await box.isVisible()).toBe(true);
    expect(await box.evaluate((b, h) => (b.compareDocumentPosition(h as Node) & Node.DOCUMENT_POSITION_PRECEDING) !== 0, await heat.elementHandle())).toBe(true);
    await page.getByTestId('attention-legend').waitFor();
    await expect(page.getByTestId('attention-layer').locator('option').count()).resolves.toBe(6); // mean + 5 layers
    await page.getByTestId('attention-opacity').fill('0.75');
    await expect.poll(() => heat.evaluate((c) => (c as HTMLElement).style.opacity)).toBe('0.75');
    await screenshot(page, 'attention-map-mean');
    const before = await heat.evaluate((c) => (c as HTMLCanvasElement).toDataURL());
    await page.getByTestId('attention-layer').selectOption({ value: '2' }); // the third layer (0-based 2): loupe-tiny's pointer layer
    await expect.poll(() => heat.evaluate((c) => (c as HTMLCanvasElement).toDataURL())).not.toBe(before);
    await screenshot(page, 'attention-map-layer3');
    // the map hides and shows again
    await page.getByTestId('attention-shown').uncheck();
    await expect.poll(() => heat.count()).toBe(0);
    await page.getByTestId('attention-shown').check();
    await heat.waitFor();
    // the HTML export keeps the map looked at: SVG cells under the box, a self-contained page opened from disk
    await page.getByTestId('export-html').click();
    const htmlPath = await page.getByTestId('export-result-html').getAttribute('title');
    expect(fs.existsSync(htmlPath!)).toBe(true);
    const html = fs.readFileSync(htmlPath!, 'utf8');
    expect(html).toMatch(new RegExp(`<g class="heat" opacity="0\\.6" shape-rendering="crispEdges">(<rect [^>]+/>){${gw * gh}}</g>`)); // one rect per cell
    expect(html).not.toMatch(/<script/i);
    const view = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    await view.goto(pathToFileURL(htmlPath!).href);
    await view.locator('.attn').first().scrollIntoViewIfNeeded();
    await screenshot(view, 'attention-export-html');
    await view.close();
    // the model card on the Models page carries the measure (models/loupe-tiny/model/attention.json)
    await page.getByTestId('nav-models').click();
    const summary = page.getByTestId('model-attention-loupe-tiny-summary');
    await summary.waitFor();
    expect((await summary.textContent())?.trim()).toMatch(/^Where it looks: layer \d · \d+\.\d % in the target box \(uniform \d+\.\d %\) · peak on it \d+\.\d %$/);
    await summary.click(); // the full sentence folds out
    const line = page.getByTestId('model-attention-loupe-tiny-full');
    await line.waitFor();
    expect((await line.textContent())?.trim()).toMatch(/^Where it looks \(loupe-synth seed \d+, 40 image scenes that need a zoom\): layer \d puts \d+\.\d % of its image attention inside the target box \(uniform map \d+\.\d %, tiny-random-qwen25vl \d+\.\d %\)/);
    await screenshot(page, 'attention-models-card');
    expect(errors).toEqual([]);
  }, 300_000);
});

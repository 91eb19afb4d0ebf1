/**
 * The Demo and Models pages in Chromium against `loupe serve`: upload an image, replay a recorded
 * trajectory with real crops, step mode with a dragged box and both branches, presentation mode,
 * exports that open, the local tiny model, a stalled engine, and the upload route's checks.
 * Screenshots go to test-results/demo-*.png; long tasks seen during runs to test-results/demo-longtasks.json.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newPage, RESULTS, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';
import { ERROR_RUN, GLASS, GLASS_QUESTION, VIDEO_RUN, writeMoreRecordings, writeRecordedRun } from './demo.fixture';

const longTasks: Record<string, number[]> = {};

/** Record long tasks (> 50 ms) from page load on. */
async function observeLongTasks(page: Page): Promise<void> {
  // A string: this runs in the page (DOM types are not in the Node test program).
  await page.addInitScript(`
    window.__longTasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push(Math.round(e.duration)); }).observe({ type: 'longtask', buffered: true });
  `);
}
async function takeLongTasks(page: Page, name: string): Promise<void> {
  longTasks[name] = (await page.evaluate('window.__longTasks.splice(0)')) as number[];
}

async function openDemoWithImage(page: Page, app: AppProcess): Promise<void> {
  await page.goto(`${app.openUrl}#/demo`);
  await page.getByTestId('file-input').waitFor({ state: 'attached', timeout: 20_000 }).catch(async (err: unknown) => {
    await screenshot(page, 'demo-failure-open');
    throw new Error(`the Demo page did not render: ${String(err)}; page text: ${(await page.textContent('body'))?.slice(0, 500)}`);
  });
  await page.getByTestId('file-input').setInputFiles(GLASS);
  await page.getByTestId('media-summary').filter({ hasText: '1920×830' }).waitFor();
  await page.getByTestId('question').fill(GLASS_QUESTION);
  await page.getByTestId('engine-replay').click();
  await page.getByTestId('replay-source').locator('option', { hasText: 'recorded glass' }).first().waitFor({ state: 'attached' });
  const value = await page.getByTestId('replay-source').locator('option', { hasText: 'recorded glass' }).first().getAttribute('value');
  await page.getByTestId('replay-source').selectOption(value!);
}

describe('Demo page in browser mode', () => {
  let app: AppProcess;
  let browser: Browser;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-demo-e2e-');
    await writeRecordedRun(ws);
    await writeMoreRecordings(ws);
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    fs.mkdirSync(RESULTS, { recursive: true });
    fs.writeFileSync(path.join(RESULTS, 'demo-longtasks.json'), JSON.stringify(longTasks, null, 2));
    await browser?.close();
    await app?.stop();
  });

  it('replays a recorded trajectory on an uploaded image: streaming steps, boxes on the image, crops, the answer', async () => {
    const { page, errors } = await newPage(browser);
    await observeLongTasks(page);
    await openDemoWithImage(page, app);
    await expect(page.getByTestId('replay-label').textContent()).resolves.toContain('tools run for real');
    await takeLongTasks(page, 'page load + upload (before the replay run)');
    await page.getByTestId('run').click();
    await page.getByTestId('answer').filter({ hasText: 'green' }).waitFor();
    await takeLongTasks(page, 'replay run');
    // Two tool steps, each with its args, box, crop and size; the answer card is highlighted.
    await expect(page.getByTestId('step-card-1').getByTestId('call-args').textContent()).resolves.toContain('"bbox_2d":[0.42,0.25,0.58,0.47]');
    await expect(page.getByTestId('step-card-2').count()).resolves.toBe(1);
    await expect(page.getByTestId('final-answer').textContent()).resolves.toContain('\\boxed{green}');
    const cropSize = await page.getByTestId('step-card-1').getByTestId('crop-size').textContent();
    expect(cropSize).toMatch(/^\d+×\d+$/);
    await expect(page.getByTestId('step-card-1').getByTestId('step-meta').textContent()).resolves.toMatch(/\d+ ms · \d+ tok/);
    // The last call (step 2) is active and targets the first crop (image #2): its box is drawn there.
    await page.getByTestId('box-step-2').waitFor();
    await page.getByTestId('step-card-1').click();
    await page.getByTestId('box-step-1').waitFor();
    const box = await page.getByTestId('box-step-1').boundingBox();
    const stage = await page.getByTestId('image-viewer').locator('img').boundingBox();
    // The box sits where the model put it: x from 0.42 to 0.58 of the image width.
    expect(Math.abs((box!.x - stage!.x) / stage!.width - 0.42)).toBeLessThan(0.01);
    expect(Math.abs((box!.x + box!.width - stage!.x) / stage!.width - 0.58)).toBeLessThan(0.01);
    await screenshot(page, 'demo-replay-step1');
    // ←/→ move through steps.
    await page.keyboard.press('ArrowRight');
    await page.waitForSelector('[data-testid="step-card-2"][aria-current="step"]');
    await page.keyboard.press('ArrowLeft');
    await page.waitForSelector('[data-testid="step-card-1"][aria-current="step"]');
    // Zoom and the overlay toggle.
    await page.getByTestId('zoom-in').click();
    await expect(page.getByTestId('zoom-level').textContent()).resolves.toBe('140%');
    await page.getByTestId('toggle-overlays').uncheck();
    await expect(page.getByTestId('box-step-1').count()).resolves.toBe(0);
    await page.getByTestId('toggle-overlays').check();
    // A crop opens full size.
    await page.evaluate("document.documentElement.dataset.theme = 'dark'");
    await screenshot(page, 'demo-replay-dark');
    await page.evaluate("document.documentElement.dataset.theme = 'light'");
    await page.getByTestId('crop-step-1').click();
    await page.getByTestId('lightbox').waitFor();
    const natural = await page.getByTestId('lightbox').locator('img').evaluate((img) => { const i = img as unknown as { naturalWidth: number; naturalHeight: number }; return `${i.naturalWidth}×${i.naturalHeight}`; });
    expect(natural).toBe(cropSize);
    await screenshot(page, 'demo-replay-crop-lightbox');
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('lightbox').count()).resolves.toBe(0);
    // The run waits in the Demo's scratch space (demo/) as a demo run, not among the runs.
    const runs = fs.readdirSync(path.join(app.workspace, 'demo'));
    const kinds = runs.map((d) => (JSON.parse(fs.readFileSync(path.join(app.workspace, 'demo', d, 'manifest.json'), 'utf8')) as { kind: string }).kind);
    expect(kinds).toContain('demo');
    expect(errors).toEqual([]);
  });

  it('step mode: drag the box, continue, see the new crop and both branches side by side', async () => {
    const { page, errors } = await newPage(browser);
    await observeLongTasks(page);
    await openDemoWithImage(page, app);
    await page.getByTestId('step-mode').check();
    await takeLongTasks(page, 'page load + upload (before the step-mode run)');
    await page.getByTestId('run').click();
    await page.getByTestId('pause-panel').waitFor();
    const edit = page.getByTestId('edit-box');
    await page.getByTestId('image-viewer').scrollIntoViewIfNeeded();
    const before = (await edit.boundingBox())!;
    // Move the box right and down, then grow it from its bottom-right corner.
    await page.mouse.move(before.x + before.width / 2, before.y + before.height / 2);
    await page.mouse.down();
    await page.mouse.move(before.x + before.width / 2 + 50, before.y + before.height / 2 + 20, { steps: 6 });
    await page.mouse.up();
    const moved = (await edit.boundingBox())!;
    expect(moved.x - before.x).toBeGreaterThan(40);
    const se = page.getByTestId('edit-handle-se');
    const h = (await se.boundingBox())!;
    await page.mouse.move(h.x + h.width / 2, h.y + h.height / 2);
    await page.mouse.down();
    await page.mouse.move(h.x + 30, h.y + 25, { steps: 6 });
    await page.mouse.up();
    await page.getByTestId('edited-box').waitFor();
    await screenshot(page, 'demo-step-paused-edited');
    await page.getByTestId('continue-edited').click();
    // The second call pauses too; run it as proposed.
    await page.getByTestId('pause-panel').filter({ hasText: "turn 2's call" }).waitFor();
    await page.getByTestId('continue-run').click();
    await page.getByTestId('branch-b1').waitFor();
    await page.getByTestId('run-status').filter({ hasText: 'done' }).waitFor();
    await takeLongTasks(page, 'step-mode run incl. dragging the box (2 branches)');
    await expect(page.getByTestId('branch-b0').textContent()).resolves.toBe('Edited');
    await expect(page.getByTestId('branch-b1').textContent()).resolves.toBe('Original');
    await expect(page.getByTestId('step-card-1').textContent()).resolves.toContain('edited');
    await page.getByTestId('compare-branches').click();
    await page.getByTestId('branch-compare').waitFor();
    const editedCrop = await page.getByTestId('trajectory-b0').getByTestId('crop-step-1').locator('img').getAttribute('src');
    const originalCrop = await page.getByTestId('trajectory-b1').getByTestId('crop-step-1').locator('img').getAttribute('src');
    expect(editedCrop).toBeTruthy();
    expect(editedCrop).not.toBe(originalCrop);
    const editedArgs = await page.getByTestId('trajectory-b0').getByTestId('step-card-1').getByTestId('call-args').textContent();
    expect(editedArgs).not.toContain('[0.42,0.25,0.58,0.47]');
    await expect(page.getByTestId('trajectory-b1').getByTestId('step-card-1').getByTestId('call-args').textContent()).resolves.toContain('[0.42,0.25,0.58,0.47]');
    await screenshot(page, 'demo-branches-compare');
    expect(errors).toEqual([]);
  });

  it('presentation mode renders full screen and advances by key, zooming from the box into the crop', async () => {
    const { page, errors } = await newPage(browser, { width: 1280, height: 800 });
    await openDemoWithImage(page, app);
    await page.getByTestId('run').click();
    await page.getByTestId('answer').waitFor();
    await page.getByTestId('present').click();
    await page.getByTestId('presentation').waitFor();
    const counter = page.getByTestId('slide-counter');
    const total = Number((await counter.textContent())!.split('/')[1]);
    // question, (box, zoom) × 2, answer
    expect(total).toBe(6);
    await expect(counter.textContent()).resolves.toBe(`1 / ${total}`);
    await page.keyboard.press('ArrowRight');
    await page.getByTestId('slide-box').waitFor();
    await screenshot(page, 'demo-present-box');
    await page.keyboard.press('Space');
    await page.getByTestId('slide-zoom').waitFor();
    await page.waitForSelector('[data-zoomed="true"]');
    await page.waitForTimeout(1500); // let the zoom and the crossfade finish before the screenshot
    await screenshot(page, 'demo-present-zoom');
    await page.keyboard.press('End');
    await page.getByTestId('present-answer').filter({ hasText: 'green' }).waitFor();
    const size = await page.getByTestId('present-answer').evaluate((el) => parseFloat((globalThis as unknown as { getComputedStyle(e: unknown): { fontSize: string } }).getComputedStyle(el).fontSize));
    expect(size).toBeGreaterThanOrEqual(32);
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('presentation').count()).resolves.toBe(0);
    expect(errors).toEqual([]);
  });

  it('exports an HTML page that renders in Chromium and animations with more than one frame', async () => {
    const { page, errors } = await newPage(browser);
    await openDemoWithImage(page, app);
    await page.getByTestId('run').click();
    await page.getByTestId('answer').waitFor();
    await page.getByTestId('export-html').click();
    const htmlText = await page.getByTestId('export-result-html').getAttribute('title');
    const htmlPath = htmlText!;
    expect(fs.existsSync(htmlPath)).toBe(true);
    const view = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    await view.goto(pathToFileURL(htmlPath).href);
    await expect(view.locator('h1').textContent()).resolves.toBe(GLASS_QUESTION);
    const imgs = await view.locator('img').evaluateAll((els) => els.map((e) => { const i = e as unknown as { complete: boolean; naturalWidth: number }; return i.complete && i.naturalWidth > 0; }));
    expect(imgs.length).toBe(5);
    expect(imgs.every(Boolean)).toBe(true);
    await screenshot(view, 'demo-export-html');
    await view.close();
    for (const format of ['webp', 'gif'] as const) {
      await page.getByTestId(`export-${format}`).click();
      await page.getByTestId(`export-result-${format}`).waitFor({ timeout: 60_000 });
      const file = (await page.getByTestId(`export-result-${format}`).getAttribute('title'))!;
      const meta = await sharp(file, { animated: true }).metadata();
      expect(meta.format).toBe(format);
      expect(meta.pages).toBeGreaterThan(1);
      if (format === 'webp') {
        // Save the third frame (the first box) to look at.
        await sharp(file, { page: 1 }).png().toFile(path.join(RESULTS, 'demo-export-webp-frame2.png'));
      }
    }
    expect(errors).toEqual([]);
  });

  it('a stalled engine shows a clear error, keeps the partial turn, and the app stays usable', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'x', object: 'chat.completion.chunk', created: 0, model: 'stall', choices: [{ index: 0, delta: { content: 'Let me look at the glass' }, finish_reason: null }] };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    });
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const { page } = await newPage(browser);
      await openDemoWithImage(page, app);
      await page.getByTestId('engine-openai').click();
      await page.getByTestId('openai-url').fill(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
      await page.getByTestId('openai-model').fill('stall');
      await page.getByTestId('turn-timeout').fill('1500');
      await page.getByTestId('run').click();
      await page.getByTestId('demo-error').first().waitFor({ timeout: 30_000 });
      await expect(page.getByTestId('demo-error').first().textContent()).resolves.toMatch(/timed out/);
      await page.getByTestId('turn-card-0').filter({ hasText: 'Let me look at the glass' }).waitFor();
      await page.getByTestId('run-status').filter({ hasText: /^error$/ }).waitFor();
      await screenshot(page, 'demo-stalled-engine');
      // Still usable: the same page runs the replay to the end.
      await page.getByTestId('engine-replay').click();
      await page.getByTestId('run').click();
      await page.getByTestId('answer').filter({ hasText: 'green' }).waitFor();
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });

  it('an example scene runs on loupe-tiny: the crop box on the scene, the crop, the right boxed answer', async () => {
    const { page, errors } = await newPage(browser);
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('example-synth-9-00014').click();
    await page.getByTestId('media-summary').waitFor();
    await expect(page.getByTestId('question').inputValue()).resolves.toMatch(/\?|\./);
    await expect(page.getByTestId('local-model').inputValue()).resolves.toBe('loupe-tiny');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 120_000 });
    await page.getByTestId('trajectory-summary').waitFor();
    await page.getByTestId('crop-step-1').waitFor();
    await page.getByTestId('box-step-1').waitFor();
    await expect(page.getByTestId('step-list').textContent()).resolves.toContain('crop_image_normalized');
    // the ring of this held-out scene reads 352; the shipped model reads it (greedy, q8), as evaluate.ts measures
    await expect(page.getByTestId('answer').textContent()).resolves.toContain('\\boxed{352}');
    await screenshot(page, 'demo-loupe-tiny-example');
    await page.getByTestId('nav-models').click();
    await page.getByTestId('model-row-loupe-tiny').waitFor();
    await page.getByTestId('model-unload-loupe-tiny').click();
    await page.getByTestId('status-engine').filter({ hasText: 'idle' }).waitFor();
    expect(errors).toEqual([]);
  });

  it('runs the bundled tiny local model and manages it on the Models page', async () => {
    const { page, errors } = await newPage(browser);
    await observeLongTasks(page);
    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('model-row-tiny-random-qwen25vl').waitFor();
    await page.getByTestId('model-load-tiny-random-qwen25vl').click();
    await page.getByTestId('model-state-tiny-random-qwen25vl').filter({ hasText: 'running on cpu' }).waitFor({ timeout: 60_000 });
    await page.getByTestId('status-engine').filter({ hasText: 'ready' }).waitFor();
    // A folder that is not a model: the missing files are named.
    const bad = fs.mkdtempSync(path.join(app.workspace, 'notamodel-'));
    fs.writeFileSync(path.join(bad, 'config.json'), JSON.stringify({ model_type: 'qwen2_5_vl' }));
    await page.getByTestId('model-folder').fill(bad);
    await page.getByTestId('model-validate').click();
    await page.getByTestId('model-report').filter({ hasText: 'Not usable' }).waitFor();
    await expect(page.getByTestId('model-report').textContent()).resolves.toMatch(/tokenizer|onnx/);
    await screenshot(page, 'demo-models-page');
    // Run it from the Demo page.
    await page.getByTestId('nav-demo').click();
    await page.getByTestId('file-input').setInputFiles(GLASS);
    await page.getByTestId('media-summary').waitFor();
    await page.getByTestId('question').fill(GLASS_QUESTION);
    await page.getByTestId('engine-local').click();
    await page.getByTestId('local-model').selectOption('tiny-random-qwen25vl');
    // Random weights never stop on their own: keep the turn short.
    await page.getByTestId('max-tokens').fill('48');
    await takeLongTasks(page, 'models page + demo page (before the tiny model run)');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /done|error/ }).waitFor({ timeout: 90_000 });
    await takeLongTasks(page, 'tiny local model run');
    await page.getByTestId('trajectory-summary').waitFor();
    await screenshot(page, 'demo-local-tiny');
    await page.getByTestId('nav-models').click();
    await page.getByTestId('model-unload-tiny-random-qwen25vl').click();
    await page.getByTestId('status-engine').filter({ hasText: 'idle' }).waitFor();
    expect(errors).toEqual([]);
  });

  it('a video replay shows the selected frames as a strip with indices; a rejected call shows its exact error', async () => {
    const { page, errors } = await newPage(browser);
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('engine-replay').click();
    await page.getByTestId('replay-source').selectOption(`${VIDEO_RUN}::video-1`);
    await page.getByTestId('use-recorded').click();
    await page.getByTestId('media-summary').filter({ hasText: 'video: 3 frames' }).waitFor();
    await page.getByTestId('run').click();
    await page.getByTestId('answer').filter({ hasText: 'boxed{B}' }).waitFor();
    const labels = await page.getByTestId('frame-strip').locator('span').allTextContents();
    expect(labels).toEqual(['#1', '#3']);
    await screenshot(page, 'demo-video-frames');
    await page.getByTestId('replay-source').selectOption(`${ERROR_RUN}::error-1`);
    await page.getByTestId('use-recorded').click();
    await page.getByTestId('media-summary').filter({ hasText: '1 image' }).waitFor();
    await page.getByTestId('run').click();
    await page.getByTestId('answer').filter({ hasText: 'unknown' }).waitFor();
    await page.getByTestId('error-badge').waitFor();
    const shown = await page.getByTestId('error-text').textContent();
    // The card shows the observation exactly as the model received it.
    // The newest demo run by its samples file (run ids only have second resolution).
    const runsDir = path.join(app.workspace, 'demo');
    const mtime = (d: string) => fs.statSync(path.join(runsDir, d, 'samples.jsonl')).mtimeMs;
    const runId = fs.readdirSync(runsDir).filter((d) => d.includes('demo')).sort((a, b) => mtime(a) - mtime(b)).at(-1)!;
    const rec = JSON.parse(fs.readFileSync(path.join(runsDir, runId, 'samples.jsonl'), 'utf8').trim().split('\n').at(-1)!) as { trajectory: { turns: Array<{ observation: string }> } };
    expect(rec.trajectory.turns[0]!.observation).toContain('Execution error');
    expect(shown).toBe(rec.trajectory.turns[0]!.observation);
    await screenshot(page, 'demo-error-step');
    expect(errors).toEqual([]);
  });

  it('the upload route needs the token and names what is wrong with a bad file', async () => {
    const noToken = await fetch(`${app.url}/upload?name=x.jpg`, { method: 'POST', body: fs.readFileSync(GLASS) });
    expect(noToken.status).toBe(401);
    const notImage = await fetch(`${app.url}/upload?name=notes.txt&token=${app.token}`, { method: 'POST', body: 'hello' });
    expect(notImage.status).toBe(422);
    expect(((await notImage.json()) as { error: string }).error).toContain('notes.txt');
    const ok = await fetch(`${app.url}/upload?name=glass.jpg&token=${app.token}`, { method: 'POST', body: fs.readFileSync(GLASS) });
    expect(ok.status).toBe(200);
    const { media } = (await ok.json()) as { media: { id: string; width: number } };
    expect(media.width).toBe(1920);
    expect(fs.existsSync(path.join(app.workspace, 'media', media.id))).toBe(true);
  });
});

/**
 * The Demo says what loupe-tiny cannot do where the user meets it: with loupe-tiny as the local engine, an image that
 * is not one of its loupe-synth examples (here a screenshot of the app: a real, non-synth image) gets a one-line notice;
 * a bundled example scene does not.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

describe('Demo · loupe-tiny on an image it was not trained for', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    app = await startApp(tempWorkspace('loupe-tiny-notice-'));
    browser = await launchBrowser();
    ({ page, errors } = await newPage(browser, { width: 1280, height: 900 }));
    await page.goto(app.openUrl);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('one line under a non-synth image, none under an example scene', async () => {
    await page.getByTestId('engine-local').click();
    await page.getByTestId('media-path').fill(path.join(ROOT, 'docs/screenshots/demo.png'));
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByTestId('media-summary').waitFor();
    const notice = page.getByTestId('tiny-notice');
    await notice.waitFor();
    expect(await notice.textContent()).toBe('loupe-tiny knows only loupe-synth scenes.');
    // the whole line shows, not cut by the column
    expect(await notice.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    expect(await notice.evaluate((el) => el.getBoundingClientRect().height)).toBeLessThan(30); // one line
    await screenshot(page, 'demo-tiny-notice');
    await page.locator('[data-testid^="example-"]').first().click();
    await page.getByTestId('media-summary').waitFor();
    await expect.poll(() => notice.count()).toBe(0);
    expect(errors).toEqual([]);
  }, 180_000);
});

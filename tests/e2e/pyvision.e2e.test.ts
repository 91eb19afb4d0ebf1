/**
 * A PyVision trajectory end to end: a scripted engine replays PyVision-format model text (written for
 * this test from the PyVision spec, not recorded from a model: loupe-tiny cannot write code) through the
 * real episode loop and the real bubblewrap sandbox (system Python, Pillow, numpy, matplotlib); the run is
 * saved to a workspace, and the real app (browser mode) shows it in Chromium: the step cards carry the
 * coloured code, its printed text and its figures.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import type { Browser, Locator } from 'playwright-core';
import { ScriptedEngine, countCalls } from '../../app/agent';
import { runPyVisionEpisode } from '../../app/agent/pyvisionEpisode';
import { Workspace } from '../../app/workspace';
import { SharpImageOps } from '../../native/image/sharpImageOps';
import { startPySandbox } from '../../native/pysandbox';
import { rescoreRun } from '../../app/bench/rescore';
import { engineJudgeClient, JudgeCache, LlmJudgeScorer } from '../../app/bench/scorers/llmJudge';
import { OpenAIEngine } from '../../app/engines/openai/openaiEngine';
import { startOpenAIServer } from '../../app/engines/serve/openaiServer';
import { importRun, workspaceWriter } from '../../app/importers';
import { TranscriptJudgeEngine } from '../integration/judge/transcriptJudge';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const GLASS = path.join(ROOT, 'tests/fixtures/images/animate_glass.jpg');
// Written from the spec (labelled): two code turns (a zoom with a figure; a colour statistic with two
// figures), then the answer in PyVision's required format.
const TURNS = [
  "I'll zoom into the centre of the image to inspect the object.\n<code>\n```python\nw, h = image_clue_0.size\nprint(f'size: {w}x{h}')\ncrop = image_clue_0.crop((w // 4, h // 4, 3 * w // 4, 3 * h // 4))\nplt.figure(figsize=(4, 3))\nplt.imshow(crop)\nplt.axis('off')\nplt.show()\n```\n",
  "The crop shows a transparent object. Let me check its colour channels.\n<code>\n```python\nimport numpy as np\na = np.asarray(crop).astype(float)\nfor name, k in zip('RGB', range(3)):\n    print(name, round(a[..., k].mean(), 1))  # mean per channel\nplt.figure(figsize=(4, 2.5))\nplt.hist(a[..., 0].ravel(), bins=32, color='r')\nplt.show()\nplt.figure(figsize=(4, 2.5))\nplt.imshow(a.mean(axis=2), cmap='gray')\nplt.show()\n```\n",
  'The object is a clear drinking glass.\n<answer>\n\\boxed{a glass}\n</answer>',
];

/**
 * The natural sizes of the images a locator finds, read once each has finished loading: `decode()` settles when the image
 * is loaded (a broken one rejects and keeps 0 × 0). Reading sizes as soon as the element exists raced the load (a clean
 * clone's run read 0 for a figure that was still loading).
 */
async function loadedSizes(imgs: Locator): Promise<number[][]> {
  return imgs.evaluateAll(async (els) => {
    await Promise.all(els.map((i) => (i as HTMLImageElement).decode().catch(() => undefined)));
    return els.map((i) => [(i as HTMLImageElement).naturalWidth, (i as HTMLImageElement).naturalHeight]);
  });
}

describe('PyVision in the UI', () => {
  let app: AppProcess;
  let browser: Browser;
  let runId = '';
  let rescoredId = '';
  let importedPv = '';
  beforeAll(async () => {
    const dir = tempWorkspace('loupe-pyvision-e2e-');
    const ws = await new Workspace(dir).init();
    const ops = new SharpImageOps(ws.media);
    // First, since the Demo lists the newest recordings: a DeepEyes V* import re-scored by a judge that
    // flips its first 5 recorded verdicts (so the two scorers disagree on exactly those samples), served
    // over loopback HTTP.
    const { runId: imported } = await workspaceWriter(dir).write(await importRun('deepeyes', path.join(ROOT, 'tests/fixtures/importers/deepeyes'), { name: 'deepeyes-vstar' }));
    const judge = new TranscriptJudgeEngine();
    [...judge.replies.keys()].slice(0, 5).forEach((k) => judge.replies.set(k, judge.replies.get(k)!.includes('1') ? '0' : '1'));
    const server = await startOpenAIServer({ engine: judge, port: 0, modelId: 'judge' });
    try {
      const s = await rescoreRun({ store: ws.runs, runId: imported, scorer: new LlmJudgeScorer({ client: engineJudgeClient(new OpenAIEngine({ baseURL: server.url, model: 'judge', apiKey: server.apiKey ?? 'EMPTY' })), promptVersion: 'deepeyes-eval/v1', cache: JudgeCache.memory() }) });
      expect(s.disagreements).toBe(5);
      rescoredId = s.runId;
    } finally {
      await server.close();
    }
    // PyVision main.py's saved messages (fixtures built from its writer; no real file is public), imported with their images.
    ({ runId: importedPv } = await workspaceWriter(dir).write(await importRun('pyvision', path.join(ROOT, 'tests/fixtures/importers/pyvision'), { name: 'pyvision-import' })));
    const { trajectory, sandbox } = await runPyVisionEpisode({
      engine: new ScriptedEngine(TURNS, { model: 'scripted-pyvision' }),
      variant: 'PV',
      question: 'What is the object in the picture?',
      images: [GLASS],
      imageOps: ops,
      sandbox: (ep) => startPySandbox(ep),
    });
    expect(trajectory.stopReason).toBe('answer');
    const handle = await ws.runs.createRun({ name: 'pyvision-demo', kind: 'demo', model: { id: 'scripted-pyvision' }, engine: 'scripted', dialect: 'pyvision', prompt: 'vistool_with_img_info_v2', extra: { sandbox } });
    const { calls, toolErrors } = countCalls(trajectory);
    await handle.appendSample({ qid: 'glass', bench: 'demo', question: trajectory.question, answer: 'a glass', prediction: trajectory.finalText ?? '', score: 1, correct: true, stop_reason: trajectory.stopReason, calls, tool_errors: toolErrors, trajectory });
    await handle.close();
    runId = handle.id;
    app = await startApp(dir);
    browser = await launchBrowser();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('step cards show the coloured code, its text output and every figure', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1100 });
    await page.goto(`${app.openUrl}#/runs/${runId}/glass`);
    await page.getByTestId('code-step-1').waitFor();
    await expect(page.getByTestId('code-step-1').textContent()).resolves.toContain("crop = image_clue_0.crop((w // 4, h // 4, 3 * w // 4, 3 * h // 4))");
    // Colouring: keywords, calls, strings and comments are separate spans.
    expect(await page.getByTestId('code-step-2').locator('.py-kw').allTextContents()).toEqual(expect.arrayContaining(['import', 'as', 'for', 'in']));
    expect(await page.getByTestId('code-step-2').locator('.py-com').allTextContents()).toEqual(['# mean per channel']);
    await expect(page.getByTestId('stdout-step-1').textContent()).resolves.toMatch(/^size: \d+x\d+\n$/);
    await expect(page.getByTestId('stdout-step-2').textContent()).resolves.toMatch(/^R [\d.]+\nG [\d.]+\nB [\d.]+\n$/);
    await expect(page.getByTestId('figure-step-1').count()).resolves.toBe(1);
    await expect(page.getByTestId('figure-step-2').count()).resolves.toBe(2);
    // The figures are real images served from the workspace.
    const sizes = await loadedSizes(page.getByTestId('figure-step-2').locator('img'));
    expect(sizes).toEqual([[400, 250], [400, 250]]);
    await page.getByTestId('final-answer').waitFor();
    await screenshot(page, 'pyvision-step-cards');
    await page.getByTestId('figure-step-2').first().scrollIntoViewIfNeeded();
    await screenshot(page, 'pyvision-step-cards-2');
    expect(errors).toEqual([]);
  });

  it('an imported PyVision messages file shows its question image, code, printed text and figure', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs/${importedPv}/messages_glass`);
    await page.getByTestId('code-step-1').waitFor();
    await expect(page.getByTestId('code-step-1').textContent()).resolves.toContain("print('size', w, h)");
    await expect(page.getByTestId('stdout-step-1').textContent()).resolves.toBe('size 192 83\n');
    await expect(page.getByTestId('step-card-1').textContent()).resolves.toContain('ran (time not recorded)');
    await expect(page.getByTestId('figure-step-1').count()).resolves.toBe(1);
    const [fig] = await loadedSizes(page.getByTestId('figure-step-1').locator('img'));
    expect(fig![0]).toBeGreaterThan(0);
    await page.getByTestId('final-answer').waitFor();
    await screenshot(page, 'pyvision-import');
    expect(errors).toEqual([]);
  });

  it('a re-scored run shows both scores, and `disagree = true` lists exactly the samples the scorers disagree on', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 900 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId('sample-row').first().waitFor();
    await page.getByLabel(`select ${rescoredId}`).check();
    await page.getByLabel(`select ${runId}`).uncheck();
    await page.getByTestId('query-input').fill('disagree = true');
    await page.getByTestId('query-input').press('Enter');
    await page.waitForFunction(() => /^5 /.test(document.querySelector('[data-testid=row-count]')?.textContent ?? ''));
    const rows = page.getByTestId('sample-row');
    await expect(rows.count()).resolves.toBe(5);
    const cells = await page.getByTestId('score-pair').allTextContents();
    expect(cells).toHaveLength(5);
    // Original / llm-judge, with the mark: one says 1.00 and the other 0.00 on every listed row.
    for (const c of cells) expect(['≠1.00 / 0.00', '≠0.00 / 1.00']).toContain(c);
    expect(await rows.first().textContent()).toContain(rescoredId.slice(0, 8));
    await screenshot(page, 'rescore-disagreements');
    expect(errors).toEqual([]);
  });

  it("Demo step mode: the user edits the model's code before it runs; the edited code runs in the sandbox", async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1100 });
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('engine-replay').click();
    const option = page.getByTestId('replay-source').locator('option', { hasText: 'pyvision-demo / glass' }).first();
    await option.waitFor({ state: 'attached' });
    await page.getByTestId('replay-source').selectOption((await option.getAttribute('value'))!);
    await page.getByTestId('use-recorded').click();
    await expect(page.getByTestId('dialect').inputValue()).resolves.toBe('pyvision');
    await page.getByTestId('step-mode').check();
    await page.getByTestId('run').click();
    await page.getByTestId('pause-panel').filter({ hasText: "turn 1's call" }).waitFor().catch(async (err: unknown) => {
      await screenshot(page, 'pyvision-demo-failure');
      throw err;
    });
    const editor = page.getByTestId('code-editor');
    await expect(editor.inputValue()).resolves.toContain("print(f'size: {w}x{h}')");
    // The editor paints the code with the step cards' colouring: the model's code before the edit ...
    const paint = page.getByTestId('code-editor-paint');
    expect(await paint.locator('.py-fn').allTextContents()).toEqual(['crop', 'figure', 'imshow', 'axis', 'show']);
    expect(await paint.locator('.py-builtin').allTextContents()).toEqual(['print']);
    await editor.fill("w, h = image_clue_0.size\ncrop = image_clue_0.crop((0, 0, w // 2, h // 2))\n# a person's version\nprint('edited by a person:', w * h, 'pixels')\nplt.imshow(crop)\nplt.show()");
    // ... and the person's code as they type it (the comment and the string are coloured spans).
    await expect(paint.locator('.py-com').allTextContents()).resolves.toEqual(["# a person's version"]);
    await expect(paint.locator('.py-str').allTextContents()).resolves.toEqual(["'edited by a person:'", "'pixels'"]);
    // The painted text is exactly the textarea's (same text, so the colours sit under the caret).
    expect(await paint.textContent()).toBe(await editor.inputValue());
    await page.getByTestId('edited-code-note').waitFor();
    await screenshot(page, 'pyvision-demo-edit-code');
    await page.getByTestId('continue-edited').click();
    await page.getByTestId('pause-panel').filter({ hasText: "turn 2's call" }).waitFor();
    await page.getByTestId('continue-run').click();
    // Both branches are kept: the edited one, then the model's own code run without pauses.
    await page.getByTestId('branch-b1').waitFor({ timeout: 60_000 });
    await page.getByTestId('run-status').filter({ hasText: 'done' }).waitFor({ timeout: 60_000 });
    await expect(page.getByTestId('branch-b0').textContent()).resolves.toBe('Edited');
    await expect(page.getByTestId('branch-b1').textContent()).resolves.toBe('Original');
    await page.getByTestId('branch-b0').click();
    await expect(page.getByTestId('code-step-1').textContent()).resolves.toContain("print('edited by a person:', w * h, 'pixels')");
    await expect(page.getByTestId('stdout-step-1').textContent()).resolves.toBe('edited by a person: 1593600 pixels\n');
    await expect(page.getByTestId('step-card-1').locator('.tv-tag-edited').count()).resolves.toBe(1);
    await expect(page.getByTestId('figure-step-1').count()).resolves.toBe(1);
    await expect(page.getByTestId('figure-step-2').count()).resolves.toBe(2);
    await screenshot(page, 'pyvision-demo-edited-run');
    await page.getByTestId('compare-branches').click();
    await page.getByTestId('branch-compare').waitFor();
    const orig = page.getByTestId('trajectory-b1');
    await expect(orig.getByTestId('code-step-1').textContent()).resolves.toContain("print(f'size: {w}x{h}')");
    await expect(orig.getByTestId('stdout-step-1').textContent()).resolves.toMatch(/^size: \d+x\d+\n$/);
    await expect(orig.getByTestId('step-card-1').locator('.tv-tag-edited').count()).resolves.toBe(0);
    // The two branches ran different code, so their first figures differ.
    const f0 = await page.getByTestId('trajectory-b0').getByTestId('figure-step-1').locator('img').getAttribute('src');
    const f1 = await orig.getByTestId('figure-step-1').locator('img').getAttribute('src');
    expect(f0).toBeTruthy();
    expect(f0).not.toBe(f1);
    await screenshot(page, 'pyvision-demo-branches-compare');
    expect(errors).toEqual([]);
  });
});

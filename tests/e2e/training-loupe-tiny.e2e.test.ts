/**
 * The loupe-tiny local fine-tune from the Training page, for real: Chromium drives the app, the local connector runs
 * models/loupe-tiny/finetune.sh (loupe synth → prepare.ts through the agent loop → train.py on this CPU with python3 +
 * torch; the grounded recipe with the reading signals), and the loss chart fills from the trainer's verl console lines
 * while the job runs. Then a job with a missing base model fails at once with the driver's message.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { openTrainingPage, ROOT, screenshot, waitJobViewState, type AppProcess } from './harness';

type Doc = { querySelector(s: string): { textContent: string | null; getAttribute(a: string): string | null } | null };

// loupe-tiny ships its trainable weights (fp16): the fine-tune starts from the shipped model.
const BASE = 'models/loupe-tiny/model';

async function fill(page: Page, field: string, value: string): Promise<void> {
  await page.locator(`[data-field="${field}"] input`).fill(value);
}

describe('Training page · loupe-tiny local fine-tune', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    ({ app, browser, page, errors } = await openTrainingPage('loupe-training-tiny-', { width: 1440, height: 1100 }));
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('runs synth → prepare → train on this CPU with a live loss chart, then offers the model as a checkpoint', async () => {
    const select = page.getByTestId('template-select');
    await select.waitFor();
    await select.selectOption('loupe-tiny-finetune');
    // Available here: the trainer has its flags and python3 imports torch.
    expect(await select.locator('option[value="loupe-tiny-finetune"]').textContent()).not.toMatch(/not in this build/);
    await expect(page.getByTestId('template-notice').textContent()).resolves.toMatch(/^Runs here: synth → prepare → train on \S+ \(torch [\d.]+/);
    // The form validates before anything runs.
    await fill(page, 'scenes', '0');
    await expect(page.locator('[data-field="scenes"] [data-testid=field-error]').textContent()).resolves.toBe('scenes must be > 0');
    expect(await page.getByTestId('submit-job').isDisabled()).toBe(true);
    // Tiny sizes: 6 scenes, 6 steps of batch 4, validation every 3 steps.
    await fill(page, 'scenes', '6');
    await fill(page, 'maxSteps', '6');
    await fill(page, 'valEvery', '3');
    await fill(page, 'baseModel', BASE);
    await page.locator('[data-field="exportOnnx"] input').check();
    // The grounded recipe with the reading signals (train.py's training-only auxiliary losses). Their pointer sits on
    // text layer 2 unless told otherwise; tiny-random-qwen25vl has only 2 layers, so the expert field moves it to 1.
    await page.locator('[data-field="recipe"] select').selectOption('grounded');
    await page.locator('[data-field="reading"] input').check();
    await fill(page, 'trainArgs', '--aux-attn-layer 1');
    await page.getByTestId('job-name').fill('tiny-ft');
    await page
      .getByTestId('script-preview')
      .filter({ hasText: `--init "$loupe_dir"/${BASE}` })
      .filter({ hasText: '--scenes 6' })
      .filter({ hasText: '--max-steps 6' })
      .filter({ hasText: '--export fp32,q8' })
      .filter({ hasText: '--recipe grounded' })
      .filter({ hasText: '--reading 1' })
      .filter({ hasText: "--train-args '--aux-attn-layer 1'" })
      .waitFor();
    await expect(page.getByTestId('submit-job').textContent()).resolves.toBe('Submit');
    await page.getByTestId('submit-job').click();
    await page.locator('[data-testid=job-view] .tr-jobview-title', { hasText: 'tiny-ft' }).waitFor();

    // Each phase says what it does, in order, while the job runs.
    const log = page.getByTestId('job-log');
    await log.filter({ hasText: '[1/3] synth: 6 scenes, seed 4000' }).waitFor({ timeout: 60_000 });
    await log.filter({ hasText: '[2/3] prepare: replaying each trajectory' }).waitFor({ timeout: 120_000 });
    await log.filter({ hasText: '[3/3] train:' }).waitFor({ timeout: 120_000 });
    // The loss chart grows from the trainer's step lines before the job ends.
    await page.waitForFunction(
      () => {
        const d = (globalThis as unknown as { document: Doc }).document;
        const n = Number(d.querySelector('[data-testid=metric-chart][data-metric="train/loss"]')?.getAttribute('data-points') ?? 0);
        return n >= 2 && d.querySelector('[data-testid=job-view] [data-testid=job-state]')?.textContent === 'running';
      },
      undefined,
      { timeout: 240_000, polling: 100 },
    );
    await screenshot(page, 'training-loupe-tiny-running');
    await waitJobViewState(page, 'succeeded', 240_000);
    const text = (await log.textContent()) ?? '';
    expect(text).toMatch(/step:1 - train\/loss:[\d.]+ - train\/lr:/);
    // the driver passed the recipe's and the reading's flags, then the expert extras, and train.py trained with them
    expect(text).toContain('--aug-flips --aux-target 1 --aux-pos 3 --aux-attn 1 --aux-attn-layer 2 --aux-read 10 --box-weight 3 --first-turns 2 --aux-glyph 1 --aux-attn2 1 --aux-attn-layer 1');
    expect(text).toMatch(/first-turn diet: \d+ training sequences/);
    // with synthesized scenes the reading recipe also builds half of every batch afresh from them (scene_traj.py), with
    // the glyph pointer on their reading turns
    expect(text).toMatch(/--scenes \S+ --scene-frac 0\.5 --aux-digit 1/);
    expect(text).toMatch(/step:\d+ - train\/loss:[\d.]+ - .* - train\/aux_digit:[\d.]+/);
    expect(text).toMatch(/fresh zoom trajectories: [1-9]\d* scenes from 1 folder\(s\) \(\d+s\), 2 of every batch of 4/);
    expect(text).toMatch(/step:1 - train\/loss:[\d.]+ - .* - train\/aux_tgt:[\d.]+ - .*train\/aux_attn:[\d.]+/);
    expect(text).toMatch(/step:3 - val\/loss:.* - val\/aux_glyph:[\d.]+ - .*val\/aux_attn2:[\d.]+/);
    expect(text).toMatch(/step:3 - val\/loss:[\d.]+ - val\/seq_exact:/);
    // The first logged validation is the shipped model's: the same train.py command with no step (--max-steps 0)
    // evaluates the shipped weights on the same validation split and logs the same line.
    const first = /^step:0 - val\/loss:.*$/m.exec(text)?.[0];
    expect(first).toBeDefined();
    expect(text.indexOf(first!)).toBeLessThan(text.indexOf('step:1 - train/loss:'));
    const cmd = /^\[3\/3\] train: (\S+) models\/loupe-tiny\/train\.py (.+)$/m.exec(text);
    expect(cmd).not.toBeNull();
    const again = mkdtempSync(path.join(os.tmpdir(), 'loupe-tiny-step0-'));
    try {
      const args = cmd![2]!.split(' ');
      const set = (flag: string, v: string): void => {
        const i = args.indexOf(flag);
        if (i >= 0) args[i + 1] = v;
        else args.push(flag, v);
      };
      set('--out', again);
      set('--max-steps', '0');
      set('--export', 'none');
      expect(args[args.indexOf('--init') + 1]).toBe(path.join(ROOT, BASE));
      const r = spawnSync(cmd![1]!, ['models/loupe-tiny/train.py', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(/^step:0 - val\/loss:.*$/m.exec(r.stdout)?.[0]).toBe(first);
    } finally {
      rmSync(again, { recursive: true, force: true });
    }
    expect(text).toMatch(/done: \S+\/model/);
    expect(text).toMatch(/LOUPE_CHECKPOINT: \S+\/model/);
    // The ONNX export needs Hugging Face transformers and onnx, which no Debian package provides: with them the
    // driver offers an ONNX model folder, without them it says the PyTorch weights are there and why.
    const py = /loupe-tiny: python (\S+)/.exec(text)?.[1] ?? 'python3';
    const hasExport = spawnSync(py, ['-c', 'import transformers, onnx']).status === 0;
    if (hasExport) expect(text).toMatch(/LOUPE_MODEL: \S+\/model/);
    else {
      console.warn(`[training-loupe-tiny] ${py} has no transformers/onnx: checked the no-export message instead of LOUPE_MODEL`);
      expect(text).toMatch(/no ONNX export in \S+\/model \(export was/);
    }
    const points = Number(await page.locator('[data-testid=metric-chart][data-metric="train/loss"]').getAttribute('data-points'));
    expect(points).toBe(6);
    expect(Number(await page.locator('[data-testid=metric-chart][data-metric="val/loss"]').getAttribute('data-points'))).toBeGreaterThanOrEqual(2);

    // The output model folder (in the job's folder) is offered as a checkpoint with its eval command.
    const model = path.join(app.workspace, 'training', 'jobs');
    await page.getByTestId('checkpoints').waitFor();
    const ckpt = (await page.locator('[data-testid=checkpoints] code').first().textContent()) ?? '';
    expect(ckpt.startsWith(model)).toBe(true);
    expect(ckpt.endsWith('/model')).toBe(true);
    expect(existsSync(path.join(ckpt, 'model.safetensors'))).toBe(true);
    await page.getByTestId('prepare-eval').first().click();
    await expect(page.getByTestId('eval-command').textContent()).resolves.toBe(`npx loupe eval --model ${ckpt} --bench vstar --run tiny-ft-model`);
    // With its ONNX export the folder goes into the Models registry, and the Models page lists it; without one
    // (no transformers/onnx here) adding it is refused with a result, not a hang.
    await page.getByTestId('add-to-models').first().click();
    if (!hasExport) {
      await page.locator('[data-testid=add-to-models-result][data-ok="false"]').waitFor({ timeout: 30_000 });
      return;
    }
    await page.locator('[data-testid=add-to-models-result][data-ok="true"]').waitFor({ timeout: 30_000 });
    const added = (await page.getByTestId('add-to-models-result').textContent()) ?? '';
    const id = /added as "([^"]+)"/.exec(added)?.[1] ?? '';
    expect(added).toMatch(/\(fp32, q8|\(q8, fp32/);
    await page.getByTestId('metric-chart').first().scrollIntoViewIfNeeded();
    await screenshot(page, 'training-loupe-tiny');
    await page.goto(`${app.url}/#/models`);
    await page.getByTestId(`model-row-${id}`).waitFor();
    await page.goto(`${app.url}/#/training`);
    await page.getByTestId('training-page').waitFor();
  }, 600_000);

  it('a missing base model fails the job at once with the driver’s message', async () => {
    await page.getByTestId('template-select').selectOption('loupe-tiny-finetune');
    await fill(page, 'baseModel', '/nonexistent/loupe-model');
    await page.getByTestId('job-name').fill('tiny-bad');
    await page.getByTestId('script-preview').filter({ hasText: '--init /nonexistent/loupe-model' }).waitFor();
    await page.getByTestId('submit-job').click();
    await page.locator('[data-testid=job-view] .tr-jobview-title', { hasText: 'tiny-bad' }).waitFor();
    await waitJobViewState(page, 'failed', 30_000);
    await page.getByTestId('job-log').filter({ hasText: 'loupe-tiny: base model folder /nonexistent/loupe-model does not exist' }).waitFor();
    await expect(page.getByTestId('job-log').textContent()).resolves.not.toContain('[1/3]');
    await expect(page.getByTestId('job-message').textContent()).resolves.toMatch(/exited with code 2/);
    await screenshot(page, 'training-loupe-tiny-failed');
    expect(errors).toEqual([]);
  }, 60_000);
});

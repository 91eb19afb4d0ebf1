/**
 * Training page in Chromium against the real app (browser mode): template forms validated by the core, a local job
 * that prints verl-format metric lines (the "Custom bash script" job type; its default script is synthetic and
 * trains nothing), live log + charts, cancel, a pinned baseline, the eval command for a checkpoint, and — when
 * ci/services-up.sh has started Slurm + sshd — a job submitted through a Slurm-over-SSH connector added in the UI.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { openTrainingPage, screenshot, waitJobViewState, type AppProcess } from './harness';
import { skipUnless } from '../support/requirements';

const SERVICES_ENV = process.env.LOUPE_CI_ENV ?? path.join(os.tmpdir(), 'loupe-ci', 'services.env');

function servicesEnv(): Record<string, string> | null {
  if (!existsSync(SERVICES_ENV)) return null;
  const kv: Record<string, string> = {};
  for (const line of readFileSync(SERVICES_ENV, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) kv[m[1] as string] = m[2] as string;
  }
  return kv;
}

async function chartPoints(page: Page, metric: string): Promise<number> {
  return Number(await page.locator(`[data-testid=metric-chart][data-metric="${metric}"]`).getAttribute('data-points'));
}

async function submitCustom(page: Page, name: string, script?: string): Promise<string> {
  await page.getByTestId('template-select').selectOption('custom-script');
  if (script !== undefined) await page.locator('[data-field="script"] textarea').fill(script);
  await page.getByTestId('job-name').fill(name);
  await page.getByTestId('script-preview').waitFor();
  // The preview re-renders shortly after typing: wait for the core's version of the typed script.
  if (script !== undefined) await page.getByTestId('script-preview').filter({ hasText: script.split('\n')[0] as string }).waitFor();
  await page.getByTestId('submit-job').click();
  const view = page.locator(`[data-testid=job-view]`);
  await page.waitForFunction((n) => {
    const el = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document.querySelector('[data-testid=job-view] .tr-jobview-title');
    return el?.textContent === n;
  }, name);
  return (await view.getAttribute('data-key')) ?? '';
}

describe('Training page', () => {
  let app: AppProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let firstKey = '';
  beforeAll(async () => {
    ({ app, browser, page, errors } = await openTrainingPage('loupe-training-', { width: 1440, height: 1000 }));
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('builds forms from the template schemas and shows the core’s validation next to each field', async () => {
    const select = page.getByTestId('template-select');
    await select.waitFor();
    // The template list arrives once the core has checked for the loupe-tiny trainer's Python (torch import).
    await select.locator('option[value="custom-script"]').waitFor({ state: 'attached' });
    const options = await select.locator('option').allTextContents();
    expect(options.length).toBe(8);
    // The local loupe-tiny fine-tune (its own e2e test runs it): the notice says whether it runs here and why.
    await select.selectOption('loupe-tiny-finetune');
    await expect(page.getByTestId('template-notice').textContent()).resolves.toMatch(/^Runs here: synth → prepare → train|needs Python 3 with torch|predates the local fine-tune|not part of this build/);
    // A bad value: the core says so next to that field, and no script is offered.
    await page.locator('[data-field="batchSize"] input').fill('0');
    await expect(page.locator('[data-field="batchSize"] [data-testid=field-error]').textContent()).resolves.toBe('batchSize must be > 0');
    await page.getByTestId('script-preview-empty').waitFor();
    expect(await page.getByTestId('submit-job').isDisabled()).toBe(true);
    await page.locator('[data-field="batchSize"] input').fill('4');
    await page.getByTestId('script-preview').filter({ hasText: 'models/loupe-tiny/finetune.sh' }).waitFor();

    await select.selectOption('verl-tool-pixel-reasoner-grpo');
    // Defaults come from the template schema (seeded from the upstream launch script).
    await expect(page.locator('[data-field="n"] input').inputValue()).resolves.toBe('8');
    await expect(page.locator('[data-field="model"] input').inputValue()).resolves.toBe('TIGER-Lab/PixelReasoner-WarmStart');
    await expect(page.getByTestId('script-preview').textContent()).resolves.toContain('verl_tool.trainer.main_ppo');
    await expect(page.getByTestId('script-preview').textContent()).resolves.toContain('actor_rollout_ref.rollout.n=8');
    await page.locator('[data-field="n"] input').fill('1');
    await expect(page.locator('[data-field="n"] [data-testid=field-error]').textContent()).resolves.toMatch(/GRPO needs n ≥ 2/);
    await page.locator('[data-field="n"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'training-form-validation');
    await page.locator('[data-field="ppoMiniBatchSize"] input').fill('abc');
    await expect(page.locator('[data-field="ppoMiniBatchSize"] [data-testid=field-error]').textContent()).resolves.toMatch(/number/);
    await page.locator('[data-field="ppoMiniBatchSize"] input').fill('64');
    await page.locator('[data-field="n"] input').fill('16');
    await page.getByTestId('script-preview').filter({ hasText: 'actor_rollout_ref.rollout.n=16' }).waitFor();
  });

  it('runs a local job: live log, a chart that grows, success, a checkpoint and its eval command', async () => {
    firstKey = await submitCustom(page, 'metrics-a');
    expect(firstKey).toMatch(/^local\/local-\d{13}-[0-9a-f]{8}$/);
    // The log arrives while the job runs.
    await page.waitForFunction(() => {
      const d = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document;
      return /step:2 /.test(d.querySelector('[data-testid=job-log]')?.textContent ?? '') && d.querySelector('[data-testid=job-view] [data-testid=job-state]')?.textContent === 'running';
    }, undefined, { timeout: 30_000 });
    const early = await chartPoints(page, 'critic/score/mean');
    expect(early).toBeGreaterThanOrEqual(1);
    await screenshot(page, 'training-live');
    await waitJobViewState(page, 'succeeded');
    const final = await chartPoints(page, 'critic/score/mean');
    expect(final).toBe(12);
    expect(final).toBeGreaterThan(early);
    // Headline metrics the parser found are charted: reward/score, accuracy, tool calls, response length, loss.
    const charted = await page.getByTestId('metric-chart').evaluateAll((els) => els.map((e) => e.getAttribute('data-metric')));
    expect(charted).toEqual(expect.arrayContaining(['critic/score/mean', 'val/accuracy', 'tool/call_rate', 'response_length/mean', 'actor/pg_loss']));
    await expect(page.getByTestId('job-log').textContent()).resolves.toContain('step:12 - critic/score/mean:np.float64(');
    // The checkpoint line → a prepared `loupe eval` command.
    await page.getByTestId('prepare-eval').first().click();
    const cmd = (await page.getByTestId('eval-command').textContent()) ?? '';
    expect(cmd).toMatch(/^npx loupe eval --model \S+checkpoints\/global_step_12 --bench vstar --run metrics-a-global_step_12$/);
    expect(cmd).toContain(path.join(app.workspace, 'training', 'jobs'));
    await screenshot(page, 'training-succeeded');
    // The record is on disk.
    const lines = readFileSync(path.join(app.workspace, 'training', 'jobs.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { key: string; state: string });
    expect(lines.filter((l) => l.key === firstKey).at(-1)?.state).toBe('succeeded');
  }, 120_000);

  it('cancels a running job and shows its state in the view and the list', async () => {
    const key = await submitCustom(page, 'to-cancel', 'echo "waiting to be cancelled"\nsleep 300');
    await waitJobViewState(page, 'running', 30_000);
    await page.getByTestId('view-cancel').click();
    await waitJobViewState(page, 'cancelled', 30_000);
    await page.locator(`[data-testid=job-row][data-key="${key}"] [data-testid=job-state][data-state="cancelled"]`).waitFor();
    // The backend's last log bytes may land just after the state flips: the log still shows what the job printed.
    await page.getByTestId('job-log').filter({ hasText: 'waiting to be cancelled' }).waitFor();
    await expect(page.getByTestId('job-cancel').count()).resolves.toBe(0);
    await screenshot(page, 'training-cancelled');
  }, 90_000);

  it('pins an earlier job as the baseline of another job’s charts', async () => {
    // Same synthetic script with a lower score curve.
    await page.getByTestId('template-select').selectOption('custom-script');
    const area = page.locator('[data-field="script"] textarea');
    await area.fill((await area.inputValue()).replace('0.2 + 0.05*s', '0.1 + 0.03*s').replace('seq 1 12', 'seq 1 8'));
    await page.getByTestId('job-name').fill('metrics-b');
    await page.getByTestId('script-preview').filter({ hasText: 'seq 1 8' }).waitFor();
    await page.getByTestId('submit-job').click();
    await page.locator('[data-testid=job-view] .tr-jobview-title', { hasText: 'metrics-b' }).waitFor();
    await page.getByTestId('baseline-select').selectOption(firstKey);
    const chart = page.locator('[data-testid=metric-chart][data-metric="critic/score/mean"]');
    await page.waitForFunction(() => {
      const d = (globalThis as unknown as { document: { querySelector(s: string): { getAttribute(a: string): string | null } | null } }).document;
      return d.querySelector('[data-testid=metric-chart][data-metric="critic/score/mean"]')?.getAttribute('data-baseline') === '12';
    });
    await waitJobViewState(page, 'succeeded');
    expect(await chart.getAttribute('data-points')).toBe('8');
    expect(await chart.locator('[data-testid=baseline-line]').count()).toBe(1);
    await screenshot(page, 'training-baseline');
  }, 90_000);

  it('submits through a Slurm-over-SSH connector added in the UI (real Slurm + sshd from ci/services-up.sh)', async (ctx) => {
    const env = servicesEnv();
    skipUnless(ctx, !!env, { what: 'real Slurm and sshd', reason: `${SERVICES_ENV} not found; \`npm test\` starts them, or run \`sudo bash ci/services-up.sh\``, provisioned: true });
    if (!env) return;
    const need = (k: string): string => {
      const v = env[k];
      if (!v) throw new Error(`${SERVICES_ENV} lacks ${k}; re-run ci/services-up.sh`);
      return v;
    };
    const key = readFileSync(need('LOUPE_SSH_KEY'), 'utf8');
    await page.getByTestId('connector-add').click();
    await page.getByTestId('conn-kind').selectOption('slurm-ssh');
    await page.getByTestId('conn-name').fill('ci-slurm');
    await page.getByTestId('conn-host').fill(need('LOUPE_SSH_HOST'));
    await page.getByTestId('conn-port').fill(need('LOUPE_SSH_PORT'));
    await page.getByTestId('conn-user').fill(need('LOUPE_SSH_USER'));
    await page.getByTestId('conn-keySecret').fill('ssh/ci-slurm');
    await page.getByTestId('conn-knownHosts').fill(readFileSync(need('LOUPE_SSH_KNOWN_HOSTS'), 'utf8'));
    await page.getByTestId('conn-remoteDir').fill(`${need('LOUPE_SLURM_JOBS_DIR')}/loupe-ui-e2e`);
    await page.getByTestId('conn-slurmConf').fill(need('LOUPE_SLURM_CONF'));
    await page.getByTestId('conn-partition').fill(need('LOUPE_SLURM_PARTITION'));
    await page.getByTestId('conn-secret').fill(key);
    await page.getByTestId('conn-save').click();
    await page.getByTestId('connector-editor').waitFor({ state: 'detached' });
    await expect(page.getByTestId('connector-select').inputValue()).resolves.toBe('ci-slurm');
    // The key went into the encrypted store only.
    const keyBody = key.split('\n')[1] ?? key;
    for (const f of ['training/connectors.json', 'training/secrets.enc.json', 'settings.json']) {
      const p = path.join(app.workspace, f);
      if (existsSync(p)) expect(readFileSync(p, 'utf8')).not.toContain(keyBody);
    }
    await page.getByTestId('connector-probe').click();
    await page.locator('[data-testid=probe-result].tr-ok').waitFor({ timeout: 30_000 });
    await expect(page.getByTestId('probe-result').textContent()).resolves.toMatch(/slurm/i);
    await screenshot(page, 'training-slurm-connector');

    const jobKey = await submitCustom(page, 'slurm-metrics');
    expect(jobKey).toMatch(/^ci-slurm\/\d+$/);
    await waitJobViewState(page, 'succeeded', 90_000);
    expect(await chartPoints(page, 'critic/score/mean')).toBe(12);
    await expect(page.getByTestId('job-log').textContent()).resolves.toContain('synthetic verl-format metrics on');
    await screenshot(page, 'training-slurm-job');
  }, 150_000);

  it('keeps jobs across a reload (records in training/jobs.jsonl) and logged no page errors', async () => {
    const before = await page.getByTestId('job-row').count();
    await page.reload();
    await page.getByTestId('job-row').first().waitFor();
    expect(await page.getByTestId('job-row').count()).toBe(before);
    expect(before).toBeGreaterThanOrEqual(3);
    await page.locator(`[data-testid=job-row][data-key="${firstKey}"]`).click();
    await waitJobViewState(page, 'succeeded');
    expect(await chartPoints(page, 'critic/score/mean')).toBe(12);
    // The same view in the dark theme (for the screenshot; the theme switch itself is the shell test's).
    await page.goto(`${app.url}/#/settings`);
    await page.getByTestId('theme-dark').click();
    await page.goto(`${app.url}/#/training`);
    await page.locator(`[data-testid=job-row][data-key="${firstKey}"]`).click();
    await page.locator('[data-testid=metric-chart][data-metric="critic/score/mean"][data-points="12"]').waitFor();
    await screenshot(page, 'training-dark');
    expect(errors).toEqual([]);
  }, 60_000);
});

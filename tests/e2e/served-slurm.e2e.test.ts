/**
 * A model on the cluster drives the Demo on this machine: the served-engine launcher submits `loupe serve-model`
 * (tiny random Qwen2.5-VL, real ONNX on CPU) as a job on the REAL local Slurm, reaches it through an ssh2 tunnel
 * via the REAL sshd, and the Demo page in Chromium runs a trajectory through the tunnel as an OpenAI-compatible
 * engine (URL, model name, key). Then the job is cancelled on the cluster: the engine reports it, and the next
 * Demo run ends in an error, not a hang. Screenshots: test-results/served-slurm-*.png.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SlurmSshConnector } from '../../app/connectors/slurm';
import { ServedEngineLauncher, type ServedEngine } from '../../app/engines/served/launcher';
import { SERVICES, loadServicesEnv, type ServicesEnv } from '../integration/connectors/servicesEnv';
import { ciSlurm, waitFor } from '../integration/cluster/helpers';
import { describeIf } from '../support/requirements';
import { GLASS, GLASS_QUESTION } from './demo.fixture';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const env = loadServicesEnv();

describeIf(!!env, SERVICES, 'Demo through an SSH tunnel to a served engine on Slurm', () => {
  const e = env as ServicesEnv;
  let app: AppProcess;
  let browser: Browser;
  let slurm: SlurmSshConnector;
  let launcher: ServedEngineLauncher;
  let served: ServedEngine;
  beforeAll(async () => {
    slurm = ciSlurm(e, `${e.jobsDir}/served-e2e`);
    launcher = new ServedEngineLauncher({ loupeBin: path.join(ROOT, 'bin', 'loupe.mjs') });
    served = launcher.start({ backend: 'loupe', modelDir: path.join(ROOT, 'models', 'tiny-random-qwen25vl') }, { kind: 'slurm', connector: slurm, cwd: ROOT, resources: { cpus: 1 } }, { healthEveryMs: 1000, readyTimeoutMs: 300_000 });
    app = await startApp(tempWorkspace('loupe-served-e2e-'));
    browser = await launchBrowser();
    await served.ready;
  }, 400_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await launcher?.stopAll();
    await slurm?.close();
  });

  it('runs a Demo trajectory through the tunnel; a cancelled job ends the next run with an error', async () => {
    const st = served.state();
    expect(st.status).toBe('ready');
    expect(st.jobId).toMatch(/^\d+$/);
    const { page, errors } = await newPage(browser, { width: 1400, height: 950 });
    await page.goto(`${app.openUrl}#/demo`);
    await page.getByTestId('file-input').setInputFiles(GLASS);
    await page.getByTestId('media-summary').waitFor();
    await page.getByTestId('question').fill(GLASS_QUESTION);
    await page.getByTestId('engine-openai').click();
    await page.getByTestId('openai-url').fill(st.baseURL!);
    await page.getByTestId('openai-model').fill(served.spec.modelName);
    await page.getByTestId('openai-key').fill(served.apiKey!);
    await page.getByTestId('max-tokens').fill('32');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /^done$/ }).waitFor({ timeout: 180_000 });
    await page.getByTestId('trajectory-summary').waitFor();
    await screenshot(page, 'served-slurm-demo-done');
    // The turn's text came from the server on the node (its log shows the request).
    expect(served.log.some((l) => l.startsWith('serving '))).toBe(true);

    execFileSync('scancel', [st.jobId!], { env: { ...process.env, SLURM_CONF: e.slurmConf } });
    await waitFor('the engine to report the cancelled job', () => served.state().status === 'error', 60_000);
    expect(served.state().message).toMatch(new RegExp(`Slurm job ${st.jobId} ended \\(CANCELLED`));
    await page.getByTestId('turn-timeout').fill('20000');
    await page.getByTestId('run').click();
    await page.getByTestId('run-status').filter({ hasText: /^error$/ }).waitFor({ timeout: 120_000 });
    await screenshot(page, 'served-slurm-demo-after-cancel');
    expect(errors).toEqual([]);
  }, 600_000);
});

/**
 * Devices, errors, forms and Settings as a new user meets them, in Chromium against the real app (browser mode):
 * - Models lists the devices this onnxruntime-node can run here (real detection: a one-node model on each provider),
 *   with a one-line reason and how to get each missing one; platform-only providers (DirectML, CoreML) are not offered.
 * - A workspace whose settings ask for WebGPU (copied from a machine with a GPU) loads loupe-tiny on the CPU, and the
 *   Models table says why in one line; onnxruntime's 300-character assertion waits behind "details".
 * - Connector forms mark required fields and say what is missing in words, under the field (no zod text).
 * - A Ray test against a closed loopback port says the connection was refused.
 * - Settings: workspace (next start), default model, device, threads and keys (names only, never values), persisted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser, newPage, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';
import { closedPort } from '../support/ports';


describe('devices, errors, forms and Settings', () => {
  let app: AppProcess;
  let browser: Browser;
  let configDir: string;
  beforeAll(async () => {
    const ws = tempWorkspace('loupe-devices-');
    // As if copied from a machine with a GPU: this one has no WebGPU adapter.
    fs.writeFileSync(path.join(ws, 'settings.json'), JSON.stringify({ device: 'webgpu' }));
    // The workspace chosen on the Settings page is kept per user: a temporary config folder, not the real one.
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-config-'));
    process.env.LOUPE_CONFIG_DIR = configDir;
    app = await startApp(ws);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('Models: detected devices with one-line reasons; a device that fails loads on the CPU and says why in one line', async () => {
    const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/models`);
    await page.getByTestId('device-list').waitFor({ timeout: 60_000 });
    await expect(page.getByTestId('device-cpu').getAttribute('data-available')).resolves.toBe('true');
    // This machine has no GPU driver: WebGPU is listed, unavailable, with the reason in words and how to get it.
    await expect(page.getByTestId('device-webgpu').getAttribute('data-available')).resolves.toBe('false');
    const reason = (await page.getByTestId('device-reason-webgpu').textContent()) ?? '';
    expect(reason).toMatch(/^no WebGPU adapter: no GPU driver with Vulkan, Metal or Direct3D 12 was found/);
    expect(reason).not.toMatch(/webgpu_context\.cc|RequestAdapterStatus/);
    await expect(page.getByTestId('device-howto-webgpu').textContent()).resolves.toMatch(/How to get it: install a GPU driver/);
    // onnxruntime's own text exists, but only behind the disclosure.
    await expect(page.getByTestId('device-details-webgpu').isVisible()).resolves.toBe(false);
    await expect(page.getByTestId('device-details-webgpu').textContent()).resolves.toMatch(/adapter/i);
    // CUDA: this npm install has no CUDA provider library; said as such.
    await expect(page.getByTestId('device-reason-cuda').textContent()).resolves.toMatch(/without its CUDA provider/);
    // Platform-only providers are not offered off their platform (this is Linux).
    const options = await page.getByTestId('model-device').locator('option').evaluateAll((os) => os.map((o) => ({ value: (o as HTMLOptionElement).value, disabled: (o as HTMLOptionElement).disabled })));
    expect(options.map((o) => o.value)).not.toContain('dml');
    expect(options.map((o) => o.value)).not.toContain('coreml');
    expect(options.find((o) => o.value === 'cpu')?.disabled).toBe(false);
    expect(options.find((o) => o.value === 'cuda')?.disabled).toBe(true);
    await expect(page.getByTestId('devices-foot').textContent()).resolves.toMatch(/not offered here: DirectML, CoreML/);

    // Load with the workspace's device (webgpu): the real engine falls back to the CPU.
    await page.getByTestId('model-load-loupe-tiny').click();
    await page.getByTestId('model-fallback-loupe-tiny').waitFor({ timeout: 120_000 });
    await expect(page.getByTestId('model-state-loupe-tiny').textContent()).resolves.toMatch(/asked webgpu, running on cpu/);
    const line = (await page.getByTestId('model-fallback-loupe-tiny-line').textContent()) ?? '';
    expect(line).toBe("device 'webgpu' unavailable: no WebGPU adapter: no GPU driver with Vulkan, Metal or Direct3D 12 was found");
    // The message stays short in the table: the raw text is folded away.
    const shown = await page.getByTestId('model-fallback-loupe-tiny').boundingBox();
    expect(shown!.height).toBeLessThan(90);
    await expect(page.getByTestId('model-fallback-loupe-tiny-details').isVisible()).resolves.toBe(false);
    await expect(page.getByTestId('model-fallback-loupe-tiny-details').textContent()).resolves.toMatch(/adapter/i);
    await screenshot(page, 'models-devices-1024');
    await page.setViewportSize({ width: 1920, height: 1080 });
    await screenshot(page, 'models-devices-1920');
    await page.getByTestId('model-unload-loupe-tiny').click();
    expect(errors).toEqual([]);
  });

  it('connector forms: required fields marked, plain messages under each field; a Ray test says the port refused', async () => {
    const { page } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/training`);
    await page.getByTestId('connector-add').click();
    await page.getByTestId('conn-kind').selectOption('slurm-ssh');
    await page.getByTestId('conn-name').fill('cluster');
    await page.getByTestId('conn-port').fill('22x');
    await page.getByTestId('conn-save').click();
    await expect(page.getByTestId('conn-error-host').textContent()).resolves.toBe('host is required');
    await expect(page.getByTestId('conn-error-knownHosts').textContent()).resolves.toBe('known_hosts line is required');
    await expect(page.getByTestId('conn-error-keySecret').textContent()).resolves.toBe('key secret name is required');
    await expect(page.getByTestId('conn-error-remoteDir').textContent()).resolves.toBe('remote job folder is required');
    await expect(page.getByTestId('conn-error-port').textContent()).resolves.toBe('port must be a whole number from 1 to 65535');
    const editor = (await page.getByTestId('connector-editor').textContent()) ?? '';
    expect(editor).not.toMatch(/Invalid input|expected string|received undefined/);
    // Required fields are marked, optional ones are not.
    expect(await page.locator('label[for=tr-c-host] .req').count()).toBe(1);
    expect(await page.locator('label[for=tr-c-partition] .req').count()).toBe(0);
    await expect(page.getByTestId('conn-host').getAttribute('aria-required')).resolves.toBe('true');
    await screenshot(page, 'connector-form-errors-1024');

    // slurmrestd and Ray say theirs too.
    await page.getByTestId('conn-kind').selectOption('slurmrestd');
    await page.getByTestId('conn-baseUrl').fill('head:6820');
    await page.getByTestId('conn-save').click();
    await expect(page.getByTestId('conn-error-baseUrl').textContent()).resolves.toBe('slurmrestd URL must be a URL such as http://head:6820');
    await expect(page.getByTestId('conn-error-tokenSecret').textContent()).resolves.toBe('JWT secret name is required');

    const port = await closedPort();
    await page.getByTestId('conn-kind').selectOption('ray');
    await page.getByTestId('conn-name').fill('ray-closed');
    await page.getByTestId('conn-baseUrl').fill('');
    await page.getByTestId('conn-save').click();
    await expect(page.getByTestId('conn-error-baseUrl').textContent()).resolves.toBe('Ray dashboard URL is required');
    await page.getByTestId('conn-baseUrl').fill(`http://127.0.0.1:${port}`);
    await page.getByTestId('conn-save').click();
    await page.getByTestId('connector-editor').waitFor({ state: 'detached' });
    await page.getByTestId('connector-probe').click();
    await page.locator('[data-testid=probe-result].tr-error').waitFor({ timeout: 30_000 });
    await expect(page.getByTestId('probe-result').textContent()).resolves.toContain(`ray GET /api/version: connection refused by 127.0.0.1:${port}: nothing listens on port ${port} there`);
  });

  it('Settings: workspace, default model, device, threads and keys, persisted; values never shown back', async () => {
    const { page, errors } = await newPage(browser, { width: 1024, height: 768 });
    await page.goto(`${app.openUrl}#/settings`);
    await expect.poll(() => page.getByTestId('workspace-path').textContent()).toBe(app.workspace);
    // Device: from detection, the same setting the Models page used.
    await expect.poll(() => page.getByTestId('settings-device').inputValue()).toBe('webgpu');
    await page.getByTestId('settings-device').selectOption('cpu');
    // Threads: a bad value is said in words and not saved; a good one is saved. (First the stored value, 0: typing
    // before the settings arrive would be replaced by them.)
    await expect.poll(() => page.getByTestId('settings-threads').inputValue()).toBe('0');
    await page.getByTestId('settings-threads').fill('two');
    await expect(page.getByTestId('settings-threads-error').textContent()).resolves.toBe('a whole number from 0 (automatic) to 256');
    // another setting saved meanwhile (the default model, there and back) leaves what is being typed alone
    const models = page.getByTestId('settings-default-model');
    // The model list arrives from the core after the settings do: wait for a second entry rather than read the list once.
    const otherModel = async () => (await models.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).find((v) => v && v !== 'loupe-tiny');
    await expect.poll(otherModel, { timeout: 15_000 }).toBeTruthy();
    const other = await otherModel();
    await models.selectOption(other!);
    await expect.poll(() => (JSON.parse(fs.readFileSync(path.join(app.workspace, 'settings.json'), 'utf8')) as Record<string, unknown>)['defaultModel']).toBe(other);
    await models.selectOption('loupe-tiny');
    await expect.poll(() => (JSON.parse(fs.readFileSync(path.join(app.workspace, 'settings.json'), 'utf8')) as Record<string, unknown>)['defaultModel']).toBe('loupe-tiny');
    await expect.poll(() => page.getByTestId('settings-threads').inputValue()).toBe('two');
    await expect(page.getByTestId('settings-threads-error').textContent()).resolves.toBe('a whole number from 0 (automatic) to 256');
    await page.getByTestId('settings-threads').fill('2');
    await page.getByTestId('settings-threads').press('Enter');
    await expect.poll(() => JSON.parse(fs.readFileSync(path.join(app.workspace, 'settings.json'), 'utf8')) as Record<string, unknown>).toMatchObject({ device: 'cpu', threads: 2, defaultModel: 'loupe-tiny' });
    // Keys: set, listed by name, the value never comes back; delete.
    const secret = 'tok-9f8e7d6c5b4a-never-shown';
    await page.getByTestId('key-name').fill('ray/token');
    await page.getByTestId('key-value').fill(secret);
    await page.getByTestId('key-save').click();
    await page.getByTestId('key-ray/token').waitFor();
    expect(await page.content()).not.toContain(secret);
    for (const f of fs.readdirSync(app.workspace, { recursive: true }) as string[]) {
      const p = path.join(app.workspace, f);
      if (fs.statSync(p).isFile()) expect(fs.readFileSync(p, 'utf8')).not.toContain(secret);
    }
    await page.getByTestId('key-name').fill('bad name!');
    await expect(page.getByTestId('key-name-error').textContent()).resolves.toMatch(/letters, digits/);
    // Workspace: an absolute folder opens at the next start; a relative one is refused in words.
    await page.getByTestId('workspace-input').fill('relative/dir');
    await page.getByTestId('workspace-change').click();
    await expect(page.getByTestId('workspace-result').textContent()).resolves.toMatch(/must be an absolute folder path/);
    const next = path.join(configDir, 'next-workspace');
    await page.getByTestId('workspace-input').fill(next);
    await page.getByTestId('workspace-change').click();
    await expect(page.getByTestId('workspace-result').textContent()).resolves.toBe(`Loupe opens ${next} at its next start; this session keeps ${app.workspace}.`);
    expect(JSON.parse(fs.readFileSync(path.join(configDir, 'workspace.json'), 'utf8'))).toEqual({ workspace: next });
    expect(fs.statSync(next).isDirectory()).toBe(true);
    await screenshot(page, 'settings-1024');
    await page.setViewportSize({ width: 1920, height: 1080 });
    await screenshot(page, 'settings-1920');
    // After a reload everything is as set.
    await page.reload();
    await expect.poll(() => page.getByTestId('settings-threads').inputValue()).toBe('2');
    await expect.poll(() => page.getByTestId('settings-device').inputValue()).toBe('cpu');
    page.once('dialog', (d) => void d.accept());
    await page.getByTestId('key-delete-ray/token').click();
    await page.getByTestId('key-ray/token').waitFor({ state: 'detached' });
    expect(errors).toEqual([]);
  });
});

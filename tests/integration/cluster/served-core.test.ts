/**
 * Served engines through the core's contract (`served:*`), the way every door reaches them: hostile requests get a
 * clear error reply and the core keeps answering; a real `loupe serve-model` of the committed loupe-tiny starts,
 * is listed ready with its log (its key stays in the core), and ends when the core is disposed (what the app's quit
 * and `loupe serve`'s shutdown do).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedEngineStateWire } from '../../../app/contract';
import { createCore, type Core } from '../../../main/core';
import { waitFor } from './helpers';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TINY = path.join(ROOT, 'models', 'loupe-tiny', 'model');

describe('served engines through the core', () => {
  let ws: string;
  let core: Core;
  const states: ServedEngineStateWire[] = [];
  beforeAll(async () => {
    ws = mkdtempSync(path.join(os.tmpdir(), 'loupe-served-core-'));
    core = await createCore({ workspace: ws, transport: 'browser', configDir: path.join(ws, '.config') });
    core.onEvent((ev, p) => {
      if (ev === 'served:state') states.push(p as ServedEngineStateWire);
    });
  });
  afterAll(async () => {
    await core?.dispose();
    rmSync(ws, { recursive: true, force: true });
  });

  const call = (m: string, p: unknown) => core.dispatch(m, p);
  const errorOf = async (m: string, p: unknown): Promise<string> => {
    const r = await call(m, p);
    expect(r.ok, `${m} ${JSON.stringify(p)} should fail`).toBe(false);
    return r.ok ? '' : r.error.message;
  };

  it('refuses hostile requests with a clear error, starts nothing, and keeps answering', async () => {
    const base = { backend: 'loupe', modelDir: TINY };
    expect(await errorOf('served:start', { ...base, modelDir: 'models/loupe-tiny' })).toMatch(/modelDir: must be an absolute path/);
    expect(await errorOf('served:start', { ...base, modelDir: `${TINY}\nrm -rf ~` })).toMatch(/modelDir: must not contain control characters/);
    expect(await errorOf('served:start', { ...base, modelDir: `${TINY}/../../..` })).toMatch(/modelDir: must not contain a '\.\.' segment/);
    expect(await errorOf('served:start', { ...base, port: 80 })).toMatch(/port/);
    expect(await errorOf('served:start', { ...base, port: '8000; reboot' })).toMatch(/port/);
    expect(await errorOf('served:start', { ...base, dtype: 'fp32; rm -rf /' })).toMatch(/dtype "fp32; rm -rf \/" is not one loupe accepts/);
    expect(await errorOf('served:start', { ...base, backend: 'vllm', minPixels: 256 * 28 * 28, maxPixels: 1280 * 28 * 28 })).toMatch(/MIN_PIXELS\/MAX_PIXELS .* differ from the dialect's eval bounds/);
    expect(await errorOf('served:start', { ...base, modelName: '$(id)' })).toMatch(/model name/);
    expect(await errorOf('served:start', { ...base, backend: 'bash' })).toMatch(/backend/);
    expect(await errorOf('served:start', { ...base, gpuMemory: 0.5 })).toMatch(/loupe serve-model has no GPU memory share/);
    expect(await errorOf('served:start', { ...base, where: { kind: 'slurm', connector: 'nowhere' } })).toMatch(/no connector named "nowhere"/);
    expect(await errorOf('served:start', { ...base, where: { kind: 'slurm', connector: 'x', cwd: '/cluster/jobs', extra: 1 } })).toMatch(/extra|Unrecognized/i);
    expect(await errorOf('served:log', { id: 'nope' })).toMatch(/no served engine "nope"/);
    expect(await call('served:stop', { id: 'nope' })).toEqual({ ok: true, result: { stopped: false } });
    expect(await call('served:list', {})).toEqual({ ok: true, result: { engines: [] } });
    expect(states).toEqual([]);
    const b = await call('served:bounds', { mode: 'eval' });
    expect(b.ok && (b.result as { minPixels: number }).minPixels).toBeGreaterThan(0);
  });

  it('starts loupe serve-model for loupe-tiny, lists it ready with its log, and ends it on dispose', async () => {
    const r = await call('served:start', { backend: 'loupe', modelDir: TINY, modelName: 'loupe-tiny', dtype: 'q8' });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    const id = (r as { result: ServedEngineStateWire }).result.id;
    await waitFor('the served engine to be ready', () => states.some((s) => s.id === id && (s.status === 'ready' || s.status === 'error')), 120_000);
    const ready = states.find((s) => s.id === id && s.status === 'ready');
    expect(ready, JSON.stringify(states.at(-1))).toBeDefined();
    expect(ready!.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const list = await call('served:list', {});
    expect(list.ok && (list.result as { engines: ServedEngineStateWire[] }).engines.map((e) => [e.id, e.status])).toEqual([[id, 'ready']]);
    const log = await call('served:log', { id, lines: 50 });
    expect(log.ok && (log.result as { lines: string[] }).lines[0]).toMatch(/^\$ .* serve-model .* --name loupe-tiny/);
    // Without the key (which never leaves the core) the server refuses: the key is really required.
    const res = await fetch(`${ready!.baseURL}/models`);
    expect(res.status).toBe(401);

    // The Demo's served engine resolves inside the core; a sweep names it `served:<id>`.
    const bad = await call('sweeps:start', { model: 'served:nope', bench: 'loupe-synth', data: path.join(ws, 'x') });
    expect(bad.ok).toBe(false);

    const pid = ready!.pid!;
    expect(() => process.kill(pid, 0)).not.toThrow();
    await core.dispose();
    await waitFor('the server process to end', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 20_000);
    expect(states.at(-1)).toMatchObject({ id, status: 'stopped' });
  }, 180_000);
});

/**
 * One loaded model, one engine process: the Demo, a sweep started as the Runs page starts it, and serve-model all
 * use the core's engine manager. Real core (createCore + dispatch, as every door uses it), real ONNX on the CPU;
 * the engine processes are counted from the operating system's process table, not from the manager.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { createCore, type Core } from '../../main/core';
import { serveModel } from '../../app/engines/serve/serveModel';
import type { DemoEvent, MediaRef, SweepProgress } from '../../app/contract';
import { callCore as call, ROOT, tempWorkspace } from './harness';
import { GLASS } from './demo.fixture';

const TINY = path.join(ROOT, 'models', 'tiny-random-qwen25vl');

/** Child processes of this test process that run the engine worker. */
function engineProcesses(): number {
  // ps exits 1 when no process matches; its stdout is then empty, which is the answer.
  const out = spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).stdout ?? '';
  return out
    .split('\n')
    .filter((l) => l.includes(path.join('native', 'engine', 'worker.ts'))).length;
}

function until<T>(core: Core, pick: (name: string, payload: unknown) => T | undefined, timeoutMs = 180_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error('timed out waiting for an event'));
    }, timeoutMs);
    const off = core.onEvent((name, payload) => {
      const v = pick(name, payload);
      if (v === undefined) return;
      clearTimeout(timer);
      off();
      resolve(v);
    });
  });
}

describe('one loaded model is one engine process', () => {
  let core: Core;
  let data: string;
  let glass: MediaRef;
  beforeAll(async () => {
    const workspace = tempWorkspace('loupe-engine-share-');
    data = path.join(workspace, 'synth-bench');
    execFileSync(process.execPath, [path.join(ROOT, 'bin/loupe.mjs'), 'synth', '--seed', '7', '--n', '3', '--out', data], { cwd: ROOT, stdio: 'pipe' });
    core = await createCore({ workspace, transport: 'browser' });
    glass = (await call<{ media: MediaRef[] }>(core, 'demo:import', { paths: [GLASS] })).media[0]!;
  });
  afterAll(async () => {
    await core?.dispose();
  });

  it('the Demo and a sweep on the same local model share it; serve-model reuses it too', async () => {
    expect(engineProcesses()).toBe(0);
    await call(core, 'models:load', { id: 'tiny-random-qwen25vl', device: 'cpu' });
    expect(engineProcesses()).toBe(1);

    // A Demo run on the loaded model.
    const demoDone = until(core, (name, p) => (name === 'demo:event' && (p as DemoEvent).type === 'done' ? (p as DemoEvent) : undefined));
    await call(core, 'demo:run', { media: [glass], question: 'What colour is the glass?', engine: { kind: 'local', modelId: 'tiny-random-qwen25vl' }, settings: { temperature: 0, maxTokensPerTurn: 6, maxPixels: 200704 } });

    // A sweep on the same folder, started as the Runs page starts it, while the Demo runs.
    let peak = 0;
    const sweepDone = until(core, (name, p) => {
      if (name === 'engine:state' || name === 'sweeps:progress') peak = Math.max(peak, engineProcesses());
      return name === 'sweeps:progress' && ['done', 'error'].includes((p as SweepProgress).state) ? (p as SweepProgress) : undefined;
    });
    const { runIds } = await call<{ runIds: string[] }>(core, 'sweeps:start', { model: TINY, bench: 'loupe-synth', data, dialect: 'pixel-reasoner', prompts: ['vcot'], limit: 2, maxTokens: 6 });
    expect(runIds).toHaveLength(1);
    const [progress] = await Promise.all([sweepDone, demoDone]);
    expect(progress.state).toBe('done');
    expect(progress.done).toBe(2);
    expect(peak).toBe(1);
    expect(core.engines.loaded()).toHaveLength(1);

    // serve-model on the model the core holds: answered by the same process.
    const served = await serveModel(core.engines, { modelDir: TINY, device: 'cpu' }, { port: 0 });
    try {
      expect(engineProcesses()).toBe(1);
      const res = await fetch(`${served.server.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${served.server.apiKey}` },
        body: JSON.stringify({ max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
      });
      expect(res.status).toBe(200);
      expect(engineProcesses()).toBe(1);
    } finally {
      await served.close();
    }
    // The Demo still holds it; unloading ends the process.
    expect(engineProcesses()).toBe(1);
    await call(core, 'models:unload', {});
    expect(engineProcesses()).toBe(0);
  });
});

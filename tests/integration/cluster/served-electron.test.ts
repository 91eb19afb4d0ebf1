/**
 * `served:start` of backend loupe with no Command, through the core, as the core runs inside Electron (where
 * `process.execPath` is the Electron binary and the RunAsNode fuse is off). The Electron runtime cannot run here: the
 * stand-in, labelled, is `process.versions.electron` set the way Electron sets it (and removed after). The rest is
 * real: the core, PATH folders, the machine's Node reached through a link on PATH, and a real `loupe serve-model` of
 * the committed loupe-tiny.
 *   - LOUPE_NODE set to an old Node (v18.19.0): the start is refused with what to set, nothing starts, the core answers;
 *   - only that old Node on PATH: loupe-tiny is served IN the app (where 'in-app'): the same server, ready through its
 *     own health check (GET /v1/models with the key), 401 without the key, and gone once stopped;
 *   - a Node >= 20.19 on PATH: the server starts with THAT Node (the log's command line names the link), ready.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../../main/core';
import type { ServedEngineStateWire } from '../../../app/contract';
import { waitFor } from './helpers';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TINY = path.join(ROOT, 'models', 'loupe-tiny', 'model');

describe('served loupe engine when the core runs inside Electron (stand-in: versions.electron)', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-served-electron-'));
  const oldPath = process.env.PATH;
  const oldLoupeNode = process.env.LOUPE_NODE;
  let core: Core;
  const states: ServedEngineStateWire[] = [];
  const oldDir = path.join(tmp, 'old-bin');
  const goodDir = path.join(tmp, 'good-bin');
  beforeAll(async () => {
    mkdirSync(oldDir);
    writeFileSync(path.join(oldDir, 'node'), '#!/bin/sh\necho v18.19.0\n');
    chmodSync(path.join(oldDir, 'node'), 0o755);
    mkdirSync(goodDir);
    symlinkSync(process.execPath, path.join(goodDir, 'node'));
    Object.defineProperty(process.versions, 'electron', { value: '33.2.0', configurable: true, enumerable: true });
    delete process.env.LOUPE_NODE;
    core = await createCore({ workspace: path.join(tmp, 'ws'), transport: 'browser', configDir: path.join(tmp, 'config') });
    core.onEvent((ev, p) => {
      if (ev === 'served:state') states.push(p as ServedEngineStateWire);
    });
  });
  afterAll(async () => {
    await core?.dispose();
    delete (process.versions as Record<string, string | undefined>).electron;
    process.env.PATH = oldPath;
    if (oldLoupeNode !== undefined) process.env.LOUPE_NODE = oldLoupeNode;
    rmSync(tmp, { recursive: true, force: true });
  });

  it('LOUPE_NODE set to an old Node: a clear refusal naming what to set; nothing starts; the core keeps answering', async () => {
    process.env.PATH = goodDir;
    process.env.LOUPE_NODE = path.join(oldDir, 'node');
    try {
      const r = await core.dispatch('served:start', { backend: 'loupe', modelDir: TINY, modelName: 'loupe-tiny', dtype: 'q8' });
      expect(r.ok).toBe(false);
      const msg = r.ok ? '' : r.error.message;
      expect(msg).toMatch(/inside Electron/);
      expect(msg).toContain(`LOUPE_NODE=${JSON.stringify(path.join(oldDir, 'node'))} is Node v18.19.0; set it to a Node >= 20.19, or fill in Command`);
    } finally {
      delete process.env.LOUPE_NODE;
    }
    expect(states).toEqual([]);
    expect(await core.dispatch('served:list', {})).toEqual({ ok: true, result: { engines: [] } });
  });

  it('only an old Node on PATH: loupe-tiny is served in the app, with the same states, health, log and stop', async () => {
    // /usr/bin may hold a Node of its own on some machines: only the old one is left on PATH for this case.
    process.env.PATH = oldDir;
    const r = await core.dispatch('served:start', { backend: 'loupe', modelDir: TINY, modelName: 'loupe-tiny', dtype: 'q8' });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    const id = (r as { result: ServedEngineStateWire }).result.id;
    await waitFor('the in-app engine to be ready', () => states.some((s) => s.id === id && (s.status === 'ready' || s.status === 'error')), 120_000);
    const ready = states.find((s) => s.id === id && s.status === 'ready');
    expect(ready, JSON.stringify(states.at(-1))).toMatchObject({ where: 'in-app', backend: 'loupe', model: 'loupe-tiny' });
    expect(ready!.pid).toBeUndefined();
    const log = await core.dispatch('served:log', { id, lines: 50 });
    const lines = log.ok ? (log.result as { lines: string[] }).lines : [];
    expect(lines[0]).toMatch(/^\$ \(in the app\) loupe serve-model .*loupe-tiny.* --dtype q8 --name loupe-tiny$/);
    expect(lines[1]).toMatch(/^serving .* in the app at http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect((await fetch(`${ready!.baseURL}/models`)).status).toBe(401);
    expect(await core.dispatch('served:stop', { id })).toEqual({ ok: true, result: { stopped: true } });
    expect(states.at(-1)).toMatchObject({ id, status: 'stopped' });
    await expect(fetch(`${ready!.baseURL}/models`)).rejects.toThrow();
  }, 180_000);

  it('a Node >= 20.19 on PATH: loupe serve-model runs with it and becomes ready', async () => {
    process.env.PATH = `${goodDir}:${oldPath ?? ''}`;
    const r = await core.dispatch('served:start', { backend: 'loupe', modelDir: TINY, modelName: 'loupe-tiny', dtype: 'q8' });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    const id = (r as { result: ServedEngineStateWire }).result.id;
    await waitFor('the served engine to be ready', () => states.some((s) => s.id === id && (s.status === 'ready' || s.status === 'error')), 120_000);
    const ready = states.find((s) => s.id === id && s.status === 'ready');
    expect(ready, JSON.stringify(states.at(-1))).toBeDefined();
    const log = await core.dispatch('served:log', { id, lines: 50 });
    const first = (log.ok ? (log.result as { lines: string[] }).lines[0] : '') ?? '';
    expect(first.startsWith(`$ ${path.join(goodDir, 'node')} ${path.join(ROOT, 'bin', 'loupe.mjs')} serve-model `), first).toBe(true);
    expect((await fetch(`${ready!.baseURL}/models`)).status).toBe(401);
    expect(await core.dispatch('served:stop', { id })).toEqual({ ok: true, result: { stopped: true } });
  }, 180_000);
});

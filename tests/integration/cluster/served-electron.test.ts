/**
 * `served:start` of backend loupe with no Command, through the core, as the core runs inside Electron (where
 * `process.execPath` is the Electron binary and the RunAsNode fuse is off). The Electron runtime cannot run here: the
 * stand-in, labelled, is `process.versions.electron` set the way Electron sets it (and removed after). The rest is
 * real: the core, PATH folders, the machine's Node reached through a link on PATH, and a real `loupe serve-model` of
 * the committed loupe-tiny.
 *   - only an old Node (v18.19.0) on PATH: the start is refused with what to set, nothing is started, the core answers;
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

  it('only an old Node on PATH: a clear refusal naming what to set; nothing starts; the core keeps answering', async () => {
    // /usr/bin may hold a Node of its own on some machines: only the old one is left on PATH for this case.
    process.env.PATH = oldDir;
    const r = await core.dispatch('served:start', { backend: 'loupe', modelDir: TINY, modelName: 'loupe-tiny', dtype: 'q8' });
    expect(r.ok).toBe(false);
    const msg = r.ok ? '' : r.error.message;
    expect(msg).toMatch(/inside Electron/);
    expect(msg).toContain(`found only ${path.join(oldDir, 'node')} (v18.19.0)`);
    expect(msg).toMatch(/set LOUPE_NODE .* or fill in Command/);
    expect(states).toEqual([]);
    expect(await core.dispatch('served:list', {})).toEqual({ ok: true, result: { engines: [] } });
  });

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

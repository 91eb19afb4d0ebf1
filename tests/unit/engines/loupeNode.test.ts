/**
 * Which Node runs `loupe serve-model` for a served engine (app/engines/served/loupeNode.ts). The Electron runtime
 * cannot run here, so "inside Electron" is `versions.electron` set, as Electron sets it; everything else is real:
 * real folders on PATH, the real Node of this machine (through a link, so the answer shows it came from PATH), and
 * a real program named `node` that answers like an old Node (v18.19.0), each asked `--version` for real.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeVersionOk, resolveLoupeNode } from '../../../app/engines/served/loupeNode';

const REPO = path.resolve(__dirname, '..', '..', '..');
const LOUPE_BIN = path.join(REPO, 'bin', 'loupe.mjs');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-node-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const dir = (name: string): string => {
  const d = path.join(tmp, name);
  mkdirSync(d, { recursive: true });
  return d;
};
const oldDir = dir('old');
writeFileSync(path.join(oldDir, 'node'), '#!/bin/sh\necho v18.19.0\n');
chmodSync(path.join(oldDir, 'node'), 0o755);
const goodDir = dir('good');
symlinkSync(process.execPath, path.join(goodDir, 'node'));
const electron = { electron: '33.2.0', node: '20.18.1' };
const ELECTRON_BIN = '/opt/Loupe/loupe';

describe('the Node that runs loupe serve-model', () => {
  it('under Node: this process\'s Node, nothing probed', () => {
    expect(resolveLoupeNode({ versions: { node: '22.12.0' }, execPath: '/usr/bin/node', env: {}, loupeBin: LOUPE_BIN, probe: () => { throw new Error('probed'); } })).toEqual({ ok: true, node: '/usr/bin/node', source: 'this-node' });
  });

  it('inside Electron: never the Electron binary; the first Node >= 20.19 on PATH, passing over an old one and a relative entry', () => {
    dir('rel');
    writeFileSync(path.join(tmp, 'rel', 'node'), '#!/bin/sh\necho v99.0.0\n');
    chmodSync(path.join(tmp, 'rel', 'node'), 0o755);
    const r = resolveLoupeNode({ versions: electron, execPath: ELECTRON_BIN, env: { PATH: ['relative/rel', oldDir, dir('empty'), goodDir].join(':') }, loupeBin: LOUPE_BIN });
    expect(r).toEqual({ ok: true, node: path.join(goodDir, 'node'), source: 'PATH' });
  });

  it('inside Electron with only an old Node on PATH: refused, naming what it found and what to set', () => {
    const r = resolveLoupeNode({ versions: electron, execPath: ELECTRON_BIN, env: { PATH: oldDir }, loupeBin: LOUPE_BIN });
    expect(r.ok).toBe(false);
    const reason = r.ok ? '' : r.reason;
    expect(reason).toMatch(/inside Electron/);
    expect(reason).toContain(`found only ${path.join(oldDir, 'node')} (v18.19.0)`);
    expect(reason).toMatch(/Install Node >= 20\.19, or set LOUPE_NODE to one and restart Loupe, or fill in Command/);
    const none = resolveLoupeNode({ versions: electron, execPath: ELECTRON_BIN, env: {}, loupeBin: LOUPE_BIN });
    expect(none.ok ? '' : none.reason).toMatch(/no Node >= 20\.19 is on PATH\. Install/);
  });

  it('LOUPE_NODE wins when it is a good Node; a relative, old or missing one is refused by name', () => {
    const base = { versions: electron, execPath: ELECTRON_BIN, loupeBin: LOUPE_BIN };
    expect(resolveLoupeNode({ ...base, env: { LOUPE_NODE: process.execPath, PATH: goodDir } })).toEqual({ ok: true, node: process.execPath, source: 'LOUPE_NODE' });
    const why = (env: NodeJS.ProcessEnv): string => {
      const r = resolveLoupeNode({ ...base, env });
      return r.ok ? 'ok' : r.reason;
    };
    expect(why({ LOUPE_NODE: 'node', PATH: goodDir })).toMatch(/LOUPE_NODE="node" must be an absolute path to a Node >= 20\.19/);
    expect(why({ LOUPE_NODE: path.join(oldDir, 'node'), PATH: goodDir })).toMatch(/is Node v18\.19\.0; set it to a Node >= 20\.19, or fill in Command/);
    // A LOUPE_NODE that is set but wrong is marked explicit (the core refuses it rather than serving in-app); a Node
    // missing from PATH is not.
    expect(resolveLoupeNode({ ...base, env: { LOUPE_NODE: path.join(oldDir, 'node') } })).toMatchObject({ ok: false, explicit: true });
    expect(resolveLoupeNode({ ...base, env: { PATH: oldDir } })).not.toHaveProperty('explicit');
    expect(why({ LOUPE_NODE: path.join(tmp, 'nowhere', 'node') })).toMatch(/is not a Node that answers --version/);
  });

  it('a packaged app (the CLI entry inside app.asar, or absent) is refused: only Command can name a Loupe CLI', () => {
    for (const loupeBin of [path.join(tmp, 'resources', 'app.asar', 'bin', 'loupe.mjs'), path.join(tmp, 'no-such', 'loupe.mjs')]) {
      const r = resolveLoupeNode({ versions: electron, execPath: ELECTRON_BIN, env: { PATH: goodDir }, loupeBin });
      expect(r.ok ? '' : r.reason).toMatch(/ships no CLI to run .* Fill in Command with a Loupe CLI this machine has/);
    }
  });

  it('reads versions as Node prints them', () => {
    expect(['v20.19.0', 'v20.20.2', 'v21.0.0', 'v24.1.0'].map(nodeVersionOk)).toEqual([true, true, true, true]);
    expect(['v20.18.9', 'v18.19.0', '20.19.0', '', null, 'v20.19'].map(nodeVersionOk)).toEqual([false, false, false, false, false, false]);
  });
});

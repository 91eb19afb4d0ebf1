/**
 * `npm start` without Electron: it says why (Node too old to install Electron 45, the optional package skipped, or
 * its binary not downloaded) and what to do, then falls back to browser mode. And the Node versions the repo states
 * (package.json engines, .nvmrc) agree with what each door needs.
 */
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error -- a plain .mjs script with JSDoc types (scripts/ are not TypeScript)
import { ELECTRON_MIN_NODE, electronStatus } from '../../../scripts/electron-status.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
type Status = { ok: true; binary: string } | { ok: false; reason: string; message: string };
const status = electronStatus as (env: { nodeVersion: string; resolve: (id: string) => string; load: (id: string) => unknown }) => Status;
const missing = (id: string): never => {
  throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
};

describe('npm start: why Electron cannot start', () => {
  it('on Node 20 the optional electron package was skipped: says Node ≥ 22.12 and how to switch', () => {
    const s = status({ nodeVersion: 'v20.20.2', resolve: missing, load: missing });
    expect(s.ok).toBe(false);
    expect(!s.ok && s.reason).toBe('node-too-old');
    expect(!s.ok && s.message).toContain('Node ≥ 22.12.0');
    expect(!s.ok && s.message).toContain('this is Node 20.20.2');
    expect(!s.ok && s.message).toContain('nvm use');
    expect(status({ nodeVersion: 'v22.11.9', resolve: missing, load: missing })).toMatchObject({ reason: 'node-too-old' });
  });

  it('on Node 22.12+ without the package: says to install again with optional dependencies', () => {
    for (const v of ['v22.12.0', 'v24.1.0', 'v23.0.0']) expect(status({ nodeVersion: v, resolve: missing, load: missing })).toMatchObject({ ok: false, reason: 'not-installed' });
  });

  it('the package without its binary: says how to download it', () => {
    const s = status({
      nodeVersion: 'v22.12.0',
      resolve: (id) => `/x/node_modules/${id}`,
      load: () => {
        throw new Error('Electron failed to install correctly, please delete node_modules/electron and try installing again');
      },
    });
    expect(s).toMatchObject({ ok: false, reason: 'no-binary' });
    expect(!s.ok && s.message).toContain('node node_modules/electron/install.js');
    // A path that points nowhere is the same case.
    expect(status({ nodeVersion: 'v22.12.0', resolve: (id) => id, load: () => path.join(os.tmpdir(), 'no-such-electron-binary') })).toMatchObject({ reason: 'no-binary' });
  });

  it('an installed binary starts the desktop app', () => {
    const bin = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-electron-bin-')), 'electron');
    fs.writeFileSync(bin, '');
    expect(status({ nodeVersion: 'v22.12.0', resolve: (id) => id, load: () => bin })).toEqual({ ok: true, binary: bin });
  });
});

describe('stated Node versions', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; devDependencies: Record<string, string> };
  it('engines admit Node 20.19+ (browser mode, CLI, the vite build) and 22.12+; .nvmrc picks a Node that runs every door', () => {
    expect(pkg.engines.node).toBe('^20.19.0 || >=22.12.0');
    const electronEngines = (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', 'electron-types', 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(electronEngines.replace(/\s/g, '')).toBe(`>=${ELECTRON_MIN_NODE}`);
    const nvmrc = fs.readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim();
    expect(Number(nvmrc.split('.')[0])).toBeGreaterThanOrEqual(22);
  });
});

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildZip, collectDir, rayPackageName } from './zip';
import { findPythonSync } from '../workspace/python';
import { skipUnless } from '../../tests/support/requirements';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-zip-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const py = findPythonSync('zipfile');

describe('working_dir zip', () => {
  it('is deterministic, skips .git and excludes, and Python zipfile reads it back intact (stored and deflated entries)', async (ctx) => {
    const d = path.join(tmp, 'proj');
    mkdirSync(path.join(d, '.git'), { recursive: true });
    mkdirSync(path.join(d, 'pkg'), { recursive: true });
    mkdirSync(path.join(d, 'outputs'), { recursive: true });
    writeFileSync(path.join(d, '.git', 'HEAD'), 'ref: x\n');
    writeFileSync(path.join(d, 'train.py'), 'print("step:1 - loss:0.5")\n'.repeat(50));
    writeFileSync(path.join(d, 'pkg', 'ü.txt'), 'x');
    writeFileSync(path.join(d, 'run.sh'), '#!/bin/sh\necho hi\n');
    chmodSync(path.join(d, 'run.sh'), 0o755);
    writeFileSync(path.join(d, 'outputs', 'big.bin'), Buffer.alloc(1000));
    const a = buildZip(await collectDir(d, ['.git/', 'outputs/']));
    const b = buildZip(await collectDir(d, ['.git/', 'outputs/']));
    expect(a.equals(b)).toBe(true);
    expect(rayPackageName(a)).toMatch(/^_ray_pkg_[0-9a-f]{32}\.zip$/);
    const zipPath = path.join(tmp, 'p.zip');
    writeFileSync(zipPath, a);
    skipUnless(ctx, !!py, { what: 'python3', reason: 'not on PATH (the zipfile read-back); npm test installs Debian\'s python3', provisioned: true });
    const r = spawnSync(py!, ['-c', 'import sys,zipfile,json\nz=zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\nprint(json.dumps([[i.filename,i.compress_type,oct(i.external_attr>>16),len(z.read(i))] for i in z.infolist()]))', zipPath], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([
      ['pkg/ü.txt', 0, '0o100644', 1],
      ['run.sh', 0, '0o100755', 18],
      ['train.py', 8, '0o100644', 27 * 50],
    ]);
  });
});

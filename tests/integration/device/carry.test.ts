/**
 * scripts/device/carry.py — how files larger than one GPU-machine call allows travel there over several calls — on a
 * real git checkout in a temp folder: `plan` adds the .device-carry exclude line, measures the tree and cuts the files
 * into call folders that each fit under the cap; `in`, run call after call into one destination (as on the device,
 * where a call's carried folder is gone at the next call), joins byte-identical files; a damaged chunk is refused.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { requirePython } from '../loupe-tiny/python';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CARRY = path.join(ROOT, 'scripts/device/carry.py');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-carry-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const run = (cmd: string, args: string[], cwd: string) => spawnSync(cmd, args, { cwd, encoding: 'utf8' });

describe('carry.py', () => {
  it('splits files into call folders under the cap, and joins them on the other side, call by call', () => {
    const python = requirePython(['hashlib']);
    const repo = path.join(tmp, 'repo');
    mkdirSync(repo);
    expect(run('git', ['init', '-q'], repo).status).toBe(0);
    writeFileSync(path.join(repo, 'tracked.txt'), 'x'.repeat(5000));
    expect(run('git', ['add', 'tracked.txt'], repo).status).toBe(0);
    const big = randomBytes(1_300_000);
    const small = randomBytes(1000);
    writeFileSync(path.join(tmp, 'big.bin'), big);
    writeFileSync(path.join(tmp, 'small.bin'), small);
    const plan = run(python, [CARRY, 'plan', '.device-carry/t/calls', path.join(tmp, 'big.bin'), path.join(tmp, 'small.bin'), '--max-call-mib', '0.5'], repo);
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/tree that travels: 0\.0 MiB/);
    expect(readFileSync(path.join(repo, '.git/info/exclude'), 'utf8')).toMatch(/^\/\.device-carry\/$/m);
    const calls = readdirSync(path.join(repo, '.device-carry/t/calls')).sort();
    expect(calls).toEqual(['call-1', 'call-2', 'call-3']);
    for (const c of calls) {
      const dir = path.join(repo, '.device-carry/t/calls', c);
      const chunkBytes = readdirSync(dir).filter((f) => f.includes('.chunk-')).reduce((s, f) => s + statSync(path.join(dir, f)).size, 0);
      expect(chunkBytes).toBeLessThanOrEqual(0.5 * 2 ** 20);
    }
    // the ignored folder does not count in the tree, and the plan is stable when run again
    expect(run(python, [CARRY, 'plan', '.device-carry/t/calls', path.join(tmp, 'big.bin'), '--max-call-mib', '0.5'], repo).stdout).toMatch(/tree that travels: 0\.0 MiB/);
    run(python, [CARRY, 'plan', '.device-carry/t/calls', path.join(tmp, 'big.bin'), path.join(tmp, 'small.bin'), '--max-call-mib', '0.5'], repo);

    const dest = path.join(tmp, 'dest');
    const device = path.join(tmp, 'device');
    let last = '';
    for (const c of calls) {
      // on the device only this call's folder is there
      rmSync(device, { recursive: true, force: true });
      cpSync(path.join(repo, '.device-carry/t/calls', c), path.join(device, c), { recursive: true });
      const r = run(python, [path.join(device, c, 'carry.py'), 'in', dest], device);
      expect(r.status, r.stdout + r.stderr).toBe(0);
      last = r.stdout;
      if (c !== 'call-3') expect(r.stdout).toMatch(/still missing/);
    }
    expect(last).toMatch(/carry: complete/);
    expect(readFileSync(path.join(dest, 'big.bin')).equals(big)).toBe(true);
    expect(readFileSync(path.join(dest, 'small.bin')).equals(small)).toBe(true);

    // a damaged chunk is refused, and nothing is joined from it
    const bad = path.join(tmp, 'bad');
    cpSync(path.join(repo, '.device-carry/t/calls/call-1'), bad, { recursive: true });
    const chunk = readdirSync(bad).find((f) => f.includes('.chunk-'))!;
    writeFileSync(path.join(bad, chunk), Buffer.concat([readFileSync(path.join(bad, chunk)), Buffer.from('x')]));
    const r = run(python, [path.join(bad, 'carry.py'), 'in', path.join(tmp, 'dest2')], bad);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/does not match the MANIFEST/);
  });

  it('refuses an output folder outside .device-carry/ and a file that is not there', () => {
    const python = requirePython(['hashlib']);
    const repo = path.join(tmp, 'repo2');
    mkdirSync(repo);
    run('git', ['init', '-q'], repo);
    writeFileSync(path.join(tmp, 'f.bin'), 'data');
    const outside = run(python, [CARRY, 'plan', 'calls', path.join(tmp, 'f.bin')], repo);
    expect(outside.status).not.toBe(0);
    expect(outside.stderr).toMatch(/must lie under/);
    const missing = run(python, [CARRY, 'plan', '.device-carry/x', path.join(tmp, 'nope.bin')], repo);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toMatch(/no such file/);
  });
});

/**
 * models/loupe-tiny/pr_env.py — the Python pixel-reasoner environment loupe-tiny's RL trainer uses — against the same
 * golden vectors as Loupe's TypeScript protocol (tests/fixtures/vectors/public.json): check_pr_env.py runs every case of
 * the suites it implements (smart_resize, crop, select_frames, toolcall, pr_boxed) plus the curiosity-reward numbers of
 * the reference, and exits non-zero on any failure.
 *
 * Needs a python3 with numpy and Pillow: LOUPE_PYTHON, else python3, else /usr/bin/python3. None → the test fails.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { requirePython } from './python';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

describe('pr_env.py passes the golden vectors', () => {
  it('check_pr_env.py: every implemented suite passes, none fails', () => {
    const python = requirePython(['numpy', 'PIL']);
    const r = spawnSync(python, ['models/loupe-tiny/check_pr_env.py', 'tests/fixtures/vectors/public.json'], { cwd: ROOT, encoding: 'utf8' });
    const out = `${r.stdout}\n${r.stderr}`;
    expect(r.status, out).toBe(0);
    const m = /golden vectors: (\d+) passed, (\d+) failed/.exec(r.stdout);
    expect(m, out).not.toBeNull();
    expect(Number(m![2])).toBe(0);
    // all five suites ran: 92 + 70 + 14 + 38 + 20 cases in the public file
    expect(Number(m![1])).toBe(234);
    expect(r.stdout).toMatch(/curiosity reward spec checks: \d+ passed, 0 failed/);
  });
});

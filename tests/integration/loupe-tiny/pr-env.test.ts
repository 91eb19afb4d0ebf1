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
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

function findPython(modules: string[]): { python: string | null; tried: string[] } {
  const candidates = [process.env.LOUPE_PYTHON, 'python3', '/usr/bin/python3'].filter((p): p is string => !!p);
  const tried: string[] = [];
  for (const py of candidates) {
    const r = spawnSync(py, ['-c', `import ${modules.join(', ')}`], { encoding: 'utf8' });
    if (r.status === 0) return { python: py, tried };
    tried.push(`${py}: ${r.error ? r.error.message : (r.stderr || '').trim().split('\n').pop()}`);
  }
  return { python: null, tried };
}

describe('pr_env.py passes the golden vectors', () => {
  it('check_pr_env.py: every implemented suite passes, none fails', () => {
    const { python, tried } = findPython(['numpy', 'PIL']);
    if (!python) {
      throw new Error(`no python3 with numpy and Pillow (set LOUPE_PYTHON, or apt-get install python3-numpy python3-pil); tried:\n${tried.join('\n')}`);
    }
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

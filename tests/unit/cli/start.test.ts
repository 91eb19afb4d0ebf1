/**
 * scripts/start.mjs (`npm start`) in browser mode: the environment it gives the app's process. Exercised on a scratch
 * package root holding the real start script, a built renderer stand-in (so nothing is built) and a stand-in
 * `bin/loupe.mjs` that prints what it was started with, so the test never starts the real server.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
let dir: string;

function write(rel: string, text: string): void {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), text);
}

/** What the stand-in app printed: its arguments and its GLIBC_TUNABLES. */
function start(env: Record<string, string | undefined>): { args: string[]; tunables: string | null } {
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, LOUPE_BROWSER_MODE: '1', ...env })) if (v !== undefined) merged[k] = v;
  const out = execFileSync(process.execPath, [path.join(dir, 'scripts/start.mjs'), '--no-open'], { encoding: 'utf8', env: merged });
  const line = out.split('\n').find((l) => l.startsWith('APP '));
  if (!line) throw new Error(`the stand-in app did not run: ${out}`);
  return JSON.parse(line.slice(4)) as { args: string[]; tunables: string | null };
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-start-'));
  for (const f of ['scripts/start.mjs', 'scripts/electron-status.mjs']) write(f, fs.readFileSync(path.join(ROOT, f), 'utf8'));
  write('package.json', '{"type":"module"}\n');
  write('renderer/main.tsx', '// stand-in\n');
  write('dist/renderer/index.html', '<!doctype html>\n');
  // the built renderer is newer than its sources: start.mjs builds nothing
  const later = new Date(Date.now() + 60_000);
  fs.utimesSync(path.join(dir, 'dist/renderer/index.html'), later, later);
  write('bin/loupe.mjs', "console.log('APP ' + JSON.stringify({ args: process.argv.slice(2), tunables: process.env.GLIBC_TUNABLES ?? null }));\n");
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('npm start (scripts/start.mjs), browser mode', () => {
  it.runIf(process.platform === 'linux')("starts the app with glibc's huge-page tunable added, and keeps a value the user set", () => {
    expect(start({ GLIBC_TUNABLES: undefined })).toEqual({ args: ['serve', '--no-open'], tunables: 'glibc.malloc.hugetlb=1' });
    // other tunables are kept, the huge-page one added after them
    expect(start({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }).tunables).toBe('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1');
    // the user's own choice wins, even "off"
    expect(start({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }).tunables).toBe('glibc.malloc.hugetlb=0');
    expect(start({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2' }).tunables).toBe('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2');
  });
});

describe('scripts/huge-pages.sh (sourced by npm test and the loupe-tiny fine-tune)', () => {
  /** GLIBC_TUNABLES after sourcing the script in bash (`set -u`, as the scripts that source it run) with `given`. */
  const after = (given: string | undefined): string => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'GLIBC_TUNABLES') env[k] = v;
    if (given !== undefined) env.GLIBC_TUNABLES = given;
    return execFileSync('bash', ['-c', 'set -euo pipefail; . scripts/huge-pages.sh; printf %s "$GLIBC_TUNABLES"'], { cwd: ROOT, encoding: 'utf8', env });
  };

  it('adds the huge-page tunable, after other tunables, and keeps a value the user set; a hostile value is only text', () => {
    expect(after(undefined)).toBe('glibc.malloc.hugetlb=1');
    expect(after('')).toBe('glibc.malloc.hugetlb=1');
    expect(after('glibc.malloc.arena_max=2')).toBe('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1');
    expect(after('glibc.malloc.hugetlb=0')).toBe('glibc.malloc.hugetlb=0');
    expect(after('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2')).toBe('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2');
    const marker = path.join(dir, 'ran');
    const hostile = `$(touch ${marker}); \`touch ${marker}\``;
    expect(after(hostile)).toBe(`${hostile}:glibc.malloc.hugetlb=1`);
    expect(fs.existsSync(marker)).toBe(false);
  });
});

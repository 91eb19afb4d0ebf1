/**
 * bin/loupe.mjs: runs the CLI bundle only while every file it was built from is unchanged, the sources through tsx
 * otherwise. Exercised on a scratch package root holding the real launcher, a stand-in bundle and a stand-in
 * source entry (each prints which one ran), so the test never depends on what dist/ holds in this clone.
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

function record(files: string[]): void {
  const entries = files.map((rel) => {
    const st = fs.statSync(path.join(dir, rel));
    return [rel, st.size, st.mtimeMs];
  });
  write('dist/cli/inputs.json', JSON.stringify({ node: process.version, files: entries }));
}

const run = (env: Record<string, string> = {}): string => execFileSync(process.execPath, [path.join(dir, 'bin/loupe.mjs'), '--version'], { encoding: 'utf8', env: { ...process.env, ...env } }).trim();

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-launcher-'));
  write('bin/loupe.mjs', fs.readFileSync(path.join(ROOT, 'bin/loupe.mjs'), 'utf8'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  write('package.json', '{"type":"module"}\n');
  write('main/cli/run.ts', "const from: string = 'source';\nconsole.log(from, process.argv.slice(2).join(' '));\n");
  write('dist/cli/loupe.mjs', "console.log('bundle', process.argv.slice(2).join(' '));\n");
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('bin/loupe.mjs', () => {
  it('runs the bundle while its inputs are unchanged', () => {
    record(['main/cli/run.ts', 'package.json']);
    expect(run()).toBe('bundle --version');
  });

  it('runs the sources when an input changed (size or mtime), was removed, or the record is unreadable', () => {
    record(['main/cli/run.ts', 'package.json']);
    // Same size, new mtime: an edit that kept the length.
    const f = path.join(dir, 'main/cli/run.ts');
    const later = new Date(fs.statSync(f).mtimeMs + 5_000);
    fs.utimesSync(f, later, later);
    expect(run()).toBe('source --version');

    record(['main/cli/run.ts', 'package.json']);
    expect(run()).toBe('bundle --version');
    fs.appendFileSync(path.join(dir, 'package.json'), ' ');
    expect(run()).toBe('source --version');

    write('gone.ts', 'x');
    record(['main/cli/run.ts', 'package.json', 'gone.ts']);
    expect(run()).toBe('bundle --version');
    fs.rmSync(path.join(dir, 'gone.ts'));
    expect(run()).toBe('source --version');

    for (const bad of ['{not json', '{"files":[[1,2,3]]}']) {
      write('dist/cli/inputs.json', bad);
      expect(run(), bad).toBe('source --version');
    }
    fs.rmSync(path.join(dir, 'dist/cli/inputs.json'));
    expect(run()).toBe('source --version');
  }, 300_000); // five starts through tsx: seconds each on a loaded machine

  it('LOUPE_CLI_FROM_SOURCE=1 runs the sources even with a current bundle', () => {
    record(['main/cli/run.ts', 'package.json']);
    expect(run()).toBe('bundle --version');
    expect(run({ LOUPE_CLI_FROM_SOURCE: '1' })).toBe('source --version');
  }, 120_000);
});

/**
 * scripts/device/tree-aside.sh: large tracked folders leave the working tree and the index for device calls (the tree
 * that travels is measured from both) and come back after them, leaving `git status` as it was. Here: a temp git
 * repository with a tracked folder, what travels measured as carry.py measures it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SCRIPT = path.join(ROOT, 'scripts/device/tree-aside.sh');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-tree-aside-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const git = (repo: string, ...args: string[]) => spawnSync('git', args, { cwd: repo, encoding: 'utf8' }).stdout;
const aside = (repo: string, ...args: string[]) => spawnSync('bash', [SCRIPT, ...args], { cwd: repo, encoding: 'utf8' });
/** The files that travel, as carry.py counts them: tracked and untracked-not-ignored files that exist. */
const travels = (repo: string) =>
  git(repo, 'ls-files', '--cached', '--others', '--exclude-standard')
    .split('\n')
    .filter((f) => f && existsSync(path.join(repo, f)))
    .sort();

describe('tree-aside.sh', () => {
  it('sets tracked folders aside (out of the tree and the index) and brings them back with git status as it was', () => {
    const repo = path.join(tmp, 'repo');
    mkdirSync(path.join(repo, 'models/big/sub'), { recursive: true });
    mkdirSync(path.join(repo, 'src'));
    writeFileSync(path.join(repo, 'models/big/w.bin'), Buffer.alloc(4096, 7));
    writeFileSync(path.join(repo, 'models/big/sub/log.txt'), 'log\n');
    writeFileSync(path.join(repo, 'src/a.ts'), 'export {};\n');
    for (const args of [['init', '-q'], ['add', '.'], ['-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'c']]) git(repo, ...args);
    expect(travels(repo)).toEqual(['models/big/sub/log.txt', 'models/big/w.bin', 'src/a.ts']);

    const out = aside(repo, 'out', 'models/big/');
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/tree-aside: models\/big set aside \(/);
    expect(existsSync(path.join(repo, 'models/big'))).toBe(false);
    expect(readFileSync(path.join(repo, '.device-carry/aside/models/big/sub/log.txt'), 'utf8')).toBe('log\n');
    // nothing of it travels, and the aside folder is ignored (so it travels only when a call carries it)
    expect(travels(repo)).toEqual(['src/a.ts']);
    expect(aside(repo, 'status').stdout).toBe('aside: models/big\n');
    // a second out of the same folder: no longer tracked, refused
    const again = aside(repo, 'out', 'models/big');
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('models/big: not tracked by git');

    const back = aside(repo, 'back');
    expect(back.status, back.stderr).toBe(0);
    expect(back.stdout).toBe('tree-aside: models/big back\n');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(travels(repo)).toEqual(['models/big/sub/log.txt', 'models/big/w.bin', 'src/a.ts']);
    expect(aside(repo, 'status').stdout).toBe('nothing is set aside\n');
  });

  it('refuses a folder with changes, an untracked path and a path outside the checkout; back never overwrites', () => {
    const repo = path.join(tmp, 'repo');
    writeFileSync(path.join(repo, 'models/big/w.bin'), Buffer.alloc(4096, 8)); // a change: back would lose a staged one
    const changed = aside(repo, 'out', 'models/big');
    expect(changed.status).toBe(1);
    expect(changed.stderr).toContain('models/big: has changes');
    expect(existsSync(path.join(repo, 'models/big/w.bin'))).toBe(true);
    git(repo, 'checkout', '--', 'models/big');
    expect(aside(repo, 'out', 'nothing-here').stderr).toContain('nothing-here: not tracked by git');
    expect(aside(repo, 'out', '../elsewhere').status).toBe(2);
    expect(aside(repo, 'out').status).toBe(2);
    // the checkout itself and .git: refused in words, nothing moved
    for (const p of ['.', './', '.git']) {
      const r = aside(repo, 'out', p);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('give a tracked folder or file inside this checkout');
    }
    expect(git(repo, 'status', '--porcelain')).toBe('');
    // names that look like options or hold spaces go out and come back as they were
    for (const name of ['-dash', 'with space']) {
      mkdirSync(path.join(repo, name));
      writeFileSync(path.join(repo, name, 'f'), name);
    }
    git(repo, 'add', '.');
    git(repo, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'odd names');
    const odd = aside(repo, 'out', '-dash', 'with space');
    expect(odd.status, odd.stderr).toBe(0);
    expect(travels(repo)).not.toContain('-dash/f');
    expect(travels(repo)).not.toContain('with space/f');
    expect(aside(repo, 'back').status).toBe(0);
    expect(readFileSync(path.join(repo, '-dash/f'), 'utf8')).toBe('-dash');
    expect(git(repo, 'status', '--porcelain')).toBe('');

    expect(aside(repo, 'out', 'models/big').status).toBe(0);
    mkdirSync(path.join(repo, 'models/big')); // something made there meanwhile
    const blocked = aside(repo, 'back');
    expect(blocked.status).toBe(1);
    expect(blocked.stderr).toContain('models/big exists again');
    expect(existsSync(path.join(repo, '.device-carry/aside/models/big/w.bin'))).toBe(true);
    rmSync(path.join(repo, 'models/big'), { recursive: true });
    expect(aside(repo, 'back').status).toBe(0);
    expect(git(repo, 'status', '--porcelain')).toBe('');
  });
});

/**
 * How fast `loupe` and `npm start` answer.
 *
 * - CLI: `loupe --version` and `loupe --help` through bin/loupe.mjs (the bundle dist/cli, built by `npm install`'s
 *   prepare step) against `node -e 0`, and the same through the TypeScript sources (LOUPE_CLI_FROM_SOURCE=1, what
 *   every start cost before the bundle). Runs interleaved, ROUNDS rounds; ratios of medians to `node -e 0`, with
 *   the min–max spread as the noise. Target (issue 30): ≤ 10× `node -e 0`.
 * - `npm start` on a fresh clone: `git clone` of this repository's HEAD, its node_modules linked to this one (what
 *   `npm ci` would install), then `npm run prepare` (the step `npm ci` runs after installing), then the seconds
 *   from `node scripts/start.mjs` (browser mode) to the first HTTP 200 of the app's page. Target: < 5 s.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../e2e/harness';
import { setTimeout as sleep } from 'node:timers/promises';

const ROUNDS = Number(process.env.LOUPE_BENCH_ROUNDS ?? 7);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function timeOnce(args: string[], env: Record<string, string> = {}, cwd = ROOT): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

function get(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => {
      req.destroy();
      resolve(0);
    });
  });
}

/** Seconds from `npm start` (browser mode) to an HTTP 200 of the page it prints. */
async function startToOk(clone: string): Promise<number> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-startbench-ws-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(clone, 'scripts/start.mjs'), '--no-open', '--workspace', ws], { cwd: clone, env: { ...process.env, LOUPE_BROWSER_MODE: '1', DISPLAY: '' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start printed no URL in 300 s:\n${out}`)), 300_000);
      const onData = (d: Buffer) => {
        out += d.toString();
        const m = /open: (http:\/\/\S+)/.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.on('exit', (c) => reject(new Error(`npm start exited ${c}:\n${out}`)));
    });
    for (;;) {
      if ((await get(url)) === 200) return (performance.now() - t0) / 1000;
      if (performance.now() - t0 > 300_000) throw new Error('no HTTP 200 in 300 s');
      await sleep(20);
    }
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* gone */
    }
    await sleep(500);
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  // The bundle must be current for the bundled rows to mean anything.
  execFileSync(process.execPath, ['-e', "import('./scripts/build-node.mjs').then((m) => m.buildCli())"], { cwd: ROOT, stdio: 'pipe' });
  const loupe = path.join(ROOT, 'bin/loupe.mjs');
  const cases: Array<[string, string[], Record<string, string>]> = [
    ['node -e 0', ['-e', '0'], {}],
    ['loupe --version (bundle)', [loupe, '--version'], {}],
    ['loupe --help (bundle)', [loupe, '--help'], {}],
    ['loupe --version (sources through tsx)', [loupe, '--version'], { LOUPE_CLI_FROM_SOURCE: '1' }],
    ['loupe --help (sources through tsx)', [loupe, '--help'], { LOUPE_CLI_FROM_SOURCE: '1' }],
  ];
  const times = new Map<string, number[]>(cases.map(([k]) => [k, []]));
  for (const [, args, env] of cases) timeOnce(args, env); // warm the file cache
  for (let r = 0; r < ROUNDS; r++) for (const [k, args, env] of cases) times.get(k)!.push(timeOnce(args, env));
  const base = median(times.get('node -e 0')!);
  for (const [k] of cases) {
    const xs = times.get(k)!;
    rows.push({ measure: k, median_ms: median(xs), 'min–max ms': `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`, 'ratio to node -e 0': median(xs) / base, target: k.includes('bundle') ? '≤ 10×' : '' });
  }

  const clone = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-startbench-'));
  try {
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone], { stdio: 'pipe' });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
    const t0 = performance.now();
    execFileSync(process.execPath, [path.join(clone, 'scripts/prepare.mjs')], { cwd: clone, stdio: 'pipe' });
    rows.push({ measure: 'fresh clone: npm install\'s prepare step (CLI bundle + renderer)', median_ms: performance.now() - t0, 'min–max ms': '', 'ratio to node -e 0': '', target: 'once, at install' });
    const starts: number[] = [];
    for (let i = 0; i < 3; i++) starts.push(await startToOk(clone));
    rows.push({ measure: 'fresh clone after install: npm start → HTTP 200 (s)', median_ms: median(starts) * 1000, 'min–max ms': `${(Math.min(...starts) * 1000).toFixed(0)}–${(Math.max(...starts) * 1000).toFixed(0)}`, 'ratio to node -e 0': '', target: '< 5000' });
  } finally {
    fs.rmSync(clone, { recursive: true, force: true });
  }
  return rows;
}

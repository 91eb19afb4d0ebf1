// `npm start`: the Electron app when its binary is installed; otherwise the same app in browser mode
// (served on 127.0.0.1, opened in the system Chromium as an app window, or printed as a URL).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { electronStatus } from './electron-status.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const passthrough = process.argv.slice(2);

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function newest(dir) {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs);
  }
  return t;
}

// Build what is missing or stale, so a fresh clone starts with one command.
const rendererIndex = path.join(root, 'dist/renderer/index.html');
if (!fs.existsSync(rendererIndex) || newest(path.join(root, 'renderer')) > fs.statSync(rendererIndex).mtimeMs) {
  run(process.execPath, [path.join(root, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'error']);
}

// glibc's malloc asks for transparent huge pages (glibc 2.35+; ignored by other C libraries and older glibc; a value
// the user set is kept). Image decodes and resizes allocate tens of MB a call, and where page faults are costly (a
// VM) that was a large part of their time: the 4K image pipeline on the Demo's path took 144.5 ms without it and
// 105.7 ms with it on a 2-core VM (npm run bench -- imageops).
function withHugePages(env) {
  if (process.platform !== 'linux' || /(^|:)glibc\.malloc\.hugetlb=/.test(env.GLIBC_TUNABLES ?? '')) return env;
  return { ...env, GLIBC_TUNABLES: env.GLIBC_TUNABLES ? `${env.GLIBC_TUNABLES}:glibc.malloc.hugetlb=1` : 'glibc.malloc.hugetlb=1' };
}

const status = electronStatus({ nodeVersion: process.version, resolve: (id) => require.resolve(id), load: (id) => require(id) });
const electronBinary = status.ok ? status.binary : null;

if (electronBinary && process.env.LOUPE_BROWSER_MODE !== '1') {
  run(process.execPath, [path.join(root, 'scripts/build-node.mjs')]);
  const child = spawn(electronBinary, [root, ...passthrough], { stdio: 'inherit', env: withHugePages(process.env) });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  if (!status.ok) console.log(status.message);
  console.log(process.env.LOUPE_BROWSER_MODE === '1' ? 'Starting Loupe in browser mode (LOUPE_BROWSER_MODE=1).' : 'Starting Loupe in browser mode instead.');
  const child = spawn(process.execPath, [path.join(root, 'bin/loupe.mjs'), 'serve', ...passthrough], { stdio: 'inherit', env: withHugePages(process.env) });
  child.on('exit', (code) => process.exit(code ?? 0));
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
}

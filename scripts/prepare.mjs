// `npm install` / `npm ci` in a clone run this (npm's `prepare` lifecycle; the project's own scripts need no
// allowScripts entry). It builds what makes Loupe start at once:
//   - the CLI bundle dist/cli/ and the worker bundles (scripts/build-node.mjs buildCli), which bin/loupe.mjs runs
//     instead of the TypeScript sources while they are current;
//   - the renderer dist/renderer/, so `npm start` and `loupe serve` serve it without building first.
// Neither is required: when a build fails (or vite is absent: an install without dev dependencies), the install
// still succeeds, the CLI runs from the sources through tsx, and `npm start` builds the renderer when it starts.
// LOUPE_SKIP_PREPARE=1 skips both.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const warn = (what, err) => process.stderr.write(`loupe prepare: ${what} was not built (${err}); Loupe still runs, just slower to start\n`);

if (process.env.LOUPE_SKIP_PREPARE === '1') process.exit(0);

try {
  const { buildCli } = await import('./build-node.mjs');
  await buildCli();
} catch (err) {
  warn('the CLI bundle', err instanceof Error ? err.message : String(err));
}

const vite = path.join(root, 'node_modules', 'vite', 'bin', 'vite.js');
if (!fs.existsSync(vite)) {
  warn('the renderer', 'vite is not installed');
} else {
  const r = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'error'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) warn('the renderer', `vite exited with ${r.status ?? r.signal}`);
}

// Production bundles:
//   dist/cli/loupe.mjs              the `loupe` CLI (ESM, split: each command's implementation is a chunk loaded
//                                   when that command runs, so `--version` and `--help` load almost nothing).
//                                   bin/loupe.mjs runs it while dist/cli/inputs.json says it is current, and the
//                                   TypeScript sources through tsx otherwise.
// and for the Electron door:
//   dist/main/electron/main.cjs     Electron's main process
//   dist/main/electron/preload.cjs  the sandboxed preload (CommonJS, and self-contained: a sandboxed preload can
//                                   require only `electron` and a few built-ins)
//   dist/main/electron/core.cjs     the core, run in Electron's utilityProcess
//   dist/workers/<name>.cjs         the worker threads and child processes the core starts (app/paths.ts names them)
// CommonJS has no `import.meta`, so `import.meta.url` is defined as the bundle's own file URL; app/paths.ts
// resolves everything else from there. node_modules stay external: electron-builder ships them (sharp and
// onnxruntime-node unpacked from the asar).
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Keep in step with WORKER_ENTRIES in app/paths.ts (tests/unit/electron/paths.test.ts checks both agree).
export const WORKERS = {
  engine: 'native/engine/worker.ts',
  image: 'native/image/imageWorker.ts',
  pilResample: 'native/image/pilResampleWorker.ts',
};

const IMPORT_META_URL = '__loupe_import_meta_url';
const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  // Electron 45 runs Node 22; the harness and `npm start` on Node 20.19+ load the same files.
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  packages: 'external',
  external: ['electron'],
  define: { 'import.meta.url': IMPORT_META_URL },
  banner: { js: `var ${IMPORT_META_URL} = require('node:url').pathToFileURL(__filename).href;` },
  // A warning here (e.g. an `import.meta` left empty) is a bundle that breaks at run time: fail the build.
  logLevel: 'warning',
  metafile: true,
};

async function bundle(options) {
  const r = await build({ ...common, ...options });
  if (r.warnings.length > 0) throw new Error(`${options.outfile}: ${r.warnings.length} esbuild warning(s) — see above`);
  return r;
}

/** The worker bundles (dist/workers/<name>.cjs); returns every source file they were built from. */
async function buildWorkers() {
  const rs = await Promise.all(Object.entries(WORKERS).map(([name, entry]) => bundle({ entryPoints: [entry], outfile: `dist/workers/${name}.cjs` })));
  return rs.flatMap((r) => Object.keys(r.metafile.inputs));
}

/**
 * The CLI bundle, with the list of every source file it was built from (path, size, mtime) that bin/loupe.mjs
 * compares before trusting it. Written last, so a half-built dist/cli is never taken for a current one.
 */
export async function buildCli() {
  const workerInputs = await buildWorkers();
  const outdir = path.join(root, 'dist', 'cli');
  fs.rmSync(outdir, { recursive: true, force: true });
  const r = await build({
    absWorkingDir: root,
    entryPoints: { loupe: 'main/cli/run.ts' },
    outdir: 'dist/cli',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: true,
    packages: 'external',
    external: ['electron'],
    metafile: true,
    logLevel: 'warning',
  });
  if (r.warnings.length > 0) throw new Error(`dist/cli: ${r.warnings.length} esbuild warning(s) — see above`);
  // The workers the CLI starts run from their bundles too (app/paths.ts: a bundle starts bundles).
  const inputs = [...new Set([...Object.keys(r.metafile.inputs), ...workerInputs, 'package.json'])].sort();
  const files = inputs.map((rel) => {
    const st = fs.statSync(path.join(root, rel));
    return [rel, st.size, st.mtimeMs];
  });
  fs.writeFileSync(path.join(outdir, 'inputs.json'), JSON.stringify({ node: process.version, files }));
}

export async function buildNode() {
  await Promise.all([
    bundle({ entryPoints: ['main/electron/main.ts'], outfile: 'dist/main/electron/main.cjs' }),
    bundle({ entryPoints: ['main/electron/coreHost.ts'], outfile: 'dist/main/electron/core.cjs' }),
    // Sandboxed: bundle everything it uses; only `electron` stays a require.
    bundle({ entryPoints: ['main/electron/preload.ts'], outfile: 'dist/main/electron/preload.cjs', packages: undefined, platform: 'browser', banner: {}, define: {} }),
    buildWorkers(),
  ]);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildNode();
  await buildCli();
  console.log(`built dist/main/electron/{main,preload,core}.cjs, dist/workers/{${Object.keys(WORKERS).join(',')}}.cjs and dist/cli/loupe.mjs`);
}

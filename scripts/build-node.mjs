// Production bundles for the Electron door (the CLI and browser mode run the TypeScript sources through tsx and
// need none of this):
//   dist/main/electron/main.cjs     Electron's main process
//   dist/main/electron/preload.cjs  the sandboxed preload (CommonJS, and self-contained: a sandboxed preload can
//                                   require only `electron` and a few built-ins)
//   dist/main/electron/core.cjs     the core, run in Electron's utilityProcess
//   dist/workers/<name>.cjs         the worker threads and child processes the core starts (app/paths.ts names them)
// CommonJS has no `import.meta`, so `import.meta.url` is defined as the bundle's own file URL; app/paths.ts
// resolves everything else from there. node_modules stay external: electron-builder ships them (sharp and
// onnxruntime-node unpacked from the asar).
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Keep in step with WORKER_ENTRIES in app/paths.ts (tests/unit/electron/paths.test.ts checks both agree).
export const WORKERS = {
  engine: 'native/engine/worker.ts',
  image: 'native/image/imageWorker.ts',
  pilResample: 'native/image/pilResampleWorker.ts',
  devices: 'native/engine/devicesWorker.ts',
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
};

async function bundle(options) {
  const r = await build({ ...common, ...options });
  if (r.warnings.length > 0) throw new Error(`${options.outfile}: ${r.warnings.length} esbuild warning(s) — see above`);
}

export async function buildNode() {
  await Promise.all([
    bundle({ entryPoints: ['main/electron/main.ts'], outfile: 'dist/main/electron/main.cjs' }),
    bundle({ entryPoints: ['main/electron/coreHost.ts'], outfile: 'dist/main/electron/core.cjs' }),
    // Sandboxed: bundle everything it uses; only `electron` stays a require.
    bundle({ entryPoints: ['main/electron/preload.ts'], outfile: 'dist/main/electron/preload.cjs', packages: undefined, platform: 'browser', banner: {}, define: {} }),
    ...Object.entries(WORKERS).map(([name, entry]) => bundle({ entryPoints: [entry], outfile: `dist/workers/${name}.cjs` })),
  ]);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildNode();
  console.log(`built dist/main/electron/{main,preload,core}.cjs and dist/workers/{${Object.keys(WORKERS).join(',')}}.cjs`);
}

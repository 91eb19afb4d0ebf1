/**
 * Where Loupe's own files are, in each layout it runs from. This is the one place that knows:
 *  - a clone (the CLI and tests): TypeScript sources run through tsx; workers start from their `.ts` files;
 *  - `npm start` (Electron on the clone): production bundles in dist/ beside the sources;
 *  - a packaged app: the same bundles inside resources/app.asar, the bundled models beside it in
 *    resources/models (electron-builder `extraResources`), native modules in resources/app.asar.unpacked.
 * Bundles define `import.meta.url` at build time (scripts/build-node.mjs), so the code below reads the same
 * in every layout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(import.meta.url);

/** True when this code runs from a production bundle (dist/…/*.cjs), false under tsx from the sources. */
export const fromBundle = !HERE.endsWith('.ts');

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

let cachedRoot: string | undefined;

/** The package root: the folder with package.json (the clone, or resources/app.asar when packaged). */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = path.dirname(HERE);
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return (cachedRoot = dir);
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${HERE}: this copy of Loupe is incomplete`);
    dir = up;
  }
}

/**
 * Resources that ship beside the app rather than inside it: Electron's `process.resourcesPath` when the package
 * root lies inside it (a packaged app), the package root otherwise (a clone, or `npm start`, where
 * resourcesPath is Electron's own folder).
 */
export function resourcesRoot(): string {
  const resourcesPath = (process as NodeJS.Process & { resourcesPath?: string }).resourcesPath;
  const root = packageRoot();
  return resourcesPath && isInside(root, resourcesPath) ? resourcesPath : root;
}

/** A path under the bundled models folder (models/ in a clone, resources/models when packaged). */
export function modelsPath(...parts: string[]): string {
  return path.join(resourcesRoot(), 'models', ...parts);
}

/** The built renderer (index.html and assets). */
export function rendererDir(): string {
  return path.join(packageRoot(), 'dist', 'renderer');
}

/** The Electron bundles: main process, preload, and the core's utility process. */
export function electronBundle(name: 'main' | 'preload' | 'core'): string {
  return path.join(packageRoot(), 'dist', 'main', 'electron', `${name}.cjs`);
}

export type WorkerName = 'engine' | 'image' | 'pilResample' | 'devices';

const WORKER_SOURCES: Record<WorkerName, string> = {
  engine: 'native/engine/worker.ts',
  image: 'native/image/imageWorker.ts',
  pilResample: 'native/image/pilResampleWorker.ts',
  devices: 'native/engine/devicesWorker.ts',
};

/** Names of the worker bundles scripts/build-node.mjs writes, with the sources they start from. */
export const WORKER_ENTRIES: Readonly<Record<WorkerName, string>> = WORKER_SOURCES;

/**
 * The file a worker thread or child process runs: its TypeScript source under tsx (started through a
 * bootstrap that registers tsx), its bundle dist/workers/<name>.cjs otherwise (started directly).
 */
export function workerFile(name: WorkerName): string {
  return fromBundle ? path.join(packageRoot(), 'dist', 'workers', `${name}.cjs`) : path.join(packageRoot(), WORKER_SOURCES[name]);
}

/**
 * The PyVision sandbox's Python worker. It is bind-mounted into the sandbox, so it must be a real file, never inside
 * an asar: packaged apps ship it beside the app (electron-builder `extraResources`, to `native/pysandbox/`), a clone
 * and `npm start` use the source file. Same relative path in every layout.
 */
export function sandboxWorkerPy(): string {
  return path.join(resourcesRoot(), 'native', 'pysandbox', 'worker.py');
}

/** A source-tree file that only the tsx layout uses (the worker bootstraps); never reached from a bundle. */
export function sourceFile(rel: string): string {
  if (fromBundle) throw new Error(`${rel} is a source file: bundles start their workers directly`);
  return path.join(packageRoot(), rel);
}

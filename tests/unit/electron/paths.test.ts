/**
 * app/paths.ts, the one owner of Loupe's file locations: bundled models, examples, the renderer and the worker
 * entries resolve the same in a clone, under `npm start` (Electron's resourcesPath is its own folder) and in a
 * packaged app (the package root is resources/app.asar; models sit in resources/models).
 */
import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WORKER_ENTRIES, fromBundle, modelsPath, packageRoot, rendererDir, resourcesRoot, sourceFile, workerFile, type WorkerName } from '../../../app/paths';
// @ts-expect-error -- a plain .mjs build script (scripts/ are not TypeScript)
import { WORKERS } from '../../../scripts/build-node.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
type WithResources = NodeJS.Process & { resourcesPath?: string };

describe('app/paths', () => {
  afterEach(() => {
    delete (process as WithResources).resourcesPath;
  });

  it('from the sources: the package root is the clone, workers are their TypeScript files', () => {
    expect(fromBundle).toBe(false);
    expect(packageRoot()).toBe(ROOT);
    expect(rendererDir()).toBe(path.join(ROOT, 'dist', 'renderer'));
    for (const name of Object.keys(WORKER_ENTRIES) as WorkerName[]) {
      expect(workerFile(name)).toBe(path.join(ROOT, WORKER_ENTRIES[name]));
      expect(fs.existsSync(workerFile(name)), name).toBe(true);
    }
    expect(fs.existsSync(sourceFile('native/workerHost/bootstrap.mjs'))).toBe(true);
  });

  it('the bundled models resolve in the clone, under `npm start`, and in a packaged app', () => {
    // A clone (no Electron): models/ in the package root.
    expect(resourcesRoot()).toBe(ROOT);
    expect(fs.existsSync(modelsPath('loupe-tiny', 'model', 'config.json'))).toBe(true);
    expect(fs.existsSync(modelsPath('loupe-tiny', 'examples', 'samples.jsonl'))).toBe(true);
    expect(fs.existsSync(modelsPath('tiny-random-qwen25vl', 'config.json'))).toBe(true);
    // `npm start`: Electron's resourcesPath is its own folder, outside the package: still the clone's models.
    (process as WithResources).resourcesPath = path.join(ROOT, 'node_modules', 'electron', 'dist', 'resources');
    expect(modelsPath('loupe-tiny')).toBe(path.join(ROOT, 'models', 'loupe-tiny'));
    // Packaged: the package root lies inside resourcesPath (resources/app.asar): models are beside the asar.
    (process as WithResources).resourcesPath = path.dirname(ROOT);
    expect(resourcesRoot()).toBe(path.dirname(ROOT));
    expect(modelsPath('loupe-tiny', 'model')).toBe(path.join(path.dirname(ROOT), 'models', 'loupe-tiny', 'model'));
  });

  it('the build script bundles exactly the workers paths.ts names', () => {
    expect(WORKERS).toEqual(WORKER_ENTRIES);
  });
});

/** Image operations for the core (`ImageOps`), implemented with sharp. */
import type { MediaStore } from '../../app/workspace/mediaStore';
import type { ImageOps } from '../../app/tools/imageOps';
import { SharpImageOps, type SharpImageOpsOptions } from './sharpImageOps';
import { WorkerImageOps, type WorkerImageOpsOptions } from './workerImageOps';

export * from './sharpImageOps';
export * from './workerImageOps';
export { findPillowPython } from './pillow';

/**
 * The default ImageOps. 'worker' (default) runs everything on a worker thread; 'inline' runs sharp
 * from the calling thread (libvips still decodes/resizes on libuv threads) — fine for the CLI and tests.
 * See tests/bench/imageops.bench.ts for the event-loop lag of each.
 */
export function createImageOps(media: MediaStore, opts: WorkerImageOpsOptions & { mode?: 'inline' | 'worker' } = {}): ImageOps & { close?: () => Promise<void> } {
  const { mode = 'worker', ...rest } = opts;
  if (mode === 'worker') return new WorkerImageOps(media, rest);
  const { workers: _ignored, idleMs: _idle, ...inline } = rest;
  return new SharpImageOps(media, inline satisfies SharpImageOpsOptions);
}

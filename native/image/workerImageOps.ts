/**
 * `ImageOps` whose work (decode, resize, encode, hash, write) runs on worker threads, so even the
 * JS-side buffer work stays off the caller's event loop. Errors come back as `ImageError` with the
 * same code and message as in-process.
 */
import type { MediaRef } from '../../app/contract/trajectory';
import type { ImageOps } from '../../app/tools/imageOps';
import type { MediaStore } from '../../app/workspace/mediaStore';
import { RemoteError, WorkerPool } from '../workerHost/pool';
import { workerFile } from '../../app/paths';
import { ImageError, type ImageErrorCode, type SharpImageOpsOptions } from './sharpImageOps';

type Api = {
  importFile: (a: { path: string }) => Promise<MediaRef>;
  importBytes: (a: { bytes: Uint8Array }) => Promise<MediaRef>;
  resize: (a: { src: MediaRef; width: number; height: number }) => Promise<MediaRef>;
  crop: (a: { src: MediaRef; box: [number, number, number, number]; size?: [number, number] }) => Promise<MediaRef>;
  durable: (a: null) => Promise<boolean>;
};

export interface WorkerImageOpsOptions extends SharpImageOpsOptions {
  /** Worker threads (default 1: libvips already uses its own threads inside each call). */
  workers?: number;
}

function rethrow(err: unknown): never {
  if (err instanceof RemoteError && err.name === 'ImageError') {
    const file = err.props['file'];
    throw new ImageError(err.code as ImageErrorCode, err.message, typeof file === 'string' ? file : undefined);
  }
  throw err;
}

export class WorkerImageOps implements ImageOps {
  private readonly pool: WorkerPool<Api>;
  private readonly untrack: () => void;

  constructor(
    readonly media: MediaStore,
    opts: WorkerImageOpsOptions = {},
  ) {
    const { workers, ...options } = opts;
    this.pool = new WorkerPool<Api>({
      entry: workerFile('image'),
      size: workers ?? 1,
      name: 'image-ops',
      // The workers write as `media` does (fsync'd in the background where it is `group`), and `media.durable()`
      // waits for theirs too, so the run store's record sync still follows the media files.
      workerData: { mediaDir: media.dir, durability: media.durability, options },
    });
    this.untrack = media.addWriter(() => this.durable());
  }

  /** Resolves once every file the workers stored is on disk (see `MediaStore.durable`). */
  async durable(): Promise<void> {
    await this.pool.callLive('durable', null).catch(rethrow);
  }

  pathOf(ref: MediaRef): string {
    return this.media.pathOf(ref.id);
  }

  importFile(path: string): Promise<MediaRef> {
    return this.pool.call('importFile', { path }, { key: path }).catch(rethrow);
  }

  importBytes(bytes: Uint8Array): Promise<MediaRef> {
    return this.pool.call('importBytes', { bytes }).catch(rethrow);
  }

  resize(src: MediaRef, width: number, height: number): Promise<MediaRef> {
    return this.pool.call('resize', { src, width, height }, { key: src.id }).catch(rethrow);
  }

  crop(src: MediaRef, box: [number, number, number, number], size?: [number, number]): Promise<MediaRef> {
    return this.pool.call('crop', { src, box, ...(size ? { size } : {}) }, { key: src.id }).catch(rethrow);
  }

  /** Wait for the workers' files to be durable, then stop them. */
  async close(): Promise<void> {
    try {
      await this.durable();
    } finally {
      this.untrack();
      await this.pool.close();
    }
  }
}

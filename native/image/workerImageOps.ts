/**
 * `ImageOps` whose work (decode, resize, encode, hash, write) runs on worker threads, so even the
 * JS-side buffer work stays off the caller's event loop. Errors come back as `ImageError` with the
 * same code and message as in-process.
 */
import type { MediaRef } from '../../app/contract/trajectory';
import type { EngineImage, RgbPixels } from '../../app/engines/types';
import { isHeldRef, type ImageOps } from '../../app/tools/imageOps';
import type { MediaStore } from '../../app/workspace/mediaStore';
import { RemoteError, WorkerPool } from '../workerHost/pool';
import { workerFile } from '../../app/paths';
import { ImageError, type ImageErrorCode, type SharpImageOpsOptions } from './sharpImageOps';

type Api = {
  importFile: (a: { path: string }) => Promise<MediaRef>;
  importBytes: (a: { bytes: Uint8Array }) => Promise<MediaRef>;
  resize: (a: { src: MediaRef; width: number; height: number }) => Promise<MediaRef>;
  crop: (a: { src: MediaRef; box: [number, number, number, number]; size?: [number, number] }) => Promise<MediaRef>;
  keep: (a: { ref: MediaRef }) => Promise<MediaRef>;
  pixels: (a: { ref: MediaRef }) => Promise<RgbPixels>;
  bytes: (a: { ref: MediaRef }) => Promise<Uint8Array>;
  durable: (a: null) => Promise<boolean>;
};

/** Held ids remembered (their worker's key, what they were kept as); the oldest are forgotten past this many. */
const HELD_NOTES = 4096;

export interface WorkerImageOpsOptions extends SharpImageOpsOptions {
  /** Worker threads (default 1: libvips already uses its own threads inside each call). */
  workers?: number;
  /** A worker with nothing to do stops after this many ms (the pool's default, 60 s); its held images go with it. */
  idleMs?: number;
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
  /**
   * Where each held image lives: the key of the call that made it, so later calls on it reach the same worker
   * (the pool routes by key), and once kept, its stored ref, so it is found again even after that worker stopped.
   */
  private readonly heldNotes = new Map<string, { key: string; kept?: Promise<MediaRef> }>();

  constructor(
    readonly media: MediaStore,
    opts: WorkerImageOpsOptions = {},
  ) {
    const { workers, idleMs, ...options } = opts;
    this.pool = new WorkerPool<Api>({
      entry: workerFile('image'),
      size: workers ?? 1,
      ...(idleMs !== undefined ? { idleMs } : {}),
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
    if (isHeldRef(ref)) throw new ImageError('not-found', `media ${ref.id} is held in memory and has no file yet; keep it first`);
    return this.media.pathOf(ref.id);
  }

  /** The pool key for calls on `ref`: a held image's maker's key (its pixels are in that worker), else its id. */
  private keyOf(ref: MediaRef): string {
    return this.heldNotes.get(ref.id)?.key ?? ref.id;
  }

  /** A kept held image is used by its stored ref (its worker may have stopped since); anything else as it is. */
  private async current(ref: MediaRef): Promise<MediaRef> {
    const kept = this.heldNotes.get(ref.id)?.kept;
    return kept ? kept.catch(() => ref) : ref;
  }

  private noteHeld(made: MediaRef, key: string): MediaRef {
    if (isHeldRef(made)) {
      this.heldNotes.set(made.id, { key });
      if (this.heldNotes.size > HELD_NOTES) this.heldNotes.delete(this.heldNotes.keys().next().value!);
    }
    return made;
  }

  keep(ref: MediaRef): Promise<MediaRef> {
    if (!isHeldRef(ref)) return Promise.resolve(ref);
    const note = this.heldNotes.get(ref.id) ?? { key: ref.id };
    if (!note.kept) {
      note.kept = this.pool.call('keep', { ref }, { key: note.key }).catch(rethrow);
      this.heldNotes.set(ref.id, note);
      note.kept.catch(() => {
        if (this.heldNotes.get(ref.id) === note) delete note.kept; // a failed keep may be tried again
      });
    }
    return note.kept;
  }

  engineImage(ref: MediaRef): EngineImage {
    if (!isHeldRef(ref)) return { ...ref, path: this.pathOf(ref) };
    return {
      ...ref,
      pixels: async () => {
        const r = await this.current(ref);
        return this.pool.call('pixels', { ref: r }, { key: this.keyOf(ref) }).catch(rethrow);
      },
      bytes: async () => {
        const r = await this.current(ref);
        return this.pool.call('bytes', { ref: r }, { key: this.keyOf(ref) }).catch(rethrow);
      },
    };
  }

  importFile(path: string): Promise<MediaRef> {
    return this.pool.call('importFile', { path }, { key: path }).catch(rethrow);
  }

  importBytes(bytes: Uint8Array): Promise<MediaRef> {
    return this.pool.call('importBytes', { bytes }).catch(rethrow);
  }

  async resize(src: MediaRef, width: number, height: number): Promise<MediaRef> {
    const key = this.keyOf(src);
    const from = await this.current(src);
    const made = await this.pool.call('resize', { src: from, width, height }, { key }).catch(rethrow);
    return this.noteHeld(made.id === from.id ? src : made, key);
  }

  async crop(src: MediaRef, box: [number, number, number, number], size?: [number, number]): Promise<MediaRef> {
    const key = this.keyOf(src);
    const from = await this.current(src);
    return this.noteHeld(await this.pool.call('crop', { src: from, box, ...(size ? { size } : {}) }, { key }).catch(rethrow), key);
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

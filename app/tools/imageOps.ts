/**
 * Pixel operations the tools need. `app/` only declares them; `native/image` implements them with
 * sharp off the main thread and `main/` (or a test) wires the implementation in.
 *
 * Imports are stored at once (they are the question's files). Derived images (`resize`, `crop`) are **held in
 * memory**: their ref's id is a held id (`mem-<random>.png`, see `isHeldRef`) that the next op and the engines
 * (`engineImage`) consume directly, and nothing is encoded or written until `keep` is called: when the image is
 * shown (it needs a URL) or kept (a record names it). `keep` writes the PNG once and returns the ref under its
 * content id (`<sha256>.png`), the only id that may reach a record or a URL.
 */
import type { MediaRef } from '../contract/trajectory';
import type { EngineImage } from '../engines/types';

export type { RgbPixels } from '../engines/types';

/** Held (in-memory, not yet written) images have ids of this shape; stored ones are `<sha256>.<ext>`. */
const HELD_RE = /^mem-[0-9a-f]{24}\.png$/;

/** Whether `ref` names an image held in memory by an ImageOps (not a file in the media store). */
export function isHeldRef(ref: Pick<MediaRef, 'id'>): boolean {
  return HELD_RE.test(ref.id);
}

export interface ImageOps {
  /** Read a file, refuse pixel bombs, flatten alpha onto white, store it; returns the original media. */
  importFile(path: string): Promise<MediaRef>;
  /** Import raw encoded bytes (PNG/JPEG/WebP…) the same way. */
  importBytes(bytes: Uint8Array): Promise<MediaRef>;
  /** Resize to exactly width × height (bicubic, as PIL's default); the result is held in memory (see `keep`). */
  resize(src: MediaRef, width: number, height: number): Promise<MediaRef>;
  /**
   * Crop the integer box [left, top, right, bottom); with `size` [width, height], resize the crop to it (as `resize`
   * would). The result is held in memory (see `keep`); with `size` the crop itself is never even held.
   */
  crop(src: MediaRef, box: [number, number, number, number], size?: [number, number]): Promise<MediaRef>;
  /**
   * The stored ref of `ref`: a held image is encoded (PNG) and written once, under its content id; every later call
   * (and a concurrent one) returns the same ref without writing again. A stored ref comes back as it is.
   */
  keep(ref: MediaRef): Promise<MediaRef>;
  /** What an engine reads: the file of a stored image, or a held one's pixels and PNG bytes on demand (nothing written). */
  engineImage(ref: MediaRef): EngineImage;
  /** Absolute path of a stored media file (a held ref throws: `keep` it first). */
  pathOf(ref: MediaRef): string;
}

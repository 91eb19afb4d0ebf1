/**
 * Pixel operations the tools need. `app/` only declares them; `native/image` implements them with
 * sharp off the main thread and `main/` (or a test) wires the implementation in.
 */
import type { MediaRef } from '../contract/trajectory';

export interface ImageOps {
  /** Read a file, refuse pixel bombs, flatten alpha onto white, store it; returns the original media. */
  importFile(path: string): Promise<MediaRef>;
  /** Import raw encoded bytes (PNG/JPEG/WebP…) the same way. */
  importBytes(bytes: Uint8Array): Promise<MediaRef>;
  /** Resize to exactly width × height (bicubic, as PIL's default), store, return the new media. */
  resize(src: MediaRef, width: number, height: number): Promise<MediaRef>;
  /**
   * Crop the integer box [left, top, right, bottom) and store it; with `size` [width, height], resize
   * the crop to it (as `resize` would) and store only that: the crop itself is never encoded or written.
   */
  crop(src: MediaRef, box: [number, number, number, number], size?: [number, number]): Promise<MediaRef>;
  /** Absolute path of a stored media file. */
  pathOf(ref: MediaRef): string;
}

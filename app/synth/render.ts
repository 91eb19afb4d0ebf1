/**
 * Pixels for loupe-synth scenes: the seeded noise tile is made here (pure), the drawing (SVG → raster, grain
 * blend, JPEG) by a `SynthRaster` the door wires (native/image/synthRaster.ts, with sharp): app/ never loads a
 * native image library itself.
 */
import { Prng } from './prng';
import type { SceneLayout } from './scene';

export const NOISE_TILE = 192;

/** Grey noise around mid-grey; soft-light blending turns it into a gentle grain. */
export function noiseTile(seed: number, amplitude: number): Buffer {
  const rng = new Prng(seed);
  const buf = Buffer.alloc(NOISE_TILE * NOISE_TILE * 3);
  for (let i = 0; i < NOISE_TILE * NOISE_TILE; i++) {
    const v = 128 + Math.round((rng.next() + rng.next() - 1) * amplitude);
    buf[i * 3] = v;
    buf[i * 3 + 1] = v;
    buf[i * 3 + 2] = v;
  }
  return buf;
}

export interface RenderOptions {
  /** JPEG quality (default 92, 4:4:4 chroma so thin coloured strokes keep their colour). */
  quality?: number;
  /** Noise amplitude in grey levels around 128 (default 40). */
  noise?: number;
}

/** Raw RGB pixels. */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
}

/** The geometry of one trajectory crop: resize the source to `sourceSize`, cut `cropBox`, resize to `resized`. */
export interface SynthCrop {
  sourceSize: [number, number];
  cropBox: readonly [number, number, number, number];
  resized: [number, number];
}

/** Draws scenes and crops (implemented with sharp in native/image/synthRaster.ts). */
export interface SynthRaster {
  /** A scene as JPEG bytes. */
  renderScene(layout: SceneLayout, opts?: RenderOptions): Promise<Buffer>;
  /** A scene as raw RGB (for tests and for composing video frames). */
  renderSceneRaw(layout: SceneLayout, opts?: RenderOptions): Promise<RawImage>;
  /** Cut one crop out of `sourceFile` as its geometry says and write it as a JPEG (q92). */
  writeCrop(sourceFile: string, crop: SynthCrop, outFile: string): Promise<void>;
}

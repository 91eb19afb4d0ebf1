/**
 * Pixels for loupe-synth scenes: SVG → sharp (librsvg), plus a seeded noise tile, encoded as JPEG.
 * No fonts are involved (all glyphs are geometry), so the bytes depend only on the sharp/libvips build.
 */
import sharp from 'sharp';
import { Prng } from './prng';
import type { SceneLayout } from './scene';

const NOISE_TILE = 192;

/** Grey noise around mid-grey; soft-light blending turns it into a gentle grain. */
function noiseTile(seed: number, amplitude: number): Buffer {
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

/** Render a scene to JPEG bytes. */
export async function renderScene(layout: SceneLayout, opts: RenderOptions = {}): Promise<Buffer> {
  const raw = await renderSceneRaw(layout, opts);
  return sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: 3 } })
    .jpeg({ quality: opts.quality ?? 92, chromaSubsampling: '4:4:4', mozjpeg: false })
    .toBuffer();
}

/** Render a scene to raw RGB (for tests and for composing video frames). */
export async function renderSceneRaw(
  layout: SceneLayout,
  opts: RenderOptions = {},
): Promise<{ data: Buffer; width: number; height: number }> {
  const amp = opts.noise ?? 40;
  let img = sharp(Buffer.from(layout.svg), { density: 72 }).flatten({ background: '#ffffff' });
  if (amp > 0) {
    img = img.composite([
      {
        input: noiseTile(layout.noiseSeed, amp),
        raw: { width: NOISE_TILE, height: NOISE_TILE, channels: 3 },
        tile: true,
        blend: 'soft-light',
      },
    ]);
  }
  const { data, info } = await img.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== layout.width || info.height !== layout.height) {
    throw new Error(`loupe-synth: rendered ${info.width}x${info.height}, expected ${layout.width}x${layout.height}`);
  }
  return { data, width: info.width, height: info.height };
}

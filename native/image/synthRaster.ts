/**
 * loupe-synth's pixels, with sharp: SVG → librsvg raster with the seeded grain tile, JPEG encoding, and the
 * crops of a zoom trajectory. No fonts are involved (all glyphs are geometry), so the bytes depend only on the
 * sharp/libvips build. app/synth describes scenes; this is the one place that draws them.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { NOISE_TILE, noiseTile, type RawImage, type RenderOptions, type SynthCrop, type SynthRaster } from '../../app/synth/render';
import type { SceneLayout } from '../../app/synth/scene';

async function renderSceneRaw(layout: SceneLayout, opts: RenderOptions = {}): Promise<RawImage> {
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

async function renderScene(layout: SceneLayout, opts: RenderOptions = {}): Promise<Buffer> {
  const raw = await renderSceneRaw(layout, opts);
  return sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: 3 } })
    .jpeg({ quality: opts.quality ?? 92, chromaSubsampling: '4:4:4', mozjpeg: false })
    .toBuffer();
}

async function writeCrop(sourceFile: string, c: SynthCrop, outFile: string): Promise<void> {
  await mkdir(join(outFile, '..'), { recursive: true });
  const resized = await sharp(sourceFile).resize(c.sourceSize[0], c.sourceSize[1], { fit: 'fill', kernel: 'cubic' }).png().toBuffer();
  await sharp(resized)
    .extract({ left: c.cropBox[0], top: c.cropBox[1], width: c.cropBox[2] - c.cropBox[0], height: c.cropBox[3] - c.cropBox[1] })
    .resize(c.resized[0], c.resized[1], { fit: 'fill', kernel: 'cubic' })
    .jpeg({ quality: 92 })
    .toFile(outFile);
}

/** The SynthRaster every door hands to generateSynth / writeTrajectoryCrops. */
export const sharpSynthRaster: SynthRaster = { renderScene, renderSceneRaw, writeCrop };

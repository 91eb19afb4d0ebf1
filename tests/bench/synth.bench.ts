/**
 * loupe-synth: generation cost, and whether the answer is readable from the pixels at the global view
 * (image resized to a 448-px long side and back) versus from the target box at full resolution — the
 * benchmark's premise in numbers. The reader is an oracle (it is handed the exact target box and the glyph
 * geometry), so the global-view column is an upper bound on what a model could read there. Also importer
 * throughput on the real DeepEyes files.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { SYNTH_GLOBAL_LONG_SIDE, SYNTH_KINDS, imageSampleRecord, imageScene } from '../../app/synth';
import { importRun } from '../../app/importers';
import { readTarget, type RawImage } from '../unit/synth/decode';
import { sharpSynthRaster } from '../../native/image/synthRaster';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const PER_KIND = 6;

async function globalView(img: RawImage): Promise<RawImage> {
  const L = Math.max(img.width, img.height);
  const w = Math.round((img.width * SYNTH_GLOBAL_LONG_SIDE) / L);
  const h = Math.round((img.height * SYNTH_GLOBAL_LONG_SIDE) / L);
  const small = await sharp(img.data, { raw: { width: img.width, height: img.height, channels: 3 } }).resize(w, h).raw().toBuffer();
  // Back to full size so the same reader (and the same target box) applies.
  const { data } = await sharp(small, { raw: { width: w, height: h, channels: 3 } })
    .resize(img.width, img.height, { fit: 'fill', kernel: 'cubic' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: img.width, height: img.height };
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  for (const kind of SYNTH_KINDS) {
    const opts = { seed: 1234, n: PER_KIND, kinds: [kind], easyFraction: 0 };
    let ms = 0;
    let full = 0;
    let glob = 0;
    for (let i = 0; i < PER_KIND; i++) {
      const t0 = performance.now();
      const scene = imageScene(opts, i);
      const img = await sharpSynthRaster.renderSceneRaw(scene.layout);
      ms += performance.now() - t0;
      const rec = imageSampleRecord(opts, i, scene);
      if (readTarget(img, rec) === rec.answer) full++;
      if (readTarget(await globalView(img), rec) === rec.answer) glob++;
    }
    rows.push({
      table: 'loupe-synth readability',
      kind,
      samples: PER_KIND,
      'read from target box (full res)': `${full}/${PER_KIND}`,
      [`oracle read at global view (${SYNTH_GLOBAL_LONG_SIDE}px)`]: `${glob}/${PER_KIND}`,
      'ms/image (scene+render)': Math.round(ms / PER_KIND),
    });
  }
  const t0 = performance.now();
  const run = await importRun('deepeyes', path.join(HERE, '../fixtures/importers/deepeyes'));
  const dt = performance.now() - t0;
  rows.push({ table: 'importers', kind: 'deepeyes (real, 632 KB)', samples: run.samples.length, 'ms total': Math.round(dt), 'records/s': Math.round((run.samples.length / dt) * 1000) });
  return rows;
}

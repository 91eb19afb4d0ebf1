/**
 * The AnimationRenderer for trajectory exports, with sharp (main/ wires it; app/export stays
 * pixel-free). Each story frame is letterboxed onto a fixed canvas, its box drawn as SVG, a caption
 * bar under it; the frames are joined into an animated WebP or GIF.
 */
import sharp from 'sharp';
import type { AnimationFormat, AnimationRenderer, StoryFrame } from '../../app/export';
import { escapeHtml } from '../../app/export';

export class SharpAnimationRenderer implements AnimationRenderer {
  constructor(private readonly pathOf: (mediaId: string) => string) {}

  async render(frames: StoryFrame[], format: AnimationFormat, opts: { width?: number } = {}): Promise<{ bytes: Uint8Array; frames: number; width: number; height: number }> {
    if (frames.length === 0) throw new Error('nothing to animate: the trajectory has no images');
    const W = opts.width ?? 640;
    const imgH = Math.round((W * 3) / 4);
    const capH = 56;
    const H = imgH + capH;
    const pngs: Buffer[] = [];
    for (const f of frames) {
      const scale = Math.min(W / f.media.width, imgH / f.media.height);
      const w = Math.max(1, Math.round(f.media.width * scale));
      const h = Math.max(1, Math.round(f.media.height * scale));
      const left = Math.floor((W - w) / 2);
      const top = Math.floor((imgH - h) / 2);
      const pic = await sharp(this.pathOf(f.media.id)).resize(w, h, { fit: 'fill' }).png().toBuffer();
      const rect = (b: readonly number[], color: string, dash: string) =>
        `<rect x="${left + b[0]! * w}" y="${top + b[1]! * h}" width="${(b[2]! - b[0]!) * w}" height="${(b[3]! - b[1]!) * h}" fill="none" stroke="${color}" stroke-width="3" ${dash}/>`;
      const boxes = `${f.padded ? rect(f.padded, '#3b82f6', 'stroke-dasharray="8 5"') : ''}${f.box ? rect(f.box, '#f59e0b', '') : ''}${f.box && f.step !== undefined ? `<text x="${left + f.box[0] * w + 4}" y="${Math.max(18, top + f.box[1] * h - 6)}" font-family="DejaVu Sans, sans-serif" font-weight="bold" font-size="18" fill="#f59e0b" stroke="#000" stroke-width="0.8">${f.step}</text>` : ''}`;
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">${boxes}<rect x="0" y="${imgH}" width="${W}" height="${capH}" fill="#111827"/><text x="14" y="${imgH + 35}" font-family="DejaVu Sans, sans-serif" font-size="18" fill="#f9fafb">${escapeHtml(f.caption)}</text></svg>`;
      const frame = await sharp({ create: { width: W, height: H, channels: 3, background: '#0b0f17' } })
        .composite([{ input: pic, left, top }, { input: Buffer.from(svg), left: 0, top: 0 }])
        .png()
        .toBuffer();
      pngs.push(frame);
    }
    const delay = frames.map((f) => f.delayMs);
    const joined = sharp(pngs, { join: { animated: true } });
    const bytes = format === 'webp' ? await joined.webp({ loop: 0, delay, quality: 80 }).toBuffer() : await joined.gif({ loop: 0, delay, effort: 1, dither: 0 }).toBuffer(); // effort 1: ~6x faster than the default on photos (tests/bench/demo-export.bench.ts)
    return { bytes, frames: frames.length, width: W, height: H };
  }
}

/** Re-encode an image as JPEG (for inlining large PNGs into a mailable HTML export). */
export async function toJpeg(bytes: Uint8Array, quality: number): Promise<Buffer> {
  return sharp(bytes).jpeg({ quality }).toBuffer();
}

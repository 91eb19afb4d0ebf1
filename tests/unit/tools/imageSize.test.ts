import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { readImageSize } from '../../../app/tools/imageSize';

/** Real encoders (sharp/libvips) write the files; the header reader must agree with their metadata. */
describe('readImageSize', () => {
  const base = () => sharp({ create: { width: 317, height: 129, channels: 3, background: '#336699' } });
  it.each([
    ['png', () => base().png().toBuffer()],
    ['jpeg', () => base().jpeg({ quality: 80 }).toBuffer()],
    ['progressive jpeg with EXIF', () => base().withMetadata({ orientation: 6 }).jpeg({ progressive: true }).toBuffer()],
    ['gif', () => base().gif().toBuffer()],
    ['webp lossy', () => base().webp({ quality: 60 }).toBuffer()],
    ['webp lossless', () => base().webp({ lossless: true }).toBuffer()],
    ['webp with alpha', () => sharp({ create: { width: 317, height: 129, channels: 4, background: { r: 1, g: 2, b: 3, alpha: 0.5 } } }).webp({ quality: 60, alphaQuality: 50 }).toBuffer()],
  ])('reads %s', async (_name, make) => {
    const bytes = await make();
    const meta = await sharp(bytes).metadata();
    expect(readImageSize(bytes)).toEqual({ width: meta.width, height: meta.height });
    expect(readImageSize(bytes)).toEqual({ width: 317, height: 129 });
  });
  it('says null for what it does not know', () => {
    expect(readImageSize(new TextEncoder().encode('not an image at all, just text'))).toBeNull();
    expect(readImageSize(new Uint8Array([0xff, 0xd8, 0xff]))).toBeNull();
    expect(readImageSize(new Uint8Array())).toBeNull();
  });
});

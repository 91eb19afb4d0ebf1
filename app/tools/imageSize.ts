/**
 * Width and height read from an image file's header (PNG, JPEG, GIF, WebP, BMP), without decoding: what an
 * importer needs to record a crop's size, with no native image library in app/ (DESIGN.md §2).
 */

/** The pixel size stored in the header, or null when the bytes are not one of the formats above. */
export function readImageSize(b: Uint8Array): { width: number; height: number } | null {
  const u16be = (i: number) => ((b[i] ?? 0) << 8) | (b[i + 1] ?? 0);
  const u16le = (i: number) => (b[i] ?? 0) | ((b[i + 1] ?? 0) << 8);
  const u32be = (i: number) => u16be(i) * 65536 + u16be(i + 2);
  const u32le = (i: number) => u16le(i) + u16le(i + 2) * 65536;
  const ascii = (i: number, n: number) => String.fromCharCode(...b.subarray(i, i + n));
  const ok = (width: number, height: number) => (width > 0 && height > 0 ? { width, height } : null);
  if (b.length >= 24 && b[0] === 0x89 && ascii(1, 3) === 'PNG' && ascii(12, 4) === 'IHDR') return ok(u32be(16), u32be(20));
  if (b.length >= 10 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return ok(u16le(6), u16le(8));
  if (b.length >= 26 && ascii(0, 2) === 'BM') return ok(u32le(18), Math.abs(u32le(22) | 0));
  if (b.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WEBP') {
    const chunk = ascii(12, 4);
    if (chunk === 'VP8 ') return ok(u16le(26) & 0x3fff, u16le(28) & 0x3fff);
    if (chunk === 'VP8L') {
      const bits = u32le(21);
      return ok((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
    }
    if (chunk === 'VP8X') return ok(1 + (u16le(24) | ((b[26] ?? 0) << 16)), 1 + (u16le(27) | ((b[29] ?? 0) << 16)));
    return null;
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    // Walk the JPEG segments to the first start-of-frame (SOF0..SOF15 except DHT, JPG and DAC).
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return null;
      const marker = b[i + 1] ?? 0;
      if (marker === 0xff) {
        i += 1; // fill byte
        continue;
      }
      if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
        i += 2; // markers without a length
        continue;
      }
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return ok(u16be(i + 7), u16be(i + 5));
      i += 2 + u16be(i + 2);
    }
  }
  return null;
}

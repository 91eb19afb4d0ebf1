/**
 * Tiny readers for loupe-synth renders, used to prove a crop of the target box is legible: they read the
 * seven-segment digits, block letters and dots back from real pixels.
 */
import { BLOCK_FONT, SEG_ASPECT, SEG_GAP, SEGMENTS, segmentProbe } from '../../../app/synth';

export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
}

export type Pred = (r: number, g: number, b: number) => boolean;

export const isDarkNeutral: Pred = (r, g, b) => Math.max(r, g, b) < 110;
export const isWhite: Pred = (r, g, b) => Math.min(r, g, b) > 170;
export const isRed: Pred = (r, g, b) => r > 170 && g < 90 && b < 90;
export const isBlue: Pred = (r, g, b) => b > 170 && r < 90 && g < 130;
export const isGreen: Pred = (r, g, b) => g > 120 && r < 70 && b < 100;
export const isYellow: Pred = (r, g, b) => r > 200 && g > 160 && b < 90;
/** Looser inks for finding a glyph's extent: anti-aliased edge pixels count, so the grid lines up. */
export const isDarkish: Pred = (r, g, b) => Math.max(r, g, b) < 175;
export const isWhitish: Pred = (r, g, b) => Math.min(r, g, b) > 125;

export function px(img: RawImage, x: number, y: number): [number, number, number] {
  const i = (y * img.width + x) * 3;
  return [img.data[i] as number, img.data[i + 1] as number, img.data[i + 2] as number];
}

export function test(img: RawImage, x: number, y: number, pred: Pred): boolean {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height) return false;
  const [r, g, b] = px(img, Math.floor(x), Math.floor(y));
  return pred(r, g, b);
}

/** Bounding box [x1, y1, x2, y2) of pixels matching `pred` within `region` (and `mask`), or null. */
export function bboxOf(img: RawImage, region: [number, number, number, number], pred: Pred, mask?: (x: number, y: number) => boolean): [number, number, number, number] | null {
  let x1 = Infinity;
  let y1 = Infinity;
  let x2 = -Infinity;
  let y2 = -Infinity;
  for (let y = region[1]; y < region[3]; y++) {
    for (let x = region[0]; x < region[2]; x++) {
      if (mask && !mask(x, y)) continue;
      if (test(img, x, y, pred)) {
        x1 = Math.min(x1, x);
        y1 = Math.min(y1, y);
        x2 = Math.max(x2, x + 1);
        y2 = Math.max(y2, y + 1);
      }
    }
  }
  return Number.isFinite(x1) ? [x1, y1, x2, y2] : null;
}

/** Count pixels matching `pred` inside and outside `box`. */
export function countInOut(img: RawImage, box: readonly number[], pred: Pred): { inside: number; outside: number } {
  let inside = 0;
  let outside = 0;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      if (!test(img, x, y, pred)) continue;
      if (x >= (box[0] as number) && x < (box[2] as number) && y >= (box[1] as number) && y < (box[3] as number)) inside++;
      else outside++;
    }
  }
  return { inside, outside };
}

/** Connected components (4-neighbour) of `pred` pixels inside `region`; returns their boxes and sizes. */
export function components(img: RawImage, region: [number, number, number, number], pred: Pred, minSize = 3): Array<{ box: [number, number, number, number]; size: number }> {
  const [rx1, ry1, rx2, ry2] = region;
  const w = rx2 - rx1;
  const h = ry2 - ry1;
  const seen = new Uint8Array(w * h);
  const out: Array<{ box: [number, number, number, number]; size: number }> = [];
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (seen[y * w + x] || !test(img, rx1 + x, ry1 + y, pred)) continue;
      const stack = [[x, y]];
      seen[y * w + x] = 1;
      let size = 0;
      const box: [number, number, number, number] = [x, y, x + 1, y + 1];
      while (stack.length) {
        const [cx, cy] = stack.pop() as [number, number];
        size++;
        box[0] = Math.min(box[0], cx);
        box[1] = Math.min(box[1], cy);
        box[2] = Math.max(box[2], cx + 1);
        box[3] = Math.max(box[3], cy + 1);
        for (const [nx, ny] of [[cx + 1, cy], [cx - 1, cy], [cx, cy + 1], [cx, cy - 1]] as Array<[number, number]>) {
          if (nx < 0 || ny < 0 || nx >= w || ny >= h || seen[ny * w + nx]) continue;
          if (!test(img, rx1 + nx, ry1 + ny, pred)) continue;
          seen[ny * w + nx] = 1;
          stack.push([nx, ny]);
        }
      }
      if (size >= minSize) out.push({ box: [box[0] + rx1, box[1] + ry1, box[2] + rx1, box[3] + ry1], size });
    }
  }
  return out;
}

/**
 * Read a seven-segment number whose ink bounding box is `ink`. Every digit lights the right column and
 * spans the full height, so the right edge and the height fix the cells; cells are read right to left.
 */
export function readSevenSeg(img: RawImage, ink: [number, number, number, number], pred: Pred = isDarkNeutral): string {
  const h = ink[3] - ink[1];
  const cw = h * SEG_ASPECT;
  const step = h * (SEG_ASPECT + SEG_GAP);
  const n = Math.round((ink[2] - ink[0] + h * SEG_GAP) / step);
  let out = '';
  for (let k = 0; k < n; k++) {
    const x0 = ink[2] - cw - k * step;
    let lit = '';
    for (const seg of 'abcdefg') {
      const [fx, fy] = segmentProbe(seg);
      const px0 = x0 + fx * cw;
      const py0 = ink[1] + fy * h;
      // Tolerate a pixel of misplacement across the stroke (along x for vertical strokes, y for horizontal).
      const across: Array<[number, number]> = 'bcef'.includes(seg) ? [[0, 0], [-1, 0], [1, 0]] : [[0, 0], [0, -1], [0, 1]];
      if (across.some(([dx, dy]) => test(img, px0 + dx, py0 + dy, pred))) lit += seg;
    }
    const digit = Object.entries(SEGMENTS).find(([, segs]) => [...segs].sort().join('') === lit)?.[0];
    out = (digit ?? '?') + out;
  }
  return out;
}

/** Read one 5×7 block glyph whose ink fills `ink` (all answer letters span the full grid). */
export function readBlockGlyph(img: RawImage, ink: [number, number, number, number], pred: Pred): string {
  const pw = (ink[2] - ink[0]) / 5;
  const ph = (ink[3] - ink[1]) / 7;
  const rows: string[] = [];
  for (let r = 0; r < 7; r++) {
    let row = '';
    for (let c = 0; c < 5; c++) row += test(img, ink[0] + (c + 0.5) * pw, ink[1] + (r + 0.5) * ph, pred) ? '1' : '0';
    rows.push(row);
  }
  // Nearest glyph by Hamming distance (anti-aliasing may flip a cell at 2-px font pixels).
  let best = '?';
  let bestD = Infinity;
  for (const [ch, g] of Object.entries(BLOCK_FONT)) {
    let d = 0;
    for (let r = 0; r < 7; r++) for (let c = 0; c < 5; c++) if (g[r]?.[c] !== rows[r]?.[c]) d++;
    if (d < bestD) {
      bestD = d;
      best = ch;
    }
  }
  return bestD <= 2 ? best : '?';
}

/** The facts a reader needs from a sample line (loupe-synth `samples.jsonl`). */
export interface ReadableSample {
  category: string;
  target: { px: number[] };
  facts: Record<string, string | number>;
  options?: string[];
}

/**
 * Read the answer of a loupe-synth sample from the pixels inside its target box: the digits, the letter,
 * the dot count, or (left-of) the option letter of the left tag. Returns null when nothing readable is there.
 */
export function readTarget(img: RawImage, s: ReadableSample): string | null {
  const [x1, y1, x2, y2] = s.target.px as [number, number, number, number];
  if (s.category === 'ring-digits') {
    const cx = (x1 + x2) / 2;
    const cy = (y1 + y2) / 2;
    const inner = (x2 - x1) / 2 - Math.max(2, Number(s.facts.glyphHeight) * 0.28) - 1;
    // The number is centred in the ring, every digit spans the full height and lights its right column:
    // the ring's centre, the ink height and the ink's right edge fix the cells (sub-pixel: halfway between
    // the solid-ink box and the box with anti-aliased edge pixels).
    const ring = bboxOf(img, [x1, y1, x2, y2], isRed);
    if (!ring) return null;
    const rcx = (ring[0] + ring[2]) / 2;
    const rcy = (ring[1] + ring[3]) / 2;
    const neutralDarkish: Pred = (r, g, b) => isDarkish(r, g, b) && Math.max(r, g, b) - Math.min(r, g, b) < 60;
    const mask = (x: number, y: number): boolean => (x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2 < inner ** 2;
    const loose = bboxOf(img, [x1, y1, x2, y2], neutralDarkish, mask);
    const strict = bboxOf(img, [x1, y1, x2, y2], isDarkNeutral, mask);
    if (!loose || !strict) return null;
    const h = (loose[3] - loose[1] + strict[3] - strict[1]) / 2;
    const right = (loose[2] + strict[2]) / 2;
    const half = right - rcx;
    return readSevenSeg(img, [rcx - half, rcy - h / 2, right, rcy + h / 2]);
  }
  if (s.category === 'tag-letter') {
    // Skip the rounded corners (radius = one font pixel p): beyond 0.3p from the edges the corners are
    // inside the tag, and the letter starts 1.5p in, so an inset of ~0.4p + 1 keeps all of it.
    const inset = Math.ceil(0.4 * Number(s.facts.fontPixel)) + 1;
    const ink = bboxOf(img, [x1 + inset, y1 + inset, x2 - inset, y2 - inset], isWhitish);
    return ink ? readBlockGlyph(img, ink, isWhite) : null;
  }
  if (s.category === 'box-dots') {
    const inset = Math.ceil(Math.max(2, Number(s.facts.dotDiameter) * 0.45)) + 1;
    return String(components(img, [x1 + inset, y1 + inset, x2 - inset, y2 - inset], isDarkNeutral, 4).length);
  }
  // The two tags are the two largest yellow blobs (a letter's closed counter, as in R, is a small one).
  const tags = components(img, [x1, y1, x2, y2], isYellow, 8)
    .sort((a, b) => b.size - a.size)
    .slice(0, 2)
    .sort((a, b) => a.box[0] - b.box[0]);
  if (tags.length !== 2) return null;
  const inset = Math.ceil(0.4 * Number(s.facts.fontPixel)) + 1;
  const letters = tags.map((t) => {
    const ink = bboxOf(img, [t.box[0] + inset, t.box[1] + inset, t.box[2] - inset, t.box[3] - inset], isDarkish);
    return ink ? readBlockGlyph(img, ink, isDarkNeutral) : '?';
  });
  const i = s.options?.indexOf(letters[0] as string) ?? -1;
  return i < 0 ? null : String.fromCharCode(65 + i);
}

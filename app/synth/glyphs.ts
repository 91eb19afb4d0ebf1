/**
 * Glyphs drawn as geometry, not fonts: seven-segment digits and a 5×7 block alphabet. Rendering them as
 * SVG rects gives the same pixels on every machine (no fontconfig lookup), and their fixed geometry lets
 * tests read them back from a crop.
 */

/** Segment order a..g (top, upper right, lower right, bottom, lower left, upper left, middle). */
export const SEGMENTS: Record<string, string> = {
  '0': 'abcdef',
  '1': 'bc',
  '2': 'abged',
  '3': 'abgcd',
  '4': 'fgbc',
  '5': 'afgcd',
  '6': 'afgedc',
  '7': 'abc',
  '8': 'abcdefg',
  '9': 'abcdfg',
};

/** Width of a seven-segment cell relative to its height, the gap between cells, and stroke thickness. */
export const SEG_ASPECT = 0.56;
export const SEG_GAP = 0.24;
export const SEG_T = 0.18;

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/**
 * The seven segment rects of a cell of height `h` with its top-left at (x, y). Segments overlap at the
 * corners (a blocky display font): at 14 px a classic mitred display falls apart into dots, this does not.
 * Every digit then spans the full cell height and lights the right column, which readers rely on.
 */
export function segmentRects(x: number, y: number, h: number): Record<string, Rect> {
  const w = h * SEG_ASPECT;
  const t = h * SEG_T;
  const half = h / 2;
  return {
    a: { x, y, w, h: t },
    b: { x: x + w - t, y, w: t, h: half + t / 2 },
    c: { x: x + w - t, y: y + half - t / 2, w: t, h: half + t / 2 },
    d: { x, y: y + h - t, w, h: t },
    e: { x, y: y + half - t / 2, w: t, h: half + t / 2 },
    f: { x, y, w: t, h: half + t / 2 },
    g: { x, y: y + half - t / 2, w, h: t },
  };
}

/** Where a reader samples each segment, as fractions of (cell width, cell height): away from the corners. */
export function segmentProbe(name: string): [number, number] {
  const tw = SEG_T / SEG_ASPECT / 2;
  const th = SEG_T / 2;
  const probes: Record<string, [number, number]> = {
    a: [0.5, th],
    b: [1 - tw, 0.25],
    c: [1 - tw, 0.75],
    d: [0.5, 1 - th],
    e: [tw, 0.75],
    f: [tw, 0.25],
    g: [0.5, 0.5],
  };
  const p = probes[name];
  if (p === undefined) throw new Error(`segmentProbe: no segment ${name}`);
  return p;
}

/** Total width of an `n`-digit seven-segment number of height `h`. */
export function sevenSegWidth(n: number, h: number): number {
  return n * h * SEG_ASPECT + (n - 1) * h * SEG_GAP;
}

const r2 = (v: number): string => (Math.round(v * 100) / 100).toString();

function rectsToPath(rects: Rect[]): string {
  return rects.map((r) => `M${r2(r.x)} ${r2(r.y)}h${r2(r.w)}v${r2(r.h)}h${r2(-r.w)}z`).join('');
}

/**
 * SVG for a seven-segment number. Unlit segments are drawn in `ghost` (as on a real display) when given,
 * which also fixes each cell's extent for readers.
 */
export function sevenSegSvg(digits: string, x: number, y: number, h: number, fill: string, ghost?: string): string {
  const lit: Rect[] = [];
  const unlit: Rect[] = [];
  const step = h * (SEG_ASPECT + SEG_GAP);
  [...digits].forEach((ch, i) => {
    const on = SEGMENTS[ch];
    if (on === undefined) throw new Error(`sevenSegSvg: not a digit: ${JSON.stringify(ch)}`);
    const rects = segmentRects(x + i * step, y, h);
    for (const [name, rect] of Object.entries(rects)) (on.includes(name) ? lit : unlit).push(rect);
  });
  const parts: string[] = [];
  if (ghost !== undefined && unlit.length > 0) parts.push(`<path fill="${ghost}" d="${rectsToPath(unlit)}"/>`);
  parts.push(`<path fill="${fill}" d="${rectsToPath(lit)}"/>`);
  return parts.join('');
}

/** 5×7 block glyphs, one string of five bits per row. */
export const BLOCK_FONT: Record<string, readonly string[]> = {
  A: ['01110', '10001', '10001', '11111', '10001', '10001', '10001'],
  B: ['11110', '10001', '10001', '11110', '10001', '10001', '11110'],
  C: ['01110', '10001', '10000', '10000', '10000', '10001', '01110'],
  D: ['11110', '10001', '10001', '10001', '10001', '10001', '11110'],
  E: ['11111', '10000', '10000', '11110', '10000', '10000', '11111'],
  F: ['11111', '10000', '10000', '11110', '10000', '10000', '10000'],
  G: ['01110', '10001', '10000', '10111', '10001', '10001', '01111'],
  H: ['10001', '10001', '10001', '11111', '10001', '10001', '10001'],
  I: ['01110', '00100', '00100', '00100', '00100', '00100', '01110'],
  J: ['00111', '00010', '00010', '00010', '00010', '10010', '01100'],
  K: ['10001', '10010', '10100', '11000', '10100', '10010', '10001'],
  L: ['10000', '10000', '10000', '10000', '10000', '10000', '11111'],
  M: ['10001', '11011', '10101', '10101', '10001', '10001', '10001'],
  N: ['10001', '10001', '11001', '10101', '10011', '10001', '10001'],
  O: ['01110', '10001', '10001', '10001', '10001', '10001', '01110'],
  P: ['11110', '10001', '10001', '11110', '10000', '10000', '10000'],
  Q: ['01110', '10001', '10001', '10001', '10101', '10010', '01101'],
  R: ['11110', '10001', '10001', '11110', '10100', '10010', '10001'],
  S: ['01111', '10000', '10000', '01110', '00001', '00001', '11110'],
  T: ['11111', '00100', '00100', '00100', '00100', '00100', '00100'],
  U: ['10001', '10001', '10001', '10001', '10001', '10001', '01110'],
  V: ['10001', '10001', '10001', '10001', '10001', '01010', '00100'],
  W: ['10001', '10001', '10001', '10101', '10101', '10101', '01010'],
  X: ['10001', '10001', '01010', '00100', '01010', '10001', '10001'],
  Y: ['10001', '10001', '01010', '00100', '00100', '00100', '00100'],
  Z: ['11111', '00001', '00010', '00100', '01000', '10000', '11111'],
  '0': ['01110', '10001', '10011', '10101', '11001', '10001', '01110'],
  '1': ['00100', '01100', '00100', '00100', '00100', '00100', '01110'],
  '2': ['01110', '10001', '00001', '00010', '00100', '01000', '11111'],
  '3': ['11111', '00010', '00100', '00010', '00001', '10001', '01110'],
  '4': ['00010', '00110', '01010', '10010', '11111', '00010', '00010'],
  '5': ['11111', '10000', '11110', '00001', '00001', '10001', '01110'],
  '6': ['00110', '01000', '10000', '11110', '10001', '10001', '01110'],
  '7': ['11111', '00001', '00010', '00100', '01000', '01000', '01000'],
  '8': ['01110', '10001', '10001', '01110', '10001', '10001', '01110'],
  '9': ['01110', '10001', '10001', '01111', '00001', '00010', '01100'],
};

/** Letters used for answers: the ones that stay distinct from digits and each other when read back. */
export const ANSWER_LETTERS = 'ABCDEFGHJKLMNPRSTUVWXYZ'.split('');

/** Width of a block-font string with cell size `p` (one font pixel) and one pixel of spacing. */
export function blockTextWidth(text: string, p: number): number {
  return text.length === 0 ? 0 : text.length * 6 * p - p;
}

/** SVG for block-font text; `p` = size of one font pixel, so the glyph is 5p × 7p. */
export function blockTextSvg(text: string, x: number, y: number, p: number, fill: string): string {
  const rects: Rect[] = [];
  [...text].forEach((ch, i) => {
    const rows = BLOCK_FONT[ch.toUpperCase()];
    if (rows === undefined) return; // spaces and unknown characters leave a gap
    const gx = x + i * 6 * p;
    rows.forEach((row, ry) => {
      // Merge horizontal runs so the path stays short and seams never show between font pixels.
      let start = -1;
      for (let cx = 0; cx <= 5; cx++) {
        const on = cx < 5 && row[cx] === '1';
        if (on && start < 0) start = cx;
        if (!on && start >= 0) {
          rects.push({ x: gx + start * p, y: y + ry * p, w: (cx - start) * p, h: p });
          start = -1;
        }
      }
    });
  });
  return rects.length === 0 ? '' : `<path fill="${fill}" d="${rectsToPath(rects)}"/>`;
}

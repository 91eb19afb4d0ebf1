/**
 * Scene layout for loupe-synth: pure geometry and SVG text, no pixels. A scene is a question whose answer
 * sits in one small detail (digits in a red ring, a letter on a blue tag, dots in a green box, two tiny
 * tagged objects), hidden among clutter and look-alike decoys.
 */
import type { Box } from '../contract/trajectory';
import { ANSWER_LETTERS, BLOCK_FONT, blockTextSvg, blockTextWidth, sevenSegSvg, sevenSegWidth } from './glyphs';
import type { Prng } from './prng';

export const SYNTH_KINDS = ['ring-digits', 'tag-letter', 'box-dots', 'left-of'] as const;
export type SynthKind = (typeof SYNTH_KINDS)[number];

/** Colours of the targets; clutter never uses these hues, so tests can find them by colour. */
export const TARGET_COLORS = {
  ring: '#e01b1b',
  tag: '#1f4fd8',
  box: '#14a02c',
  pairTag: '#f5c400',
} as const;

export const DECOY_COLORS: Array<{ name: string; hex: string }> = [
  { name: 'orange', hex: '#f08c00' },
  { name: 'purple', hex: '#8e44ad' },
  { name: 'grey', hex: '#7f8c8d' },
  { name: 'teal', hex: '#138d90' },
  { name: 'brown', hex: '#8b5a2b' },
];

/** Muted clutter colours: none is close to saturated red, blue, green or the yellow of the pair tags. */
const CLUTTER_COLORS = [
  '#c9b79c', '#a3a380', '#d6ce93', '#efebce', '#bb9457', '#99582a', '#6f5e53', '#8a9a5b', '#b5838d',
  '#e5989b', '#ffcdb2', '#6d6875', '#577590', '#9c89b8', '#f0a6ca', '#b8bedd', '#cdb4db', '#adb5bd',
  '#495057', '#dee2e6', '#e9c46a', '#f4a261', '#264653', '#a68a64', '#936639', '#7d8597', '#c2c5aa',
];

const BG_COLORS = ['#f1ede4', '#e8ecef', '#efe6dc', '#e9efe4', '#f3eff6', '#ececec', '#e6e2d3', '#dfe7ea'];

/** One thing in the picture a model might crop: the target or a look-alike. */
export interface SceneObject {
  /** Short description, used in synthesized reasoning ("the orange ring"). */
  label: string;
  /** Integer pixel box [x1, y1, x2, y2). */
  box: Box;
}

export interface SceneLayout {
  width: number;
  height: number;
  /** Complete SVG document (no noise; the renderer adds that). */
  svg: string;
  /** Seed for the renderer's noise tile. */
  noiseSeed: number;
}

export interface SceneQuestion {
  kind: SynthKind;
  question: string;
  /** Multiple-choice options (left-of only), in the shuffled order shown to the model. */
  options?: string[];
  /** For multiple choice the option letter ('A'…); otherwise the exact answer text. */
  answer: string;
  /** The answer as text (the option's text for multiple choice). */
  answerText: string;
  /** The object the answer is read from. */
  target: SceneObject;
  /** Look-alikes (other rings, tags, boxes) — where a poor first crop might land. */
  decoys: SceneObject[];
  /** Size in pixels of the smallest stroke that must be resolved (glyph height, dot diameter, font pixel × 7). */
  detailPx: number;
  /** False for the few "easy" scenes whose detail is large enough to read without zooming. */
  needsZoom: boolean;
  /** Kind-specific facts a reader test can check (digits, letter, dot count, …). */
  facts: Record<string, string | number>;
}

export interface Scene extends SceneQuestion {
  layout: SceneLayout;
}

const r2 = (v: number): number => Math.round(v * 100) / 100;

/** Axis-aligned rectangle bookkeeping for placement without overlap. */
class Placer {
  readonly taken: Box[] = [];
  constructor(
    private readonly rng: Prng,
    private readonly width: number,
    private readonly height: number,
  ) {}

  /** Find a free spot for a w×h object with `margin` from the edge and `gap` from anything taken. */
  place(w: number, h: number, margin: number, gap: number): [number, number] {
    // Try with the full gap first, then loosen it, so crowded (small or easy) scenes still fit.
    for (let attempt = 0; attempt < 600; attempt++) {
      const g = gap * (attempt < 300 ? 1 : attempt < 450 ? 0.5 : 0.15);
      const x = this.rng.range(margin, Math.max(margin, this.width - margin - w));
      const y = this.rng.range(margin, Math.max(margin, this.height - margin - h));
      const box: Box = [x - g, y - g, x + w + g, y + h + g];
      if (!this.taken.some((t) => intersects(t, box))) {
        this.taken.push([x, y, x + w, y + h]);
        return [x, y];
      }
    }
    throw new Error(`loupe-synth: no room for a ${Math.round(w)}x${Math.round(h)} object in ${this.width}x${this.height}`);
  }

  /** True when `box` grown by `gap` touches nothing taken. */
  isFree(box: Box, gap: number): boolean {
    const g: Box = [box[0] - gap, box[1] - gap, box[2] + gap, box[3] + gap];
    return !this.taken.some((t) => intersects(t, g));
  }
}

export function intersects(a: Box, b: Box): boolean {
  return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
}

function intBox(x1: number, y1: number, x2: number, y2: number, width: number, height: number): Box {
  return [
    Math.max(0, Math.floor(x1)),
    Math.max(0, Math.floor(y1)),
    Math.min(width, Math.ceil(x2)),
    Math.min(height, Math.ceil(y2)),
  ];
}

/** Pick image dimensions: long side 1000–2000 px, one of several aspect ratios. */
export function pickSize(rng: Prng): [number, number] {
  const aspect = rng.pick([1, 4 / 3, 3 / 2, 16 / 9, 2, 3 / 4, 2 / 3, 9 / 16, 5 / 4]);
  const long = rng.int(1000, 2000);
  const w = aspect >= 1 ? long : Math.round(long * aspect);
  const h = aspect >= 1 ? Math.round(long / aspect) : long;
  return [w, h];
}

// ---------- object builders (return SVG and the object's box) ----------

export interface Built {
  svg: string;
  w: number;
  h: number;
}

/** A ring of `color` with a seven-segment number inside, laid out at the origin. */
export function ringWithDigits(digits: string, glyphH: number, color: string): Built & { inset: number } {
  const numW = sevenSegWidth(digits.length, glyphH);
  const stroke = Math.max(2, glyphH * 0.28);
  const radius = Math.sqrt((numW / 2) ** 2 + (glyphH / 2) ** 2) + glyphH * 0.2 + stroke / 2;
  const size = 2 * (radius + stroke / 2);
  const c = size / 2;
  const svg =
    `<circle cx="${r2(c)}" cy="${r2(c)}" r="${r2(radius)}" fill="#ffffff" stroke="${color}" stroke-width="${r2(stroke)}"/>` +
    sevenSegSvg(digits, c - numW / 2, c - glyphH / 2, glyphH, '#111111');
  return { svg, w: size, h: size, inset: stroke };
}

/** A rounded tag of `color` with one block letter. */
/** A tag's size for font pixel `p`: the 5 × 7 glyph and its padding (1.8 p each side, 1.5 p above and below). */
export function tagSize(p: number): { w: number; h: number; padX: number; padY: number } {
  const padX = 1.8 * p;
  const padY = 1.5 * p;
  return { w: 5 * p + 2 * padX, h: 7 * p + 2 * padY, padX, padY };
}

export function tagWithLetter(letter: string, p: number, color: string, ink: string): Built {
  const { w, h, padX, padY } = tagSize(p);
  const svg = `<rect x="0" y="0" width="${r2(w)}" height="${r2(h)}" rx="${r2(p)}" fill="${color}"/>` + blockTextSvg(letter, padX, padY, p, ink);
  return { svg, w, h };
}

/** A box outline of `color` with `count` dots at seeded grid cells. */
export function boxWithDots(rng: Prng, count: number, dot: number, color: string): Built {
  const cols = count > 6 ? 4 : 3;
  const rows = count > 6 ? 3 : 3;
  // Tight spacing (0.8 diameter between neighbours): separate at full size, a blur at the global view.
  const cell = dot * 1.8;
  const stroke = Math.max(2, dot * 0.45);
  const pad = stroke + dot * 0.8;
  const w = cols * cell + 2 * pad;
  const h = rows * cell + 2 * pad;
  const cells = rng.sample(
    Array.from({ length: cols * rows }, (_, i) => i),
    count,
  );
  const parts = [
    `<rect x="${r2(stroke / 2)}" y="${r2(stroke / 2)}" width="${r2(w - stroke)}" height="${r2(h - stroke)}" fill="#f6f5ee" stroke="${color}" stroke-width="${r2(stroke)}"/>`,
  ];
  for (const i of cells) {
    const cx = pad + (i % cols) * cell + cell / 2 + rng.range(-0.15, 0.15) * dot;
    const cy = pad + Math.floor(i / cols) * cell + cell / 2 + rng.range(-0.15, 0.15) * dot;
    parts.push(`<circle cx="${r2(cx)}" cy="${r2(cy)}" r="${r2(dot / 2)}" fill="#1c1c1c"/>`);
  }
  return { svg: parts.join(''), w, h };
}

export function at(b: Built, x: number, y: number): string {
  return `<g transform="translate(${r2(x)} ${r2(y)})">${b.svg}</g>`;
}

export function randomDigits(rng: Prng, n: number): string {
  let s = String(rng.int(1, 9));
  while (s.length < n) s += String(rng.int(0, 9));
  return s;
}

// ---------- clutter ----------

/** Background, soft blobs, random shapes and distractor text, kept out of `keepOut` boxes. */
export function clutterSvg(rng: Prng, width: number, height: number, keepOut: Box[]): { back: string; front: string } {
  const S = Math.min(width, height);
  const bg1 = rng.pick(BG_COLORS);
  const bg2 = rng.pick(BG_COLORS);
  const angle = rng.int(0, 359);
  const back: string[] = [
    `<defs><linearGradient id="bg" gradientTransform="rotate(${angle} 0.5 0.5)"><stop offset="0" stop-color="${bg1}"/><stop offset="1" stop-color="${bg2}"/></linearGradient></defs>`,
    `<rect width="${width}" height="${height}" fill="url(#bg)"/>`,
  ];
  const blobs = rng.int(6, 12);
  for (let i = 0; i < blobs; i++) {
    back.push(
      `<ellipse cx="${r2(rng.range(0, width))}" cy="${r2(rng.range(0, height))}" rx="${r2(rng.range(0.1, 0.35) * S)}" ry="${r2(rng.range(0.08, 0.3) * S)}" fill="${rng.pick(CLUTTER_COLORS)}" opacity="${r2(rng.range(0.15, 0.45))}"/>`,
    );
  }
  const blocked = (b: Box): boolean => keepOut.some((k) => intersects(k, b));
  const front: string[] = [];
  const nShapes = Math.round((width * height) / rng.range(3000, 6000));
  for (let i = 0; i < nShapes; i++) {
    // Mostly small shapes, a few big ones: sizes log-uniform from 0.3% to 12% of the short side.
    const size = S * Math.exp(rng.range(Math.log(0.003), Math.log(0.12)));
    const x = rng.range(-size / 2, width - size / 2);
    const y = rng.range(-size / 2, height - size / 2);
    const box: Box = [x - 2, y - 2, x + size + 2, y + size + 2];
    if (blocked(box)) continue;
    const fill = rng.pick(CLUTTER_COLORS);
    const op = r2(rng.range(0.55, 1));
    const kind = rng.int(0, 4);
    if (kind === 0) {
      front.push(`<circle cx="${r2(x + size / 2)}" cy="${r2(y + size / 2)}" r="${r2(size / 2)}" fill="${fill}" opacity="${op}"/>`);
    } else if (kind === 1) {
      const h = size * rng.range(0.3, 1);
      front.push(`<rect x="${r2(x)}" y="${r2(y)}" width="${r2(size)}" height="${r2(h)}" fill="${fill}" opacity="${op}"/>`);
    } else if (kind === 2) {
      front.push(
        `<polygon points="${r2(x)},${r2(y + size)} ${r2(x + size / 2)},${r2(y)} ${r2(x + size)},${r2(y + size)}" fill="${fill}" opacity="${op}"/>`,
      );
    } else if (kind === 3) {
      front.push(
        `<line x1="${r2(x)}" y1="${r2(y + rng.range(0, size))}" x2="${r2(x + size)}" y2="${r2(y + rng.range(0, size))}" stroke="${fill}" stroke-width="${r2(rng.range(1, Math.max(1.5, size * 0.08)))}" opacity="${op}"/>`,
      );
    } else {
      front.push(
        `<ellipse cx="${r2(x + size / 2)}" cy="${r2(y + size / 2)}" rx="${r2(size / 2)}" ry="${r2(size * rng.range(0.2, 0.5))}" fill="none" stroke="${fill}" stroke-width="${r2(Math.max(1, size * 0.06))}" opacity="${op}"/>`,
      );
    }
  }
  // Distractor text in the same block font: words and numbers of all sizes.
  const nText = rng.int(12, 30);
  const alphabet = Object.keys(BLOCK_FONT);
  for (let i = 0; i < nText; i++) {
    const len = rng.int(2, 8);
    let text = '';
    for (let k = 0; k < len; k++) text += rng.pick(alphabet);
    const p = S * Math.exp(rng.range(Math.log(0.0012), Math.log(0.008)));
    const w = blockTextWidth(text, p);
    const h = 7 * p;
    const x = rng.range(0, Math.max(1, width - w));
    const y = rng.range(0, Math.max(1, height - h));
    if (blocked([x - 4, y - 4, x + w + 4, y + h + 4])) continue;
    front.push(blockTextSvg(text, x, y, p, rng.pick(['#333333', '#555555', '#6d6875', '#264653', '#495057'])));
  }
  return { back: back.join(''), front: front.join('') };
}

// ---------- the four kinds ----------

export interface SceneOptions {
  /** Make the detail large enough to read without zooming. */
  easy: boolean;
}

/** Build one image scene of `kind` from `rng`. */
export function buildScene(rng: Prng, kind: SynthKind, opts: SceneOptions): Scene {
  const [width, height] = pickSize(rng.fork('size'));
  const S = Math.min(width, height);
  // Detail sizes scale with the long side: that is what the model's global resize shrinks.
  const L = Math.max(width, height);
  const lay = rng.fork('layout');
  const placer = new Placer(lay, width, height);
  const margin = Math.round(S * 0.04);
  const objects: string[] = [];
  const decoys: SceneObject[] = [];
  let q: SceneQuestion;

  const placeObj = (b: Built, gapFactor = 0.6): Box => {
    const [x, y] = placer.place(b.w, b.h, margin, Math.max(b.w, b.h) * gapFactor);
    objects.push(at(b, x, y));
    return intBox(x, y, x + b.w, y + b.h, width, height);
  };
  const qr = rng.fork('question');

  if (kind === 'ring-digits') {
    const glyphH = opts.easy ? S * lay.range(0.05, 0.065) : Math.max(12, L * lay.range(0.013, 0.016));
    const digits = randomDigits(lay, lay.int(2, 4));
    const target = placeObj(ringWithDigits(digits, glyphH, TARGET_COLORS.ring));
    for (const c of lay.sample(DECOY_COLORS, lay.int(2, 3))) {
      const d = randomDigits(lay, lay.int(2, 4));
      decoys.push({ label: `the ${c.name} ring`, box: placeObj(ringWithDigits(d, glyphH * lay.range(0.9, 1.1), c.hex)) });
    }
    q = {
      kind,
      question: qr.pick([
        'What number is written inside the red ring?',
        'Read the digits inside the red circle. What number is it?',
        'Which number appears inside the red ring?',
      ]),
      answer: digits,
      answerText: digits,
      target: { label: 'the red ring', box: target },
      decoys,
      detailPx: glyphH,
      needsZoom: !opts.easy,
      facts: { digits, glyphHeight: r2(glyphH) },
    };
  } else if (kind === 'tag-letter') {
    const p = opts.easy ? S * lay.range(0.008, 0.01) : Math.max(2, L * lay.range(0.0016, 0.002));
    const letters = lay.sample(ANSWER_LETTERS, 5);
    const letter = letters[0] as string;
    const target = placeObj(tagWithLetter(letter, p, TARGET_COLORS.tag, '#ffffff'));
    const colors = lay.sample(DECOY_COLORS, lay.int(2, 4));
    colors.forEach((c, i) => {
      const l = letters[1 + i] as string;
      decoys.push({ label: `the ${c.name} tag`, box: placeObj(tagWithLetter(l, p * lay.range(0.9, 1.1), c.hex, '#ffffff')) });
    });
    q = {
      kind,
      question: qr.pick([
        'What letter is printed on the small blue tag?',
        'Which letter is written on the blue label?',
        'Read the letter on the small blue tag.',
      ]),
      answer: letter,
      answerText: letter,
      target: { label: 'the blue tag', box: target },
      decoys,
      detailPx: 7 * p,
      needsZoom: !opts.easy,
      facts: { letter, fontPixel: r2(p) },
    };
  } else if (kind === 'box-dots') {
    const dot = opts.easy ? S * lay.range(0.016, 0.02) : Math.max(4, L * lay.range(0.0034, 0.0042));
    const count = lay.int(1, 9);
    const target = placeObj(boxWithDots(lay, count, dot, TARGET_COLORS.box));
    for (const c of lay.sample(DECOY_COLORS, lay.int(2, 3))) {
      const k = lay.int(1, 9);
      decoys.push({ label: `the ${c.name} box`, box: placeObj(boxWithDots(lay, k, dot * lay.range(0.9, 1.1), c.hex)) });
    }
    q = {
      kind,
      question: qr.pick([
        'How many dots are inside the green box?',
        'Count the dots inside the green square. How many are there?',
        'How many black dots does the green box contain?',
      ]),
      answer: String(count),
      answerText: String(count),
      target: { label: 'the green box', box: target },
      decoys,
      detailPx: dot,
      needsZoom: !opts.easy,
      facts: { count, dotDiameter: r2(dot) },
    };
  } else {
    const p = opts.easy ? S * lay.range(0.008, 0.01) : Math.max(2, L * lay.range(0.0016, 0.002));
    const letters = lay.sample(ANSWER_LETTERS, 5);
    const [la, lb] = [letters[0] as string, letters[1] as string];
    const ta = tagWithLetter(la, p, TARGET_COLORS.pairTag, '#1c1c1c');
    const tb = tagWithLetter(lb, p, TARGET_COLORS.pairTag, '#1c1c1c');
    // The pair sits inside one region a crop can cover: 3–8 tag widths apart, roughly level.
    const dx = ta.w * lay.range(3, 8);
    const dy = ta.h * lay.range(-2.5, 2.5);
    const regionW = dx + tb.w;
    const regionH = Math.abs(dy) + Math.max(ta.h, tb.h);
    const [rx, ry] = placer.place(regionW, regionH, margin, regionW * 0.3);
    const leftIsA = lay.bool();
    const ya = dy >= 0 ? ry : ry - dy;
    const yb = dy >= 0 ? ry + dy : ry;
    const [leftTag, rightTag] = leftIsA ? [ta, tb] : [tb, ta];
    const [yl, yr] = leftIsA ? [ya, yb] : [yb, ya];
    objects.push(at(leftTag, rx, yl), at(rightTag, rx + dx, yr));
    const target = intBox(rx, ry, rx + regionW, ry + regionH, width, height);
    // Other yellow tags elsewhere, so "find the yellow tags" alone is not enough.
    const extra = lay.int(1, 3);
    for (let i = 0; i < extra; i++) {
      const l = letters[2 + i] as string;
      decoys.push({ label: 'another yellow tag', box: placeObj(tagWithLetter(l, p, TARGET_COLORS.pairTag, '#1c1c1c')) });
    }
    const leftLetter = leftIsA ? la : lb;
    const options = qr.shuffle([la, lb]);
    const answer = String.fromCharCode(65 + options.indexOf(leftLetter));
    q = {
      kind,
      question: qr.pick([
        `Two small yellow tags carry the letters ${la} and ${lb}. Which of them is further to the left?`,
        `Find the yellow tags labelled ${la} and ${lb}. Which one is on the left?`,
      ]),
      options,
      answer,
      answerText: leftLetter,
      target: { label: `the yellow tags ${la} and ${lb}`, box: target },
      decoys,
      detailPx: 7 * p,
      needsZoom: !opts.easy,
      facts: { left: leftLetter, right: leftIsA ? lb : la, fontPixel: r2(p) },
    };
  }

  // Keep clutter off the target and decoys (a little margin so the crop shows them cleanly).
  const keepOut = [q.target.box, ...q.decoys.map((d) => d.box)].map(
    (b): Box => {
      const pad = Math.max(6, (b[2] - b[0]) * 0.15);
      return [b[0] - pad, b[1] - pad, b[2] + pad, b[3] + pad];
    },
  );
  const clutter = clutterSvg(rng.fork('clutter'), width, height, keepOut);
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    clutter.back +
    clutter.front +
    objects.join('') +
    `</svg>`;
  return { ...q, layout: { width, height, svg, noiseSeed: rng.fork('noise').nextU32() } };
}

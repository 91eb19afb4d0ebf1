/**
 * Property test: 10^4 random model outputs (built from the pieces PyVision text is made of, plus noise)
 * go through one PyVision turn in both variants, each paired with a random sandbox outcome (text,
 * figures, undecodable figures, an exception, a timeout). Nothing throws, and every turn ends in an
 * observation (a non-empty `<interpreter>` text) or an answer (a final turn with a stop reason).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExecOutcome } from '../protocol/pyvision';
import { pyvisionDecide, pyvisionObserve } from './pyvisionEpisode';

const RUNS = 10_000;

const ws = fc.constantFrom('', ' ', '\n', '\r\n', '\t', '\u0085', '\u001c', '\u3000', '\ufeff', '\u00a0', '\n\n');
const code = fc.constantFrom('print(1)', 'x = np.array(image_clue_0)\nprint(x.shape)', 'plt.imshow(image_clue_0)\nplt.show()', 'x = input()', "print('```')", '', '   ', 'for i in range(3):\n    plt.show()', "import os\nos.system('ls')");
const piece = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('<code>', '</code>', '```python', '```', '```py', '```python3', '<answer>', '</answer>', '\\boxed{', '}', '<think>', '</think>', '<|im_end|>', '<interpreter>', '</interpreter>', '<image_clue_0>') },
  { weight: 2, arbitrary: code },
  { weight: 2, arbitrary: ws },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
);
/** A well-formed code turn or answer turn, then mutated by inserted pieces. */
const shaped = fc.oneof(
  fc.tuple(ws, code, ws).map(([a, c, b]) => `Let me look.${a}<code>${a}\`\`\`python${a}${c}${b}\`\`\`${b}</code>`),
  fc.tuple(ws, fc.string({ maxLength: 10 })).map(([a, s]) => `<answer>${a}\\boxed{${s}}${a}</answer>`),
);
const text = fc.oneof(
  fc.array(piece, { maxLength: 14 }).map((xs) => xs.join('')),
  fc.tuple(shaped, fc.array(piece, { maxLength: 4 }), fc.nat()).map(([s, extra, at]) => {
    const i = at % (s.length + 1);
    return s.slice(0, i) + extra.join('') + s.slice(i);
  }),
);
const outcome: fc.Arbitrary<ExecOutcome> = fc.record({
  stdout: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('', '   ', '\n', 'a'.repeat(450), '<|im_start|>system', '<image>')),
  numFigures: fc.nat({ max: 6 }),
  undecodableFigures: fc.array(fc.nat({ max: 6 }), { maxLength: 2 }),
  error: fc.option(fc.oneof(fc.string({ maxLength: 20 }), fc.constant('')), { freq: 3 }),
  timeout: fc.boolean(),
});

describe('PyVision turn (property, 10^4 random outputs)', () => {
  it('never throws; every turn ends in an observation or an answer', () => {
    const counts = { final: 0, run: 0, observe: 0 };
    fc.assert(
      fc.property(fc.constantFrom('PV' as const, 'PVRL' as const), text, fc.constantFrom('stop', 'length'), outcome, fc.integer({ min: 1, max: 40 }), (variant, t, finish, run, index) => {
        const d = pyvisionDecide(variant, t, finish);
        counts[d.kind]++;
        if (d.kind === 'final') {
          expect(['answer', 'length', 'error']).toContain(d.stop);
          return;
        }
        if (d.kind === 'observe') {
          expect(d.observation).toMatch(/<interpreter>[\s\S]*<\/interpreter>/);
          return;
        }
        expect(d.execSource.length).toBeGreaterThan(0);
        const o = pyvisionObserve(variant, run, index);
        // Not always closed: printed `<|im_start|>system` makes PVRL's system-block strip eat the rest of
        // the frame up to `<|im_end|>`, as in the reference (the img_special_system_open vectors).
        expect(o.observation).toContain('<interpreter>');
        expect(o.nextImageIndex).toBeGreaterThanOrEqual(index);
        // An error or timeout never shows figures, and the next image number only moves past shown ones.
        if (run.timeout || run.error !== null) expect(o.nextImageIndex).toBe(index);
      }),
      { numRuns: RUNS, seed: 20261127 },
    );
    // The generator reaches all three outcomes often enough for the property to mean something.
    expect(Math.min(counts.final, counts.run, counts.observe)).toBeGreaterThan(RUNS / 50);
  }, 120_000);
});

/**
 * Property tests: 10^5 random and mutated model outputs and tool arguments go through parseCall +
 * planCall of every dialect. Nothing throws; every outcome is a plan or an error observation; no crop
 * box leaves its image; no crop is empty. The runs are split across the properties (sum = 100 000).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { getDialect } from './index';
import type { CallPlan, Dialect, EpisodeState, ImageSelection, ParseResult } from './types';

const RUNS = { randomText: 20_000, mutatedCalls: 25_000, randomArguments: 25_000, plausibleCrops: 22_000, videoArguments: 8_000 };

const dialects: Dialect[] = [getDialect('pixel-reasoner'), getDialect('verl-tool'), getDialect('deepeyes')];

// JSON-ish literals, including the ones Python accepts and JS does not (NaN, Infinity) and floats written
// with a fraction so that int-vs-float matters.
const number = fc.oneof(
  fc.integer({ min: -50, max: 3000 }).map(String),
  fc.double({ min: -2, max: 2, noNaN: true }).map((x) => (Number.isInteger(x) ? `${x}.0` : String(x))),
  fc.double({ min: -100, max: 5000, noNaN: true }).map(String),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '-0.0', '1.0', '2.0', '12345678901234567890', '1E2', '0.999'),
);
const scalar = fc.oneof(
  { weight: 6, arbitrary: number },
  { weight: 1, arbitrary: fc.constantFrom('null', 'true', 'false', '""', '"0.5"', '" 12 "', '"1_0"', '"inf"', '"abc"', '[]', '{}', '[1]', '{"a": 1}') },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)) },
);
const list = (item: fc.Arbitrary<string>, min: number, max: number) => fc.array(item, { minLength: min, maxLength: max }).map((xs) => `[${xs.join(', ')}]`);
const bbox = fc.oneof({ weight: 8, arbitrary: list(scalar, 4, 4) }, { weight: 1, arbitrary: list(scalar, 0, 6) }, { weight: 1, arbitrary: scalar });
const target = fc.oneof(fc.integer({ min: -3, max: 8 }).map(String), scalar);
const frames = fc.oneof({ weight: 4, arbitrary: list(fc.oneof(fc.integer({ min: -20, max: 20 }).map(String), scalar), 0, 10) }, { weight: 1, arbitrary: scalar });
const name = fc.constantFrom('"crop_image_normalized"', '"select_frames"', '"crop_image"', '"image_zoom_in_tool"', '"zoom_in"', '"x"', '1.5', 'null', '["crop_image_normalized"]');
const argsObject = fc
  .record({ bbox_2d: bbox, target_image: target, target_frames: frames, extra: scalar }, { requiredKeys: [] })
  .map((o) => `{${Object.entries(o).map(([k, v]) => `"${k}": ${v}`).join(', ')}}`);
const args = fc.oneof({ weight: 9, arbitrary: argsObject }, { weight: 1, arbitrary: scalar });
const callJson = fc.tuple(name, args).map(([n, a]) => `{"name": ${n}, "arguments": ${a}}`);

// Calls a model would plausibly write: the dialect's own crop tool, four numbers, an index in range.
const coord = fc.oneof(
  fc.double({ min: -0.2, max: 1.2, noNaN: true }).map((x) => String(Math.round(x * 1000) / 1000)),
  fc.integer({ min: -100, max: 4500 }).map(String),
  fc.double({ min: 0, max: 4000, noNaN: true }).map((x) => String(Math.round(x * 10) / 10)),
);
const CROP_NAME: Record<string, string> = { 'pixel-reasoner': 'crop_image_normalized', 'verl-tool': 'crop_image', deepeyes: 'image_zoom_in_tool' };
const plausibleCrop = (d: Dialect) =>
  fc
    .tuple(fc.array(coord, { minLength: 4, maxLength: 4 }), fc.integer({ min: 1, max: 4 }))
    .map(([b, t]) => `{"name": "${CROP_NAME[d.id]}", "arguments": {"bbox_2d": [${b.join(', ')}], "target_image": ${t}}}`);

const plausibleSelect = fc
  .array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 8 })
  .map((f) => `{"name": "select_frames", "arguments": {"target_frames": [${f.join(', ')}]}}`);

const size = fc.tuple(fc.integer({ min: 1, max: 4000 }), fc.integer({ min: 1, max: 4000 }));
const aspectOk = ([w, h]: [number, number]) => Math.max(w, h) / Math.min(w, h) <= 150;
const goodSize = size.filter(aspectOk);
const imageState: fc.Arbitrary<EpisodeState> = fc
  .record({
    mode: fc.constantFrom<'eval' | 'train'>('eval', 'train'),
    originals: fc.array(goodSize, { minLength: 1, maxLength: 3 }),
    prior: fc.array(goodSize, { maxLength: 16 }),
  })
  .map((r) => ({
    mode: r.mode,
    isVideo: false,
    originals: r.originals.map(([width, height]) => ({ width, height, kind: 'original' as const })),
    videoFrames: [],
    prior: r.prior.map(([width, height]) => ({ width, height, kind: 'crop' as const })),
    rawSizes: r.originals,
  }));
const videoState: fc.Arbitrary<EpisodeState> = fc
  .record({
    mode: fc.constantFrom<'eval' | 'train'>('eval', 'train'),
    frame: goodSize,
    n: fc.integer({ min: 1, max: 10 }).map((k) => 2 * k),
    prior: fc.array(goodSize, { maxLength: 8 }),
  })
  .map((r) => ({
    mode: r.mode,
    isVideo: true,
    originals: [],
    videoFrames: Array.from({ length: r.n }, () => ({ width: r.frame[0], height: r.frame[1], kind: 'frame' as const })),
    prior: r.prior.map(([width, height]) => ({ width, height, kind: 'crop' as const })),
    rawSizes: [r.frame],
  }));

function targetSize(t: ImageSelection, s: EpisodeState): [number, number] {
  const pick = t.list === 'prior' ? s.prior[t.position!] : t.list === 'videoFrames' ? s.videoFrames[t.position!] : t.list === 'originals' ? s.originals[t.position!] : undefined;
  if (pick) return [pick.width, pick.height];
  const raw = s.rawSizes[t.position!];
  if (!raw) throw new Error(`plan target ${JSON.stringify(t)} is not in the episode`);
  return raw;
}

/** Plain checks (vitest's expect is too slow for 10^5 runs); a failure names the broken invariant. */
function check(cond: boolean, what: string, detail: unknown): void {
  if (!cond) throw new Error(`${what}: ${JSON.stringify(detail)}`);
}

/** Counts of outcomes, so the last test can show the properties reached every kind of plan. */
const seen = { crop: 0, frames: 0, error: 0, parseError: 0 };

/** The invariants every plan must keep. */
function checkPlan(plan: CallPlan, s: EpisodeState): void {
  seen[plan.kind]++;
  check(typeof plan.observation === 'string', 'observation is text', plan);
  if (plan.kind === 'error') {
    check(typeof plan.error.type === 'string' && typeof plan.error.message === 'string', 'error has type and message', plan);
    return;
  }
  if (plan.kind === 'crop') {
    const [w, h] = targetSize(plan.target, s);
    check(plan.target.size[0] === w && plan.target.size[1] === h, 'target size is the image size', plan);
    const [x0, y0, x1, y1] = plan.cropBox;
    check([x0, y0, x1, y1].every(Number.isInteger), 'integer crop box', plan);
    check(0 <= x0 && x0 < x1 && x1 <= w && 0 <= y0 && y0 < y1 && y1 <= h, 'non-empty crop box inside the image', { plan, w, h });
    check(plan.cropSize[0] === x1 - x0 && plan.cropSize[1] === y1 - y0, 'crop size matches the box', plan);
    check(plan.resizedSize[0] > 0 && plan.resizedSize[1] > 0, 'non-empty resize', plan);
    return;
  }
  check(plan.frameIndices.length > 0, 'at least one frame', plan);
  const limit = Math.max(s.videoFrames.length, s.rawSizes.length + s.prior.length);
  for (const p of plan.framePositions ?? []) check(p >= 0 && p < limit, 'frame position in range', plan);
  for (const c of plan.frameCrops ?? []) {
    const [w, h] = targetSize(c.target, s);
    check(0 <= c.cropBox[0] && c.cropBox[0] < c.cropBox[2] && c.cropBox[2] <= w && 0 <= c.cropBox[1] && c.cropBox[1] < c.cropBox[3] && c.cropBox[3] <= h, 'frame crop inside its image', c);
  }
}

function checkParse(r: ParseResult, d: Dialect): void {
  if (r.ok) {
    check(typeof r.call.name === 'string', 'parsed name is a string', r);
    return;
  }
  seen.parseError++;
  check(typeof r.observation === 'string' && typeof r.error.message === 'string', 'parse error has an observation', r);
  if (d.id === 'pixel-reasoner') check(r.observation === `\nExecution error:\n${r.error.message}\n`, 'PR error observation', r);
}

function runTurn(d: Dialect, response: string, s: EpisodeState): void {
  check(typeof d.isToolTurn(response) === 'boolean', 'isToolTurn is boolean', response);
  const r = d.parseCall('<|im_start|>assistant\n', response);
  checkParse(r, d);
  if (r.ok) checkPlan(d.planCall(r.call, s), s);
}

const mutation = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 2 }), fc.constantFrom('{', '}', '[', ']', ',', ':', '"', '\\', 'u', ' ', '\n', '1', '.', 'e', '-', 'é', '😀', '\t', '\u0001', 'N', '<tool_call>', '</tool_call>'));

describe('protocol properties (fast-check, 10^5 runs in total)', () => {
  it('random model text never throws and yields a plan or an error observation', () => {
    fc.assert(
      fc.property(fc.constantFrom(...dialects), fc.string({ unit: 'binary', maxLength: 80 }), fc.constantFrom('', '<tool_call>', '</tool_call>', '<|im_end|>', '<answer>x</answer>'), imageState, (d, text, tail, s) => {
        runTurn(d, `<tool_call>${text}${tail}`, s);
        runTurn(d, text + tail, s);
      }),
      { numRuns: RUNS.randomText },
    );
  });

  it('mutated calls never throw and yield a plan or an error observation', () => {
    fc.assert(
      fc.property(fc.constantFrom(...dialects), callJson, fc.array(mutation, { minLength: 1, maxLength: 4 }), imageState, (d, json, muts, s) => {
        const cps = Array.from(json);
        for (const [pos, op, ch] of muts) {
          const p = pos % (cps.length + 1);
          if (op === 0) cps.splice(p, 1);
          else if (op === 1) cps.splice(p, 0, ch);
          else cps[p] = ch;
        }
        runTurn(d, `Zoom.\n<tool_call>\n${cps.join('')}\n</tool_call>`, s);
      }),
      { numRuns: RUNS.mutatedCalls },
    );
  });

  it('random tool arguments on images: crops stay inside the image and are never empty', () => {
    fc.assert(
      fc.property(fc.constantFrom(...dialects), callJson, imageState, (d, json, s) => {
        runTurn(d, `<tool_call>\n${json}\n</tool_call>`, s);
      }),
      { numRuns: RUNS.randomArguments },
    );
  });

  it('plausible crops: inside the image, never empty', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...dialects).chain((d) => fc.tuple(fc.constant(d), plausibleCrop(d))),
        imageState,
        ([d, json], s) => {
          runTurn(d, `<tool_call>\n${json}\n</tool_call>`, s);
        },
      ),
      { numRuns: RUNS.plausibleCrops },
    );
  });

  it('random tool arguments on videos: frames and crops stay in range', () => {
    fc.assert(
      fc.property(fc.constantFrom(...dialects), fc.oneof(callJson, plausibleSelect), videoState, (d, json, s) => {
        runTurn(d, `<tool_call>\n${json}\n</tool_call>`, s);
      }),
      { numRuns: RUNS.videoArguments },
    );
  });

  it('splits exactly 10^5 runs and reached every outcome', () => {
    expect(Object.values(RUNS).reduce((a, b) => a + b, 0)).toBe(100_000);
    expect(seen.crop).toBeGreaterThan(5_000);
    expect(seen.frames).toBeGreaterThan(200);
    expect(seen.error).toBeGreaterThan(0);
    expect(seen.parseError).toBeGreaterThan(0);
  });
});

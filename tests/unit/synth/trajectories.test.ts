/**
 * SFT trajectories for loupe-synth: every tool turn is a valid Pixel Reasoner call whose geometry and
 * observation text match the protocol module's own planner; good crops contain the target, the poor first
 * crop of a recovery does not; the final answer is boxed; written crops show the target. The text is the short
 * template models/loupe-tiny/train.py parses (its FIRST_TURN pattern and read_eval's "shows …: \boxed" are read
 * from train.py itself), with two-decimal call boxes.
 */
import sharp from 'sharp';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLOSER_KINDS,
  PR_SYSTEM_PROMPT,
  closerNorm,
  cropContainsTarget,
  generateSynth,
  imageSampleRecord,
  imageScene,
  synthTrajectories,
  videoSampleRecord,
  videoScene,
  trajectoryText,
  writeTrajectoryCrops,
  type GenerateResult,
  type SftTrajectory,
  type SynthSample,
} from '../../../app/synth';
import { fromPlainJson } from '../../../app/pycompat/json';
import { getDialect } from '../../../app/protocol';
import { lastBoxed, prIsToolTurn, prPlanTurn } from '../../../app/protocol/pixelReasoner';
import { resizeWithPreset } from '../../../app/tools/smartResize';
import type { PrImageList } from '../../../app/tools/selection';
import { bboxOf, components, countInOut, isDarkNeutral, isGreen, isRed, type RawImage } from './decode';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

let dir = '';
let res: GenerateResult;
// Records are pure (no pixels): 8 image samples with some easy ones, and one video sample.
const OPTS = { seed: 17, n: 8, video: 1, easyFraction: 0.25 };
const records: SynthSample[] = [
  ...Array.from({ length: OPTS.n }, (_, i) => imageSampleRecord(OPTS, i, imageScene(OPTS, i))),
  videoSampleRecord(OPTS, 0, videoScene(OPTS, 0)),
];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loupe-synth-sft-'));
  // Pixels only for the crop-writing test: two ring samples.
  res = await generateSynth({ seed: 17, n: 2, kinds: ['ring-digits'], easyFraction: 0 }, dir, sharpSynthRaster);
}, 240_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const dialect = getDialect('pixel-reasoner');

/** The patterns train.py matches generated text with, read from its source (Python raw strings; valid JS regexes here). */
const TRAIN_PY = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../../models/loupe-tiny/train.py'), 'utf8');
const FIRST_TURN = ((m) => m && new RegExp(m[1]! + m[2]!))(/^FIRST_TURN = re\.compile\(r"(.*)"\s*\n\s*r'(.*)'\)$/m.exec(TRAIN_PY));
const SAID = ((m) => m && new RegExp(m[1]!))(/said = re\.search\(r"(.*?)", text\)/.exec(TRAIN_PY));

function textOf(m: SftTrajectory['message_list'][number]): string {
  return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/** Replay a trajectory through the protocol module: parse each call, plan it, compare with what was written. */
function replay(s: SynthSample, t: SftTrajectory): void {
  const msgs = t.message_list;
  expect(msgs[0]?.role).toBe('system');
  expect(textOf(msgs[0] as never)).toBe(PR_SYSTEM_PROMPT);
  expect(msgs[1]?.role).toBe('user');
  const imgs: PrImageList = s.isVideo
    ? { isVideo: true, originals: [], video: { frameSize: resizeWithPreset([s.width, s.height], 'video_frame'), numFrames: 16 }, prior: [] }
    : { isVideo: false, originals: [resizeWithPreset([s.width, s.height], 'train_initial')], prior: [] };
  let cropIdx = 0;
  for (let i = 2; i < msgs.length; i += 2) {
    const a = msgs[i];
    expect(a?.role).toBe('assistant');
    const text = textOf(a as never);
    const last = i === msgs.length - 1;
    expect(prIsToolTurn(text)).toBe(!last);
    if (last) {
      expect(lastBoxed(text)).toBe(s.answer);
      break;
    }
    const parsed = dialect.parseCall('', text);
    if (!parsed.ok) throw new Error(`call did not parse: ${parsed.error.message}`);
    const { plan } = prPlanTurn(parsed.call.name, fromPlainJson(parsed.call.arguments), imgs, 'train');
    const obs = msgs[i + 1];
    expect(obs?.role).toBe('user');
    expect(textOf(obs as never)).toBe(plan.kind === 'error' ? 'no error expected' : plan.observation);
    if (plan.kind === 'crop') {
      const c = t.crops[cropIdx++];
      expect(plan.bboxMode).toBe('normalized');
      expect(plan.cropBox).toEqual(c?.cropBox);
      expect(plan.resizedSize).toEqual(c?.resized);
      imgs.prior.push(plan.resizedSize);
    } else if (plan.kind === 'frames') {
      expect(plan.frameIndices.map((f) => f + 1)).toEqual(t.selectedFrames);
      for (const _ of plan.frameIndices) imgs.prior.push(plan.frameSize);
    }
  }
  expect(cropIdx).toBe(t.crops.length);
}

describe('loupe-synth SFT trajectories', () => {
  it('gives direct answers for easy samples and zoom + recovery for the rest', () => {
    const kinds = records.filter((s) => !s.isVideo).map((s) => synthTrajectories(s).map((t) => t.kind).join('+'));
    for (const [i, s] of records.filter((x) => !x.isVideo).entries()) {
      expect(kinds[i]).toBe(!s.needsZoom ? 'direct' : CLOSER_KINDS.has(s.category) ? 'zoom2+recover' : 'zoom+recover');
    }
    expect(kinds).toContain('direct');
    expect(kinds).toContain('zoom+recover');
    expect(kinds).toContain('zoom2+recover');
    const v = records.find((s) => s.isVideo) as SynthSample;
    expect(synthTrajectories(v).map((t) => t.kind)).toEqual(['frames-zoom']);
  });

  it('every turn replays through the Pixel Reasoner protocol with the same geometry and observations', () => {
    let n = 0;
    for (const s of records) for (const t of synthTrajectories(s)) {
      replay(s, t);
      n++;
    }
    expect(n).toBeGreaterThan(10);
  });

  it('good crops contain the target; the poor first crop of a recovery misses it', () => {
    for (const s of records) {
      for (const t of synthTrajectories(s)) {
        if (t.kind === 'zoom' || t.kind === 'zoom2' || t.kind === 'frames-zoom') expect(cropContainsTarget(s, t.crops[0]!)).toBe(true);
        if (t.kind === 'recover') {
          expect(cropContainsTarget(s, t.crops[0]!)).toBe(false);
          expect(cropContainsTarget(s, t.crops[1]!)).toBe(true);
        }
        // the closer crop is cut from the crop before it and holds the closer target (the green box, the left tag) whole
        if (CLOSER_KINDS.has(s.category) && s.needsZoom) {
          const prev = t.crops.at(-2)!;
          const c = t.crops.at(-1)!;
          expect(c.source).toBe(prev.placeholder);
          expect(c.sourceSize).toEqual(prev.resized);
          const n = closerNorm(s, prev);
          const [w, h] = prev.resized;
          expect(c.cropBox[0] <= n[0] * w && c.cropBox[1] <= n[1] * h && c.cropBox[2] >= n[2] * w && c.cropBox[3] >= n[3] * h, `${s.qid}/${t.kind}`).toBe(true);
          // and it magnifies: the model sees every image at the same pixel budget (loupe-tiny: 128 merged tokens; the eval
          // zoom resize brings both crops above it), so the target grows by the inverse of the share of the crop cut
          const share = Math.sqrt(((c.cropBox[2] - c.cropBox[0]) * (c.cropBox[3] - c.cropBox[1])) / (w * h));
          expect(1 / share, `${s.qid}/${t.kind}`).toBeGreaterThan(1.8);
        }
        for (const c of t.crops) for (const v of c.bbox) expect(v >= 0 && v < 1).toBe(true);
      }
    }
  });

  it('video trajectories select the target frames (at most 8) and crop a frame that shows the target', () => {
    const v = records.find((s) => s.isVideo) as SynthSample;
    const [t] = synthTrajectories(v);
    const sel = t?.selectedFrames ?? [];
    expect(sel.length).toBeLessThanOrEqual(8);
    for (const f of v.target.frames ?? []) expect(sel).toContain(f);
    expect(t?.crops[0]?.targetImage).toBe(2 + sel.indexOf(v.target.frames?.[0] as number));
  });

  it('uses the short template train.py parses, with two-decimal call boxes', () => {
    expect(FIRST_TURN, 'FIRST_TURN not found in train.py').toBeTruthy();
    expect(SAID, "read_eval's `said` pattern not found in train.py").toBeTruthy();
    const recs = [
      ...records,
      // every kind (cycled), easy and hard
      ...Array.from({ length: 12 }, (_, i) => imageSampleRecord({ seed: 5, n: 12, easyFraction: 0.25 }, i, imageScene({ seed: 5, n: 12, easyFraction: 0.25 }, i))),
    ];
    const seen = new Set<string>();
    for (const s of recs) {
      const f = s.facts;
      const label = s.target.label[0]!.toUpperCase() + s.target.label.slice(1);
      const is = s.category === 'left-of' ? 'are' : 'is'; // 'the yellow tags K and R' is plural
      const reading = {
        'ring-digits': `The ring shows ${[...String(f.digits)].join(', ')}: \\boxed{${s.answer}}`,
        'tag-letter': `The tag shows ${f.letter}: \\boxed{${s.answer}}`,
        'box-dots': `I count ${Array.from({ length: Number(f.count) }, (_, i) => i + 1).join(', ')}: \\boxed{${s.answer}}`,
        // the left letter, option (A)'s letter, and where that is not it option (B)'s: the boxed letter is the last written
        'left-of': s.options?.length !== 2 ? `The left tag shows ${f.left}: \\boxed{${s.answer}}` : s.options[0] === f.left ? `The left tag shows ${f.left}; (A) ${f.left}: \\boxed{A}` : `The left tag shows ${f.left}; (A) ${f.right}, (B) ${f.left}: \\boxed{B}`,
      }[s.category];
      if (s.category === 'left-of' && s.options?.length === 2) seen.add(`left-of/answer-${s.answer}`);
      for (const t of synthTrajectories(s)) {
        seen.add(`${s.category}/${t.kind}`);
        const turns = t.message_list.filter((m) => m.role === 'assistant').map((m) => textOf(m));
        expect(turns.at(-1)).toBe(t.kind === 'direct' ? `${label} ${is} large enough to read. ${reading}` : reading);
        if (t.kind === 'zoom' || t.kind === 'zoom2') {
          const m = FIRST_TURN!.exec(turns[0]!);
          expect(m, turns[0]).toBeTruthy();
          expect(m![1]).toBe(label);
          expect(m![2]).toBe(is);
          expect(m![4]!.split(', ').map(Number)).toEqual(t.crops[0]!.bbox);
        }
        if (t.kind === 'recover') {
          expect(turns[0]!.startsWith('Let me zoom in on the region that looks right.\n<tool_call>\n')).toBe(true);
          expect(turns[1]).toMatch(new RegExp(`^This crop (shows .+, not|does not contain) .+\\. ${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} ${is} .+\\. Let me crop there\\.\n<tool_call>\n`));
        }
        if (CLOSER_KINDS.has(s.category) && t.kind !== 'direct') {
          const what = s.category === 'left-of' ? 'The left tag' : label;
          const k = turns.length - 2;
          expect(turns[k]).toMatch(new RegExp(`^${what} is (in the \\w+ \\w+|on the \\w+ side|near the centre) of this crop\\. Let me zoom in closer\\.\n<tool_call>\n`));
          expect(turns[k]).toContain(`"target_image": ${k + 1}}`);
        }
        if (t.kind === 'frames-zoom') {
          expect(turns[1]).toMatch(new RegExp(`^${label} ${is} in image ${t.crops[0]!.targetImage} \\(frame \\d+\\), .+\\. Let me zoom in\\.\n<tool_call>\n`));
        }
        // read_eval's consistency check: what the turn says it read equals the boxed answer (ring and tag).
        if (s.category === 'ring-digits' || s.category === 'tag-letter') {
          expect(SAID!.exec(turns.at(-1)!)?.[1]?.replace(/, /g, '')).toBe(s.answer);
        }
        for (const c of t.crops) {
          for (const v of c.bbox) {
            expect(v).toBeLessThanOrEqual(0.99);
            expect(Math.round(v * 100) / 100).toBe(v);
          }
        }
        for (const x of turns) expect(x).not.toMatch(/\d\.\d{3}/);
      }
    }
    for (const k of ['ring-digits', 'tag-letter', 'box-dots', 'left-of']) for (const kind of [CLOSER_KINDS.has(k) ? 'zoom2' : 'zoom', 'recover']) expect(seen).toContain(`${k}/${kind}`);
    expect(seen).toContain('left-of/answer-A');
    expect(seen).toContain('left-of/answer-B');
    expect([...seen].some((k) => k.endsWith('/direct'))).toBe(true);
    expect([...seen].some((k) => k.endsWith('/frames-zoom'))).toBe(true);
  });

  it('is deterministic and renders as Qwen chat text', () => {
    const s = records[0] as SynthSample;
    expect(synthTrajectories(s)).toEqual(synthTrajectories(s));
    const text = trajectoryText(synthTrajectories(s)[0] as SftTrajectory);
    expect(text.startsWith('<|im_start|>system\nYou are a helpful assistant.')).toBe(true);
    expect(text).toContain('<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>');
    expect(text).toContain('\n\n\n\nGuidelines:');
  });

  it('written crops have the planned size and show the red ring (ring samples)', { timeout: 120_000 }, async () => {
    const ring = res.samples;
    expect(ring.length).toBeGreaterThan(0);
    for (const s of ring) {
      const [zoom, recover] = synthTrajectories(s);
      const files = await writeTrajectoryCrops(dir, zoom as SftTrajectory, join(dir, 'crops'), sharpSynthRaster);
      const { data, info } = await sharp(files['crop:0'] as string).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height]).toEqual(zoom?.crops[0]?.resized);
      const img: RawImage = { data, width: info.width, height: info.height };
      expect(countInOut(img, [0, 0, info.width, info.height], isRed).inside).toBeGreaterThan(20);
      // The poor crop of the recovery does not show the ring.
      const rf = await writeTrajectoryCrops(dir, recover as SftTrajectory, join(dir, 'crops'), sharpSynthRaster);
      const poor = await sharp(rf['crop:0'] as string).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      expect(countInOut({ data: poor.data, width: poor.info.width, height: poor.info.height }, [0, 0, poor.info.width, poor.info.height], isRed).inside).toBe(0);
    }
  });

  it("writes a dot box's closer crop from the first crop's file: the box at least 1.5 times wider as the model sees it, its dots countable", { timeout: 120_000 }, async () => {
    const d2 = join(dir, 'dots');
    const got = await generateSynth({ seed: 17, n: 3, kinds: ['box-dots'], easyFraction: 0 }, d2, sharpSynthRaster);
    for (const s of got.samples) {
      const [zoom2] = synthTrajectories(s, { mode: 'eval' });
      expect(zoom2?.kind).toBe('zoom2');
      const files = await writeTrajectoryCrops(d2, zoom2 as SftTrajectory, join(d2, 'crops'), sharpSynthRaster);
      const read = async (f: string): Promise<RawImage> => {
        const { data, info } = await sharp(f).removeAlpha().raw().toBuffer({ resolveWithObject: true });
        return { data, width: info.width, height: info.height };
      };
      const [first, closer] = [await read(files['crop:0'] as string), await read(files['crop:1'] as string)];
      expect([closer.width, closer.height]).toEqual(zoom2?.crops[1]?.resized);
      // the green box in each crop, as a share of the crop's width (the model sees both at the same pixel budget)
      const box1 = bboxOf(first, [0, 0, first.width, first.height], isGreen);
      const box2 = bboxOf(closer, [0, 0, closer.width, closer.height], isGreen);
      expect(box1 && box2, s.qid).toBeTruthy();
      const share = (b: [number, number, number, number], img: RawImage) => (b[2] - b[0]) / Math.sqrt(img.width * img.height);
      expect(share(box2!, closer) / share(box1!, first), s.qid).toBeGreaterThan(1.5);
      // and the dots inside it are there to count, one dark blob each
      const inset = Math.ceil((box2![2] - box2![0]) * 0.06) + 2;
      const dots = components(closer, [box2![0] + inset, box2![1] + inset, box2![2] - inset, box2![3] - inset], isDarkNeutral, 4);
      expect(dots.length, s.qid).toBe(Number(s.facts.count));
    }
    // a trajectory whose closer crop comes before the crop it is cut from: a clear error, nothing cut from a wrong file
    const [z] = synthTrajectories(got.samples[0]!, { mode: 'eval' });
    const reordered: SftTrajectory = { ...z!, crops: [z!.crops[1]!, z!.crops[0]!] };
    await expect(writeTrajectoryCrops(d2, reordered, join(d2, 'bad'), sharpSynthRaster)).rejects.toThrow(/crop 0 is cut from crop:0, which comes later/);
  });
});

/**
 * models/loupe-tiny/scene_traj.py (zoom and frames-zoom trajectories made on the fly from loupe-synth scenes, for
 * train.py --scenes) against Loupe's own path: a small loupe-synth folder generated here (6 images, 2 videos: a ring and
 * a tag), prepared by prepare.ts (Loupe's loop + engine encoding); `scene_traj.py --check-manifest` rebuilds every zoom
 * trajectory of it from its scene with the call box its first turn wrote, and every frames-zoom trajectory with the
 * frames its first turn selected and the call box its second turn wrote, and must get the same token ids, spans and
 * image grids (and nearly the same pixels). The same check on a copy whose manifest has one token id changed in a zoom
 * and in a frames-zoom trajectory must fail, counting both. Then train.py runs 2 CPU steps with half of every batch drawn
 * fresh from the scenes: the first step's two fresh draws are videos, the second's image zooms (--scenes, --scene-frac 0.5,
 * --scene-video-frac 0.5), with the glyph pointer on. `scene_traj.py --check-glyphs` checks that pointer's targets on the folder.
 * And 2 CPU steps of video only (--scene-video-frac 1) with --video-pointer 1 and --frame-pointer 1: the crop turn's
 * pointer, read-out and target-head losses and the frame pick's pointer loss appear on both steps, finite, in the console
 * lines and metrics.json.
 *
 * Needs a python3 with torch, numpy and Pillow: LOUPE_PYTHON, else python3, else /usr/bin/python3. None → the test fails.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSynth } from '../../../app/synth';
import { prepareData } from '../../../models/loupe-tiny/prepare';
import { requirePython } from './python';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const TOK = 'models/tiny-random-qwen25vl';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-scene-traj-'));
const SYNTH = path.join(tmp, 'synth');
const PREP = path.join(tmp, 'prep');
// the two kinds that crop twice (trajectories.ts CLOSER_KINDS): dot counts and left-of
const SYNTH2 = path.join(tmp, 'synth2');
const PREP2 = path.join(tmp, 'prep2');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(async () => {
  await generateSynth({ seed: 23, n: 6, video: 2, kinds: ['ring-digits', 'tag-letter'] }, SYNTH, sharpSynthRaster);
  await prepareData({ dirs: [SYNTH], outDir: PREP, tokDir: path.join(ROOT, TOK), notoolFraction: 0, log: () => undefined });
  await generateSynth({ seed: 7, n: 8, kinds: ['box-dots', 'left-of'] }, SYNTH2, sharpSynthRaster);
  await prepareData({ dirs: [SYNTH2], outDir: PREP2, tokDir: path.join(ROOT, TOK), notoolFraction: 0, log: () => undefined });
}, 360_000);

interface Report {
  zoom_trajectories: number;
  ids_identical: number;
  mean_abs_pixel_diff: number | null;
  zoom2_trajectories: number;
  zoom2_identical: number;
  zoom2_mean_abs_pixel_diff: number | null;
  frames_zoom_trajectories: number;
  frames_zoom_identical: number;
  frames_zoom_mean_abs_pixel_diff: number | null;
  first_difference: string | null;
}

interface Rec {
  qid: string;
  kind: string;
  ids: number[];
  spans: number[][];
}

/** train.py from the tiny model for 2 CPU steps of 4 on the prepared data, half of each batch drawn fresh from SYNTH. */
function trainTwoSteps(out: string, extra: string[], prep = PREP, synth = SYNTH): SpawnSyncReturns<string> {
  const python = requirePython(['torch', 'numpy', 'PIL']);
  return spawnSync(
    python,
    [
      'models/loupe-tiny/train.py', '--data', prep, '--scenes', synth, '--scene-frac', '0.5', '--scene-workers', '2',
      '--fresh-from', TOK, '--tok', TOK, '--device', 'cpu', '--max-steps', '2', '--bs', '4', '--export', 'none',
      '--crop-eval', '1', '--read-eval', '1', '--log-every', '1', '--out', out, ...extra,
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '1' } },
  );
}

function check(python: string, prep: string, synth = SYNTH): { status: number | null; rep: Report; log: string } {
  const r = spawnSync(python, ['models/loupe-tiny/scene_traj.py', '--check-manifest', prep, '--scenes', synth, '--tok', TOK], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  const log = `${r.stdout}\n${r.stderr}`;
  const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
  expect(line, `no JSON line:\n${log.slice(-3000)}`).toBeDefined();
  return { status: r.status, rep: JSON.parse(line!) as Report, log };
}

interface GlyphReport {
  trajectories: Record<string, number>;
  glyphs: number;
  query_before_glyph: number;
  ink_under_pointer: number;
  trajectories_in_order: number;
  after_digit: number;
  after_digit_query_ok: number;
  option_pointer: number;
  option_pointer_ok: number;
}

/** `scene_traj.py --check-glyphs` on a synth folder: the process, its JSON report and its whole output. */
function checkGlyphs(synth: string): { r: SpawnSyncReturns<string>; rep: GlyphReport; log: string } {
  const python = requirePython(['torch', 'numpy', 'PIL']);
  const r = spawnSync(python, ['models/loupe-tiny/scene_traj.py', '--check-glyphs', '--scenes', synth, '--tok', TOK], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  const log = `${r.stdout}\n${r.stderr}`;
  const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
  expect(line, log.slice(-3000)).toBeDefined();
  return { r, rep: JSON.parse(line!) as GlyphReport, log };
}

describe('scene_traj.py: fresh zoom and frames-zoom trajectories', () => {
  it("rebuild prepare.ts's zoom and frames-zoom trajectories token for token, and a tampered manifest is caught", () => {
    const python = requirePython(['torch', 'numpy', 'PIL']);
    const { status, rep, log } = check(python, PREP);
    expect(rep.zoom_trajectories, log).toBeGreaterThanOrEqual(3);
    expect(rep.ids_identical, JSON.stringify(rep)).toBe(rep.zoom_trajectories);
    expect(rep.first_difference).toBeNull();
    expect(rep.mean_abs_pixel_diff).not.toBeNull();
    expect(rep.mean_abs_pixel_diff!).toBeLessThan(3);
    // both videos (a ring, a tag): 16 frames, the selected ones again, the crop
    expect(rep.frames_zoom_trajectories, log).toBe(2);
    expect(rep.frames_zoom_identical, JSON.stringify(rep)).toBe(rep.frames_zoom_trajectories);
    expect(rep.frames_zoom_mean_abs_pixel_diff).not.toBeNull();
    expect(rep.frames_zoom_mean_abs_pixel_diff!).toBeLessThan(3);
    expect(status, log).toBe(0);

    // the same folder with one token id changed: the first token of the reading turn of the last zoom trajectory
    const bad = path.join(tmp, 'prep-tampered');
    cpSync(PREP, bad, { recursive: true });
    const lines = readFileSync(path.join(PREP, 'manifest.jsonl'), 'utf8').split('\n').filter(Boolean);
    const recs = lines.map((l) => JSON.parse(l) as Rec);
    const i = recs.map((r) => r.kind).lastIndexOf('zoom');
    expect(i).toBeGreaterThanOrEqual(0);
    const rec = recs[i]!;
    const at = rec.spans[1]![0]!;
    rec.ids[at] = rec.ids[at]! + 1;
    lines[i] = JSON.stringify(rec);
    // and the last frames-zoom trajectory (after every image sample's): the first token of its crop turn
    const v = recs.map((r) => r.kind).lastIndexOf('frames-zoom');
    expect(v).toBeGreaterThan(i);
    const vrec = recs[v]!;
    expect(vrec.spans).toHaveLength(3);
    const vat = vrec.spans[1]![0]!;
    vrec.ids[vat] = vrec.ids[vat]! + 1;
    lines[v] = JSON.stringify(vrec);
    writeFileSync(path.join(bad, 'manifest.jsonl'), lines.join('\n') + '\n');
    const t = check(python, bad);
    expect(t.status, t.log).toBe(1);
    expect(t.rep.zoom_trajectories).toBe(rep.zoom_trajectories);
    expect(t.rep.ids_identical).toBe(rep.zoom_trajectories - 1);
    expect(t.rep.frames_zoom_trajectories).toBe(rep.frames_zoom_trajectories);
    expect(t.rep.frames_zoom_identical).toBe(rep.frames_zoom_trajectories - 1);
    expect(t.rep.first_difference).toContain(`${rec.qid}: first difference at token ${at} `);
  }, 120_000);

  it("dot counts and left-of crop twice: prepare.ts's zoom2 trajectories rebuilt token for token (left-of with its options), a tampered closer call caught", () => {
    const python = requirePython(['torch', 'numpy', 'PIL']);
    const { status, rep, log } = check(python, PREP2, SYNTH2);
    // seed 7's 8 samples: 6 need a zoom (2 are easy: a direct answer), each a zoom2 trajectory
    expect(rep.zoom2_trajectories, log).toBe(6);
    expect(rep.zoom2_identical, JSON.stringify(rep)).toBe(6);
    expect(rep.zoom_trajectories).toBe(0);
    expect(rep.zoom2_mean_abs_pixel_diff!, log).toBeLessThan(3);
    expect(status, log).toBe(0);
    const lines = readFileSync(path.join(PREP2, 'manifest.jsonl'), 'utf8').split('\n').filter(Boolean);
    const recs = lines.map((l) => JSON.parse(l) as Rec);
    const i = recs.findIndex((r) => r.kind === 'zoom2');
    const rec = recs[i]!;
    expect(rec.spans).toHaveLength(3);
    // one token of the closer call's box changed: that trajectory, and only it, no longer matches
    const at = rec.spans[1]![1]! - 12;
    rec.ids[at] = rec.ids[at]! + 1;
    lines[i] = JSON.stringify(rec);
    const bad = path.join(tmp, 'prep2-tampered');
    cpSync(PREP2, bad, { recursive: true });
    writeFileSync(path.join(bad, 'manifest.jsonl'), lines.join('\n') + '\n');
    const t = check(python, bad, SYNTH2);
    expect(t.status, t.log).toBe(1);
    expect(t.rep.zoom2_identical).toBe(5);
  }, 120_000);

  it("zoom2's glyph pointers sit on the closer crop's ink: every dot of a count, the left tag's letter", () => {
    const { r, rep, log } = checkGlyphs(SYNTH2);
    // 4 draws of each of the 8 scenes (easy ones too: a crop is still a right way to answer them)
    expect(rep.trajectories, log).toEqual({ zoom2: 32 });
    // a count of n has n glyphs, a left-of one: far more than one per trajectory
    expect(rep.glyphs, log).toBeGreaterThan(32);
    expect(rep.query_before_glyph).toBe(rep.glyphs);
    expect(rep.ink_under_pointer, log).toBe(rep.glyphs);
    expect(rep.trajectories_in_order).toBe(32);
    // left-of's option pointers ("The left tag shows K; (A) R, (B) K: \\boxed{B}"): each option letter written copies
    // from its question line and is compared with the letter read, and the boxed letter looks at the last option written:
    // 3 pointers where the answer is (A), 5 where it is (B); 4 draws of each left-of scene (seed 7 has 4)
    const left = readFileSync(path.join(SYNTH2, 'samples.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { category: string; answer: string }).filter((s) => s.category === 'left-of');
    expect(left.length).toBe(4);
    expect(new Set(left.map((s) => s.answer)).size, 'both answer letters').toBe(2);
    expect(rep.option_pointer).toBe(4 * left.reduce((n, s) => n + (s.answer === 'A' ? 3 : 5), 0));
    expect(rep.option_pointer_ok).toBe(rep.option_pointer);
    expect(r.status, log).toBe(0);
  }, 120_000);

  it("the glyph pointer's targets: each glyph's query precedes its token and the pointed crop tokens hold its ink", () => {
    const { r, rep, log } = checkGlyphs(SYNTH);
    // 4 draws of each scene: zoom trajectories of the images, frames-zoom of the two videos (a ring and a tag)
    expect(rep.trajectories.zoom, log).toBeGreaterThanOrEqual(8);
    expect(rep.trajectories['frames-zoom'], log).toBe(8);
    expect(rep.glyphs, log).toBeGreaterThanOrEqual(16);
    expect(rep.query_before_glyph).toBe(rep.glyphs);
    expect(rep.ink_under_pointer, log).toBe(rep.glyphs);
    expect(rep.trajectories_in_order).toBe(rep.trajectories.zoom! + rep.trajectories['frames-zoom']!);
    // the look-ahead entries: one per ring digit
    expect(rep.after_digit).toBeGreaterThanOrEqual(8);
    expect(rep.after_digit_query_ok).toBe(rep.after_digit);
    expect(r.status, log).toBe(0);
  }, 120_000);

  it('train.py --scenes: 2 CPU steps with 2 fresh trajectories of every batch of 4, videos on one step, images on the other', () => {
    const out = path.join(tmp, 'run');
    const r = trainTwoSteps(out, ['--scene-video-frac', '0.5', '--aux-digit', '1', '--aux-digit-layer', '1']);
    const log = `${r.stdout}\n${r.stderr}`;
    expect(r.status, log.slice(-6000)).toBe(0);
    const m = /^fresh zoom trajectories: (\d+) scenes from 1 folder\(s\) .*, 2 of every batch of 4$/m.exec(r.stdout);
    expect(m, log.slice(-6000)).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    // the two videos are training scenes (the held-out two are images); --scene-video-frac 0.5: every 2nd step's fresh
    // draws are videos, the first step's included, so step 1 trains on 2 videos and step 2 on 2 image zooms
    expect(r.stdout).toMatch(/^fresh frames-zoom trajectories: 2 video scenes, every 2-th step's fresh draws$/m);
    expect(r.stdout).toMatch(/^first fresh frames-zoom trajectory at step 1: synth-23-0000[67], \d{4} tokens, 2[01] images$/m);
    expect(r.stdout).toMatch(/^fresh trajectories drawn: 2 frames-zoom, 2 zoom$/m);
    // the glyph pointer (--aux-digit) has rows on both steps: the reading turn after a video's crop and after an image's
    expect(r.stdout).toMatch(/^step:1 - .* - train\/aux_digit:\d+\.\d+/m);
    expect(r.stdout).toMatch(/^step:2 - .* - train\/aux_digit:\d+\.\d+/m);
    expect(existsSync(path.join(out, 'metrics.json'))).toBe(true);
    const metrics = JSON.parse(readFileSync(path.join(out, 'metrics.json'), 'utf8')) as {
      fresh: { scenes: number; per_batch: number; video_scenes: number; drawn: Record<string, number> } | null;
    };
    expect(metrics.fresh?.per_batch).toBe(2);
    expect(metrics.fresh?.scenes).toBeGreaterThan(0);
    expect(metrics.fresh?.video_scenes).toBe(2);
    expect(metrics.fresh?.drawn).toEqual({ 'frames-zoom': 2, zoom: 2 });
  }, 300_000);

  it('train.py --video-pointer --frame-pointer --mrope-section: 2 CPU video steps, the crop-turn and frame-pick pointer losses logged and finite, the split in the written config', () => {
    const out = path.join(tmp, 'run-video-pointer');
    // the tiny random model has 2 text layers: the pointer's layer must be 0 or 1
    // and under another M-RoPE split (the tiny model's is [2, 3, 3]): the run trains with it and writes it in its config
    const r = trainTwoSteps(out, ['--scene-video-frac', '1', '--video-pointer', '1', '--frame-pointer', '1', '--aux-attn-layer', '1', '--aux-read', '1', '--aux-target', '1', '--box-weight', '3', '--mrope-section', '1,3,4']);
    const log = `${r.stdout}\n${r.stderr}`;
    expect(r.status, log.slice(-6000)).toBe(0);
    expect(r.stdout).toMatch(/^mrope_section \[1, 3, 4\] \(t, h, w\)$/m);
    const cfg = JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')) as { text_config: { rope_parameters: { mrope_section: number[] } } };
    expect(cfg.text_config.rope_parameters.mrope_section).toEqual([1, 3, 4]);
    // both prepared frames-zoom trajectories (the call box's centre: they carry no target box) get a crop-turn target
    expect(r.stdout).toMatch(/^frames-zoom trajectories with a crop-turn target \(--video-pointer\): 2 \(train \+ val\)$/m);
    expect(r.stdout).toMatch(/^fresh frames-zoom trajectories: 2 video scenes, every 1-th step's fresh draws$/m);
    expect(r.stdout).toMatch(/^fresh trajectories drawn: 4 frames-zoom$/m);
    for (const step of [1, 2]) {
      const line = r.stdout.split('\n').find((l) => l.startsWith(`step:${step} - train/loss:`));
      expect(line, log.slice(-6000)).toBeDefined();
      for (const k of ['vattn', 'vread', 'vtgt', 'fattn']) {
        const m = new RegExp(` - train/aux_${k}:(\\S+)`).exec(line!);
        expect(m, `${k} in ${line}`).not.toBeNull();
        expect(Number.isFinite(Number(m![1])), `${k}: ${m![1]}`).toBe(true);
      }
    }
    const metrics = JSON.parse(readFileSync(path.join(out, 'metrics.json'), 'utf8')) as {
      aux: { video_pointer: number; frame_pointer: number };
      curve: Array<{ step: number; aux_vattn?: number; aux_fattn?: number }>;
      fresh: { drawn: Record<string, number> } | null;
    };
    expect(metrics.aux.video_pointer).toBe(1);
    expect(metrics.aux.frame_pointer).toBe(1);
    expect(metrics.fresh?.drawn).toEqual({ 'frames-zoom': 4 });
    expect(metrics.curve.map((c) => c.step)).toEqual([1, 2]);
    for (const c of metrics.curve) {
      expect(Number.isFinite(c.aux_vattn), JSON.stringify(c)).toBe(true);
      expect(c.aux_vattn!).toBeGreaterThan(0);
      expect(Number.isFinite(c.aux_fattn), JSON.stringify(c)).toBe(true);
      expect(c.aux_fattn!).toBeGreaterThan(0);
    }
  }, 300_000);

  it("train.py on zoom2: the closer call's pointer and the reading turn's, on the closer crop, with losses of a pointer that can see its target", () => {
    const out = path.join(tmp, 'run-zoom2');
    const r = trainTwoSteps(
      out,
      ['--video-pointer', '1', '--aux-attn-layer', '1', '--aux-read', '1', '--aux-target', '1', '--aux-attn', '1', '--aux-attn2', '1', '--aux-glyph', '1', '--aux-digit', '1', '--aux-digit-layer', '1'],
      PREP2,
      SYNTH2,
    );
    const log = `${r.stdout}\n${r.stderr}`;
    expect(r.status, log.slice(-6000)).toBe(0);
    // every prepared zoom2 trajectory (train + val) gets a closer-call target; none is a video
    expect(r.stdout).toMatch(/^zoom2 trajectories with a closer-call target \(--video-pointer\): 6 \(train \+ val\)$/m);
    expect(r.stdout).toMatch(/^fresh trajectories drawn: 4 zoom2$/m);
    for (const step of [1, 2]) {
      const line = r.stdout.split('\n').find((l) => l.startsWith(`step:${step} - train/loss:`));
      expect(line, log.slice(-6000)).toBeDefined();
      // a pointer whose queries come before its keys (the reading turn's span taken for the closer call's) reads
      // -log(0): about 1e4. Uniform attention over this sequence is about log(1100) = 7.
      for (const k of ['vattn', 'attn2', 'glyph', 'digit']) {
        const m = new RegExp(` - train/aux_${k}:(\\S+)`).exec(line!);
        expect(m, `${k} in ${line}`).not.toBeNull();
        expect(Number(m![1]), `${k}: ${m![1]}`).toBeLessThan(12);
      }
    }
  }, 300_000);
});

/**
 * models/loupe-tiny/train.py's auxiliary losses (vision target head, absolute-position probe, pointer loss on the
 * first turn's attention, box-number weight), checked by models/loupe-tiny/check_train_aux.py on a hand-built
 * trajectory with the tiny random model: the targets it derives, the batched pointer loss against a naive per-query
 * recomputation of the attention, and that 40 Adam steps on the pointer loss alone more than halve it. The reading
 * signals on whole zoom trajectories: crop_target / neighbourhood on hand-worked cases, the reading head's crop tokens
 * and the reading pointer's keys and queries, that pointer's loss against the naive one, the reading head learnable
 * (tower + head), and read_eval running (only running: the random model reads nothing).
 * --video-pointer on two videos generated here (`loupe synth --seed 9 --n 0 --video 2`, a ring and a tag): on fresh
 * frames-zoom trajectories the crop turn's pointer keys are the 3x3 tokens around the true target in the frame the crop
 * call names (from the sample's target box and the frame's grid; its ink under them), keys moved one token right fail
 * that check, vbox_at is exactly the call's box numbers, and without the flag the batch is unchanged. --frame-pointer on
 * the same draws: the select_frames turn's queries end right before the number of the crop's frame, their keys are the
 * 3x3 tokens around the target in that frame among the video's own frames (keys a row down fail), and only with the flag.
 * --option-swap on four left-of scenes (`loupe synth --seed 9 --n 4`, left-of only), two draws each: off, the options
 * as generated and the sample's answer letter; on, the options the other way, the boxed letter moved with them, the
 * same reading, the option pointer on the new line's letter and tag, the scene's sample unchanged. --aux-copy on the same
 * scenes: one copy row per option the reading turn lists, its target the listed letter (as the question's line has it),
 * none in a batch without left-of, and the copy loss learnable.
 *
 * Needs a python3 with torch, numpy and Pillow: LOUPE_PYTHON, else python3, else /usr/bin/python3. None → the test fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSynth } from '../../../app/synth';
import { requirePython } from './python';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-train-aux-'));
const VIDEOS = path.join(tmp, 'videos');
const LEFT = path.join(tmp, 'left-of');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(async () => {
  await generateSynth({ seed: 9, n: 0, video: 2, kinds: ['ring-digits', 'tag-letter'] }, VIDEOS, sharpSynthRaster);
  await generateSynth({ seed: 9, n: 4, kinds: ['left-of'] }, LEFT, sharpSynthRaster);
}, 120_000);

describe('train.py auxiliary losses', () => {
  it('derive the right targets (first turn, reading turn, video crop turn), match the naive attention, and can be learned', () => {
    const python = requirePython(['torch', 'numpy', 'PIL']);
    const r = spawnSync(python, ['models/loupe-tiny/check_train_aux.py', '--video-scenes', VIDEOS, '--left-scenes', LEFT], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, OMP_NUM_THREADS: '1' },
    });
    const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
    expect(line, `no JSON line; stderr:\n${r.stderr.slice(-3000)}`).toBeDefined();
    const res = JSON.parse(line!) as { ok: boolean; checks: Record<string, unknown> };
    for (const k of ['annotate', 'read_targets', 'read_loss', 'pointer_targets', 'pointer_queries', 'position_targets', 'position_ids', 'box_weight', 'pointer_equals_naive', 'pointer_learnable',
      'crop_target_centre', 'crop_target_glyphs', 'crop_target_none', 'neighbourhood', 'annotate_crop_target', 'glyph_rows',
      'glyph_rows_are_crop_tokens', 'attn2_keys', 'attn2_queries', 'attn_keys_global_view', 'attn2_equals_naive', 'glyph_learnable',
      'read_eval_runs_only',
      'video_named_frame', 'video_pointer_keys', 'video_pointer_covers_target', 'video_pointer_shifted_fails', 'video_box_at', 'video_queries',
      'video_box_weight', 'video_target_head_rows', 'video_pos_probe_named_frame', 'video_off_unchanged', 'video_fallback_box_centre', 'video_pointer_equals_naive',
      'video_pointer_learnable', 'frame_pointer_frame', 'frame_pointer_keys', 'frame_pointer_shifted_fails', 'frame_pointer_queries', 'frame_pointer_off',
      'mrope_text_unchanged', 'mrope_image_changed', 'mrope_config', 'mrope_bad_split_refused', 'graft_rope_guard', 'graft_rope_guard_beside', 'export_q8_only',
      'option_swap_off', 'option_swap_on', 'option_swap_pointer', 'option_swap_sample_kept', 'copy_rows', 'copy_none_without_left_of', 'copy_learnable']) {
      expect(res.checks[k], `${k}: ${JSON.stringify(res.checks)}`).toBe(true);
    }
    // 3 fresh draws of each video; the shifted keys pass the whole check on none of them
    const vc = res.checks.video_counts as { records: number; keys: number; shifted_passing: number };
    expect(res.checks.video_records).toBe(6);
    expect(res.checks.option_swap_draws).toBe(8); // 4 scenes, 2 draws each, none refused
    expect(res.checks.copy_draws).toBe(8); // the same scenes, as generated and swapped
    expect(vc.keys).toBe(6);
    expect(vc.shifted_passing).toBe(0);
    const fc = res.checks.frame_pointer_counts as { records: number; keys: number; queries: number; shifted_passing: number };
    expect([fc.records, fc.keys, fc.queries, fc.shifted_passing]).toEqual([6, 6, 6, 0]);
    expect(res.ok).toBe(true);
    expect(r.status).toBe(0);
  }, 900_000); // the video check trains its pointer on CPU with one thread: minutes on a busy 2-core machine
});

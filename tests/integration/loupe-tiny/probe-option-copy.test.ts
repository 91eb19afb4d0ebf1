/**
 * models/loupe-tiny/probe_option_copy.py on the shipped model and four left-of scenes made here (`loupe synth --seed 9
 * --n 4`, left-of only): every draw's three kinds of look-back counted (per option listed a copy and a compare, one
 * answer), the pointer mass it reports equal to train.py's own pointer loss on the same look-backs, the copies split
 * four ways; and clear errors for a folder without left-of scenes and a model folder without weights.
 *
 * Needs a python3 with torch, numpy and Pillow: LOUPE_PYTHON, else python3, else /usr/bin/python3. None → the test fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSynth } from '../../../app/synth';
import { requirePython } from './python';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-probe-copy-'));
const LEFT = path.join(tmp, 'left-of');
const RINGS = path.join(tmp, 'rings');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(async () => {
  await generateSynth({ seed: 9, n: 4, kinds: ['left-of'] }, LEFT, sharpSynthRaster);
  await generateSynth({ seed: 9, n: 2, kinds: ['ring-digits'] }, RINGS, sharpSynthRaster);
}, 120_000);

const probe = (args: string[]) => spawnSync(requirePython(['torch', 'numpy', 'PIL']), ['models/loupe-tiny/probe_option_copy.py', ...args], { cwd: ROOT, encoding: 'utf8' });

describe('probe_option_copy.py', () => {
  it('counts every look-back of every draw and reads the pointer as train.py trains it', () => {
    const out = path.join(tmp, 'probe.json');
    const r = probe(['--model', 'models/loupe-tiny/model', '--scenes', LEFT, '--n', '4', '--threads', '1', '--json', out]);
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(readFileSync(out, 'utf8')) as {
      draws: number;
      by_kind: Record<'copy' | 'compare' | 'answer', { n: number; mean_mass_on_key: number; key_is_argmax: number; next_token_right: number }>;
      copies: Record<string, number>;
      max_diff_vs_train_pointer_loss: number;
    };
    expect(res.draws).toBe(4);
    const { copy, compare, answer } = res.by_kind;
    expect(answer.n).toBe(4);
    // one option listed when the answer is (A), two when it is (B): a copy and a compare each
    expect(copy.n).toBe(compare.n);
    expect(copy.n).toBeGreaterThanOrEqual(4);
    expect(copy.n).toBeLessThanOrEqual(8);
    for (const k of [copy, compare, answer]) {
      expect(k.mean_mass_on_key).toBeGreaterThanOrEqual(0);
      expect(k.mean_mass_on_key).toBeLessThanOrEqual(1);
      expect(k.key_is_argmax).toBeLessThanOrEqual(k.n);
      expect(k.next_token_right).toBeLessThanOrEqual(k.n);
    }
    expect(Object.values(res.copies).reduce((a, b) => a + b, 0)).toBe(copy.n);
    expect(res.max_diff_vs_train_pointer_loss).toBeLessThan(1e-4);
  }, 300_000);

  it('says what is wrong with its inputs', () => {
    const none = probe(['--model', 'models/loupe-tiny/model', '--scenes', RINGS, '--n', '2']);
    expect(none.status).not.toBe(0);
    expect(none.stderr).toMatch(/no left-of samples in/);
    const bare = probe(['--model', tmp, '--scenes', LEFT]);
    expect(bare.status).not.toBe(0);
    expect(bare.stderr).toMatch(/has no model\.safetensors/);
  }, 120_000);
});

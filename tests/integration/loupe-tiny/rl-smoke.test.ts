/**
 * models/loupe-tiny/rl.py (GRPO with the curiosity-driven reward) runs end to end on CPU: 2 steps on the tiny
 * random-weight model (models/tiny-random-qwen25vl), 2 of the fixed test scenes, group 2, short turns. Row 0 of each
 * group follows a script (a crop, a bad call, a boxed answer) so the tool path — pr_env crop, observation turn, image
 * preprocessing, multi-image update — and the curiosity terms are exercised even though the model is untrained.
 * Checks metrics.jsonl: 2 training steps, every value finite, the scripted calls counted. With --kl (the anchor to the
 * starting model), the KL term is 0 on the first step (policy = reference) and positive after one update.
 *
 * Needs a python3 with torch, numpy and Pillow: LOUPE_PYTHON, else python3, else /usr/bin/python3. None → the test fails.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { requirePython } from './python';
import { afterAll, describe, expect, it } from 'vitest';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-rl-smoke-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SCRIPT = [
  'Let me zoom in.\n<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.2, 0.2, 0.6, 0.6], "target_image": 1}}\n</tool_call>',
  'Wrong image.\n<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.1, 0.1, 0.4, 0.4], "target_image": 5}}\n</tool_call>',
  'The answer is \\boxed{7}.',
];

/** rl.py for 2 steps on the tiny random model, row 0 of each group scripted; `extra` arguments appended. */
function runRl(out: string, extra: string[] = []): SpawnSyncReturns<string> {
  const python = requirePython(['torch', 'numpy', 'PIL']);
  return spawnSync(
    python,
    [
      'models/loupe-tiny/rl.py', '--model', 'models/tiny-random-qwen25vl', '--scenes', 'models/loupe-tiny/examples',
      '--out', out, '--steps', '2', '--group', '2', '--scenes-per-step', '2', '--max-new-tokens', '8', '--device', 'cpu',
      '--seed', '1', '--no-save', '--script', JSON.stringify(SCRIPT), ...extra,
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '1' } },
  );
}

describe('rl.py: 2 GRPO steps on CPU', () => {
  it('writes 2 steps of finite metrics with the scripted tool calls counted', () => {
    const out = path.join(tmp, 'rl');
    const r = runRl(out);
    const log = `${r.stdout}\n${r.stderr}`;
    expect(r.status, log).toBe(0);
    expect(r.stdout).toMatch(/^step:1 - reward\/mean:/m);
    const lines = readFileSync(path.join(out, 'metrics.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const steps = lines.filter((l) => !l.eval);
    expect(steps.map((s) => s.step)).toEqual([1, 2]);
    for (const s of steps) {
      for (const k of ['reward/mean', 'acc', 'rapr', 'calls/mean', 'response_length/mean', 'loss', 'grad_norm']) {
        expect(typeof s[k], `${k} in ${JSON.stringify(s)}`).toBe('number');
        expect(Number.isFinite(s[k] as number), `${k} in ${JSON.stringify(s)}`).toBe(true);
      }
      // row 0 of each group made 2 calls (a crop, then a bad target_image), so RaPR >= 1/2 and calls/mean >= 1/2
      expect(s.rapr as number).toBeGreaterThanOrEqual(0.5);
      expect(s['calls/mean'] as number).toBeGreaterThanOrEqual(0.5);
    }
    const samples = readFileSync(path.join(out, 'samples.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { obs: string[] });
    expect(samples[0]!.obs[0]).toMatch(/^\nHere is the cropped image \(Image Size: \d+x\d+\):$/);
    expect(samples[0]!.obs[1]).toBe(
      '\nExecution error:\nExecution Error: Incorrect `target_image` argument in `crop_image_normalized` operation. You can only pick an image within [1,2]\n',
    );
  }, 300_000);

  it('--kl: the KL to the starting model is 0 before the first update and positive after it', () => {
    const out = path.join(tmp, 'rl-kl');
    const r = runRl(out, ['--kl', '0.5', '--lr', '0.01']);
    const log = `${r.stdout}\n${r.stderr}`;
    expect(r.status, log).toBe(0);
    const steps = readFileSync(path.join(out, 'metrics.jsonl'), 'utf8').split('\n').filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, number | boolean>).filter((l) => !l.eval);
    expect(steps.map((s) => s.step)).toEqual([1, 2]);
    expect(typeof steps[0]!.kl, log).toBe('number');
    expect(steps[0]!.kl as number).toBeLessThan(1e-6);
    expect(steps[1]!.kl as number, JSON.stringify(steps[1])).toBeGreaterThan(1e-6);
    expect(r.stdout).toMatch(/^step:2 - .* - kl:/m);
  }, 300_000);
});

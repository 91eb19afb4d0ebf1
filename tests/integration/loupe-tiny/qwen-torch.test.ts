/**
 * models/loupe-tiny/qwen_torch.py — Qwen2.5-VL in plain torch (no Hugging Face transformers), the trainer's model —
 * checked by models/loupe-tiny/check_qwen_torch.py through a python3 that has torch:
 *
 * (b) always: from models/tiny-random-qwen25vl/model.safetensors and the PNGs there (read and patchified without Pillow),
 *     greedy decoding reproduces parity.json's PyTorch tokens exactly, on both attention paths (SDPA and the softmax
 *     path torch < 2 uses); logits match a transformers reference recorded in the check (logsumexp at 24 positions);
 *     KV-cache decoding equals teacher-forced argmax; a right-padded batch equals its rows alone.
 * (a) when transformers is importable there: the same state-dict keys as Qwen2_5_VLForConditionalGeneration, and
 *     logits / loss / gradients within 1e-4 and equal greedy tokens on random weights. Without transformers (e.g. CI with
 *     Debian's python3-torch only) (a) is reported as skipped; (b) must still run.
 *
 * Python: $LOUPE_PYTHON, then python3, then /usr/bin/python3 — the first that imports torch and numpy.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findPython } from './python';
import { beforeAll, describe, expect, it } from 'vitest';
import { skipUnless } from '../../support/requirements';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CHECK = path.join(ROOT, 'models/loupe-tiny/check_qwen_torch.py');

interface CaseB {
  greedy_equal_sdpa?: boolean;
  greedy_equal_manual: boolean;
  teacher_forced_equal: boolean;
  group_equal: boolean;
  lse_max_diff_vs_transformers: number;
}
interface CaseA {
  logits_max_diff: number;
  vision_max_diff: number;
  loss_diff: number;
  greedy_equal: boolean;
}
interface CheckResult {
  ok: boolean;
  failures: string[];
  ran: string[];
  torch: string;
  transformers?: string;
  parity: Record<'single_image' | 'multi_image', CaseB> & { padded_batch_logits_max_diff: number; safetensors_roundtrip: boolean };
  hf?: Record<string, { state_dict_keys_equal: boolean; single_image: CaseA; multi_image: CaseA; padded_batch: Record<string, number> }>;
}

let found: { python: string | null; tried: string[] };
let result: CheckResult | undefined;
let runError = '';

beforeAll(async () => {
  found = findPython(['torch', 'numpy']);
  if (!found.python) return;
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>((resolve) => {
    execFile(found.python!, [CHECK], { cwd: ROOT, timeout: 240_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ stdout, stderr, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 }),
    );
  });
  const last = stdout.trim().split('\n').pop() ?? '';
  try {
    result = JSON.parse(last) as CheckResult;
  } catch {
    runError = `check_qwen_torch.py (exit ${code}) printed no JSON result; stderr tail:\n${stderr.slice(-3000)}`;
  }
}, 300_000);

describe('qwen_torch.py: plain-torch Qwen2.5-VL', () => {
  it('finds a python3 with torch', () => {
    expect(
      found.python,
      `no python3 with torch and numpy found (tried ${found.tried.join('; ')}). Install them — Debian/Ubuntu: ` +
        '`apt-get install python3-torch python3-numpy`; elsewhere: `pip install torch numpy` — or point LOUPE_PYTHON at a python that has them.',
    ).toBeTruthy();
  });

  it('check_qwen_torch.py passes', () => {
    expect(runError).toBe('');
    expect(result?.failures).toEqual([]);
    expect(result?.ok).toBe(true);
  });

  it('(b) torch only: reproduces parity.json greedy tokens from model.safetensors and the PNGs', () => {
    const r = result!;
    expect(r.ran).toContain('b');
    for (const name of ['single_image', 'multi_image'] as const) {
      const c = r.parity[name];
      expect(c.greedy_equal_manual, `${name}: softmax attention path`).toBe(true);
      if (c.greedy_equal_sdpa !== undefined) expect(c.greedy_equal_sdpa, `${name}: SDPA path`).toBe(true);
      expect(c.teacher_forced_equal, `${name}: KV cache vs full forward`).toBe(true);
      expect(c.group_equal, `${name}: identical-row group`).toBe(true);
      expect(c.lse_max_diff_vs_transformers, `${name}: logits vs the recorded transformers reference`).toBeLessThan(1e-4);
    }
    expect(r.parity.padded_batch_logits_max_diff).toBeLessThan(1e-4);
    expect(r.parity.safetensors_roundtrip).toBe(true);
  });

  it('(a) matches transformers Qwen2_5_VLForConditionalGeneration (skipped where transformers is not installed)', (ctx) => {
    const r = result!;
    // Hugging Face transformers has no Debian package, so npm test cannot provide it: this one may skip in CI.
    skipUnless(ctx, r.ran.includes('a'), { what: 'Hugging Face transformers', reason: `not importable by ${found.python} (torch ${r.torch}): only (b) ran; pip install transformers to run it`, provisioned: false });
    expect(Object.keys(r.hf ?? {}).sort()).toEqual(['loupe-tiny', 'tied-noGQA', 'tiny-random']);
    for (const [label, h] of Object.entries(r.hf!)) {
      expect(h.state_dict_keys_equal, label).toBe(true);
      for (const c of [h.single_image, h.multi_image]) {
        expect(c.logits_max_diff, label).toBeLessThan(1e-4);
        expect(c.vision_max_diff, label).toBeLessThan(1e-4);
        expect(c.loss_diff, label).toBeLessThan(1e-4);
        expect(c.greedy_equal, label).toBe(true);
      }
      expect(h.padded_batch.grad_max_rel_diff, label).toBeLessThan(1e-4);
    }
  });
});

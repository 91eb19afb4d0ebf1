/**
 * `loupe attention` (runAttentionCommand) on real models and real loupe-synth scenes (loupe-tiny's bundled examples):
 * loupe-tiny measured on its own crop turn, the random tiny model on the scenes' reference turns (it never calls the
 * tool); the table and the JSON agree; wrong inputs get a clear error and exit 2.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runAttentionCommand, type AttentionCliOptions } from '../../../main/cli/commands/attention';
import type { AttentionSummary } from '../../../app/attention/measure';
import { AttentionCardSchema } from '../../../app/contract/attention';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DATA = path.join(ROOT, 'models/loupe-tiny/examples');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-attn-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function run(o: Partial<AttentionCliOptions>): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let so = '';
  let se = '';
  out.on('data', (d: Buffer) => (so += d.toString()));
  err.on('data', (d: Buffer) => (se += d.toString()));
  const code = await runAttentionCommand({ model: '', bench: 'loupe-synth', data: DATA, completion: 'own', prompt: 'vcot', workspace: tmp, ...o }, { stdout: out, stderr: err });
  return { code, out: so, err: se };
}

describe('loupe attention', () => {
  it('loupe-tiny on its own crop turn: a row per layer, the mean, the best layer and the uniform baseline', async () => {
    const json = path.join(tmp, 'tiny.json');
    const r = await run({ model: path.join(ROOT, 'models/loupe-tiny/model'), limit: 1, json });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/n 1 \(own turns 1, reference turns 0\)/);
    expect(r.out).toMatch(/^uniform baseline \(target area fraction\): \d+\.\d %; a peak on a random cell touches the target \d+\.\d % of the time$/m);
    for (const l of ['1', '2', '3', '4', '5', 'mean']) expect(r.out).toMatch(new RegExp(`^${l}\\s+\\d+\\.\\d %`, 'm'));
    const j = JSON.parse(readFileSync(json, 'utf8')) as { summary: AttentionSummary; rows: Array<{ inBox: number[]; uniform: number }> };
    expect(j.summary.layers).toHaveLength(6);
    expect(j.rows[0]!.inBox.every((x) => x >= 0 && x <= 1)).toBe(true);
    expect(j.summary.uniform).toBeCloseTo(j.rows[0]!.uniform, 12);
  }, 120_000);

  it('the random model on the reference turns; its card names the other run as the baseline', async () => {
    const json = path.join(tmp, 'random.json');
    const card = path.join(tmp, 'attention.json');
    const r = await run({ model: path.join(ROOT, 'models/tiny-random-qwen25vl'), limit: 2, completion: 'reference', json, card, baseline: path.join(tmp, 'tiny.json') });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/n 2 \(own turns 0, reference turns 2\)/);
    const j = JSON.parse(readFileSync(json, 'utf8')) as { summary: AttentionSummary };
    expect(j.summary.layers.map((l) => l.layer)).toEqual([0, 1, 'mean']);
    const c = AttentionCardSchema.parse(JSON.parse(readFileSync(card, 'utf8')));
    expect(c).toMatchObject({ bench: 'loupe-synth', n: 2, completion: 'reference', baseline: { model: 'loupe-tiny', completion: 'own' } });
    expect(c.data).toBe('loupe-synth seed 9, 2 image scenes that need a zoom');
    expect(c.peakChance).toBeGreaterThan(0);
  }, 120_000);

  it('refuses other benchmarks, a folder without samples and unknown choices', async () => {
    expect(await run({ bench: 'vstar', model: 'x' })).toMatchObject({ code: 2, err: expect.stringMatching(/needs ground-truth target boxes \(loupe-synth\)/) });
    expect(await run({ completion: 'mine', model: 'x' })).toMatchObject({ code: 2, err: expect.stringMatching(/--completion must be own or reference/) });
    const r = await run({ model: path.join(ROOT, 'models/tiny-random-qwen25vl'), data: path.join(tmp, 'nothing') });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cannot read samples\.jsonl/);
  });
});

/**
 * PyVision in sweeps: `loupe eval --dialect pyvision|pyvision-rl` over a loupe-synth benchmark generated here.
 * The model is a replay engine whose turns are PyVision-format text written for this test from the protocol
 * (labelled: no recorded model output; loupe-tiny cannot write code). Every code turn runs in the real sandbox
 * (bubblewrap, the system Python with Pillow/numpy/matplotlib); figures land in the workspace; the benchmark's
 * scorer scores the `\boxed{}` answers. The sandboxes' folders live under the child's TMPDIR, so the test can see
 * that every sample's sandbox is removed.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunManifestSchema, type SampleRecord } from '../../../app/contract/trajectory';
import { getAdapter } from '../../../app/bench';
import type { BenchSample } from '../../../app/bench/types';
import { lastJson, makeSynth, readRecords as readLines, runCli } from './helpers';

const readRecords = async (dir: string) => (await readLines(path.join(dir, 'samples.jsonl'))) as unknown as SampleRecord[];

let tmp: string;
let ws: string;
let data: string;
let sandboxTmp: string;
let bench: BenchSample[];
const N = 4;

/** A code turn as PyVision models write them: reasoning, then the python block (the `</code>` stop is dropped by the API). */
const CODE_TURN = "Let me zoom into the centre of the image.\n<code>\n```python\nw, h = image_clue_0.size\nprint('size', w, h)\nplt.imshow(image_clue_0.crop((w // 4, h // 4, 3 * w // 4, 3 * h // 4)))\nplt.axis('off')\nplt.show()\n```\n";
const answerTurn = (a: string) => `The zoomed view shows it clearly.\n<answer>\n\\boxed{${a}}\n</answer>`;

async function writeReplay(file: string, turnsOf: (s: BenchSample, i: number) => string[]): Promise<string> {
  await fsp.writeFile(file, bench.map((s, i) => JSON.stringify({ qid: s.qid, turns: turnsOf(s, i) })).join('\n') + '\n');
  return file;
}

const leftovers = async () => (await fsp.readdir(sandboxTmp)).filter((n) => n.startsWith('loupe-pysandbox-'));

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pyvision-eval-'));
  ws = path.join(tmp, 'ws');
  sandboxTmp = path.join(tmp, 'sandbox-tmp');
  await fsp.mkdir(sandboxTmp);
  // Run as root, the sandbox drops to nobody, who must reach the episode folder (as under /tmp).
  await fsp.chmod(tmp, 0o755);
  await fsp.chmod(sandboxTmp, 0o1777);
  ({ data } = await makeSynth(tmp, N));
  bench = (await getAdapter('loupe-synth').load(data)).samples;
}, 180_000);

afterAll(async () => {
  if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
});

describe('loupe eval --dialect pyvision', () => {
  it('runs every sample through the sandbox, scores the boxed answers and removes each sandbox', async () => {
    // Sample 1 answers wrongly, so the accuracy is 3/4 and the scorer is seen to score.
    const replay = await writeReplay(path.join(tmp, 'pv.jsonl'), (s, i) => [CODE_TURN, answerTurn(i === 1 ? 'wrong' : String(s.answer))]);
    const r = await runCli(['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--dialect', 'pyvision', '--workspace', ws, '--run', 'pv', '--concurrency', '4', '--max-sandboxes', '2', '--json', '--no-progress'], { env: { TMPDIR: sandboxTmp } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/error/i);
    expect(lastJson(r.stdout)['run']).toBe('pv');
    const records = await readRecords(path.join(ws, 'runs', 'pv'));
    expect(records).toHaveLength(N);
    expect(records.filter((x) => x.correct).length).toBe(N - 1);
    for (const rec of records) {
      const t = rec.trajectory!;
      expect(t.dialect).toBe('pyvision');
      expect(rec.stop_reason).toBe('answer');
      const call = t.turns[0]!.call!;
      expect(call.name).toBe('python');
      // The code really ran: its printed text and one figure, stored in the workspace.
      expect((call.arguments as { stdout: string }).stdout).toMatch(/^size \d+ \d+\n$/);
      expect(call.produced).toHaveLength(1);
      await expect(fsp.stat(path.join(ws, 'media', call.produced[0]!.id))).resolves.toBeTruthy();
      expect(t.turns[0]!.observation).toContain('<interpreter>');
      const sb = rec.extra?.['sandbox'] as { isolation: string; limits: { wallSeconds: number }; runs: Array<{ wallMs: number }> };
      expect(sb.isolation).toBe('bwrap');
      expect(sb.limits.wallSeconds).toBe(20); // PV's timeout
      expect(sb.runs).toHaveLength(1);
    }
    const manifest = RunManifestSchema.parse(JSON.parse(await fsp.readFile(path.join(ws, 'runs', 'pv', 'manifest.json'), 'utf8')));
    expect(manifest.dialect).toBe('pyvision');
    expect(manifest.prompt).toBe('vistool_with_img_info_v2');
    expect(manifest.limits?.maxCalls).toBe(30);
    expect(manifest.decoding?.maxTokens).toBe(10000);
    expect((manifest.extra as { sandbox: { wallSeconds: number } }).sandbox.wallSeconds).toBe(20);
    expect(await leftovers()).toEqual([]);
  }, 240_000);

  it('PVRL stops at the reference max turns: 5 in a training-mode run, 30 in validation', async () => {
    const replay = await writeReplay(path.join(tmp, 'pvrl.jsonl'), () => Array.from({ length: 40 }, () => CODE_TURN));
    const train = await runCli(['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--dialect', 'pyvision-rl', '--mode', 'train', '--limit', '1', '--workspace', ws, '--run', 'pvrl-train', '--json', '--no-progress'], { env: { TMPDIR: sandboxTmp } });
    expect(train.code, train.stderr).toBe(0);
    const [t5] = await readRecords(path.join(ws, 'runs', 'pvrl-train'));
    expect(t5!.trajectory!.turns).toHaveLength(5);
    expect(t5!.stop_reason).toBe('max_calls');
    expect(t5!.trajectory!.dialect).toBe('pyvision-rl');
    const val = await runCli(['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--dialect', 'pyvision-rl', '--limit', '1', '--workspace', ws, '--run', 'pvrl-val', '--json', '--no-progress'], { env: { TMPDIR: sandboxTmp } });
    expect(val.code, val.stderr).toBe(0);
    const [t30] = await readRecords(path.join(ws, 'runs', 'pvrl-val'));
    // PVRL keeps at most 32 images in context: 1 question image + 31 figures; 30 turns come first.
    expect(t30!.trajectory!.turns).toHaveLength(30);
    expect(t30!.stop_reason).toBe('max_calls');
    expect(await leftovers()).toEqual([]);
  }, 300_000);

  it('refuses notool with the pyvision prompt, and an unknown dialect, before writing anything', async () => {
    const a = await runCli(['eval', '--model', 'replay:/nonexistent.jsonl', '--bench', 'loupe-synth', '--data', data, '--dialect', 'pyvision', '--prompt', 'notool', '--workspace', path.join(tmp, 'ws2')]);
    expect(a.code).not.toBe(0);
    expect(a.stderr).toMatch(/one prompt \(vistool_with_img_info_v2/);
    const b = await runCli(['eval', '--model', 'replay:/nonexistent.jsonl', '--bench', 'loupe-synth', '--data', data, '--dialect', 'pyvision; rm -rf /', '--workspace', path.join(tmp, 'ws2')]);
    expect(b.code).not.toBe(0);
    expect(b.stderr).toMatch(/--dialect .* is unknown/);
    await expect(fsp.stat(path.join(tmp, 'ws2', 'runs'))).rejects.toThrow();
  }, 60_000);
});

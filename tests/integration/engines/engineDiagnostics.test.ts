/**
 * The local engine's two diagnostics for the GPU work (models/reports/GPU-7B.md), on the committed tiny model with the
 * real onnxruntime: the `onLogits` hook hands over each step's next-token logits before sampling (greedy: the token is
 * their argmax), and LOUPE_ORT_PROFILE makes every session write an onnxruntime profile that
 * models/ort_profile_summary.py splits into prefill runs and decode steps.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { QwenVLRuntime, extraSessionOptions } from '../../../native/engine/qwenRuntime';
import { requirePython } from '../loupe-tiny/python';
import { greedy, parity, TINY_DIR } from './parityFixture';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-engine-diag-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Load the tiny model with one environment variable set for the load only. */
async function loadWith(name: string, value: string): Promise<QwenVLRuntime> {
  process.env[name] = value;
  try {
    return await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: false });
  } finally {
    delete process.env[name];
  }
}

/** Generate `maxTokens` greedy tokens, write every session's profile, dispose. */
async function generateAndEndProfiling(rt: QwenVLRuntime, maxTokens: number): Promise<void> {
  try {
    await rt.generate(greedy(parity.cases.single_image, { maxTokens }));
    for (const s of Object.values((rt as unknown as { model: { sessions: Record<string, { endProfiling(): void }> } }).model.sessions)) s.endProfiling();
  } finally {
    await rt.dispose();
  }
}

describe('local engine diagnostics', () => {
  it('onLogits: one row per generated token, the vocabulary wide, whose argmax is the greedy token', async () => {
    const rt = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: false });
    try {
      const c = parity.cases.single_image;
      const rows: Float32Array[] = [];
      const r = await rt.generate(greedy(c, { maxTokens: 6 }), { onLogits: (row) => rows.push(row.slice()) });
      expect(r.tokens).toEqual(c.generated.slice(0, 6));
      expect(rows.length).toBe(r.completionTokens);
      for (const [i, row] of rows.entries()) {
        expect(row.length).toBeGreaterThan(100);
        let best = 0;
        for (let j = 1; j < row.length; j++) if (row[j]! > row[best]!) best = j;
        expect(best).toBe(r.tokens![i]);
      }
    } finally {
      await rt.dispose();
    }
  });

  it('LOUPE_ORT_SESSION: its session options reach every session (profiling here); anything but a JSON object is a clear load error', async () => {
    await generateAndEndProfiling(await loadWith('LOUPE_ORT_SESSION', JSON.stringify({ enableProfiling: true, profileFilePrefix: path.join(tmp, 'sess') })), 2);
    expect(readdirSync(tmp).filter((f) => f.startsWith('sess_') && f.endsWith('.json')).length).toBeGreaterThanOrEqual(2);
    expect(extraSessionOptions(undefined)).toEqual({});
    expect(extraSessionOptions(' ')).toEqual({});
    expect(extraSessionOptions('{"enableMemPattern": false}')).toEqual({ enableMemPattern: false });
    expect(() => extraSessionOptions('{enableMemPattern: false}')).toThrow(/LOUPE_ORT_SESSION is not JSON/);
    expect(() => extraSessionOptions('[1]')).toThrow(/must be a JSON object/);
    // a misspelt option (onnxruntime would ignore it) and the device (the engine's to choose) are refused
    expect(() => extraSessionOptions('{"enableMemPatern": false}')).toThrow(/"enableMemPatern" is not an onnxruntime session option/);
    expect(() => extraSessionOptions('{"executionProviders": ["webgpu"]}')).toThrow(/executionProviders is chosen by the engine/);
    await expect(loadWith('LOUPE_ORT_SESSION', 'nope')).rejects.toThrow(/LOUPE_ORT_SESSION is not JSON/);
  });

  it('ort_profile_summary: a Loop node holds its body nodes, so the run\'s node time counts the body once (a made-up trace)', () => {
    const ev = (name: string, op: string, ts: number, dur: number) => ({ cat: 'Node', name: `${name}_kernel_time`, ts, dur, args: { op_name: op, provider: 'CPUExecutionProvider', input_type_shape: [{ float: [1, 1, 8] }] } });
    const trace = [
      { cat: 'Session', name: 'model_run', ts: 0, dur: 12_000, args: {} },
      ev('loop', 'Loop', 1_000, 10_000),
      ev('mm', 'MatMul', 2_000, 3_000),
      ev('gqa', 'GroupQueryAttention', 6_000, 4_000),
    ];
    const file = path.join(tmp, 'made-up.json');
    writeFileSync(file, JSON.stringify(trace));
    const r = spawnSync(requirePython(['json']), ['models/ort_profile_summary.py', file, '--per-run'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const run = (JSON.parse(r.stdout) as Array<{ runs_detail: Array<{ nodes: number; node_time_us: number; gap_us: number; top_ops_us: Array<{ op: string; us: number }> }> }>)[0]!.runs_detail[0]!;
    expect(run.nodes).toBe(3);
    expect(run.node_time_us).toBe(7_000);
    expect(run.gap_us).toBe(5_000);
    expect(run.top_ops_us[0]).toMatchObject({ op: 'Loop (CPU)', us: 10_000 });
    // Slow nodes: a run whose first GroupQueryAttention of a step takes 30 ms where the others take 50 µs (a cost paid
    // once per new shape, as the CUDA provider's profile showed) names that op, how many and how long; the first run,
    // with under four nodes of each op, has none.
    const steps = [0, 1].flatMap((step) => [0, 1, 2, 3, 4, 5].map((layer) => ev(`gqa${step}-${layer}`, 'GroupQueryAttention', 20_000 + step * 40_000 + layer * 100, layer === 0 && step === 1 ? 30_000 : 50)));
    const spiky = path.join(tmp, 'spiky.json');
    writeFileSync(spiky, JSON.stringify([...trace, { cat: 'Session', name: 'model_run', ts: 19_000, dur: 60_000, args: {} }, ...steps]));
    const out = path.join(tmp, 'spiky-summary.json');
    const s2 = spawnSync(requirePython(['json']), ['models/ort_profile_summary.py', spiky, '--per-run', '--out', out], { cwd: ROOT, encoding: 'utf8' });
    expect(s2.status, s2.stderr).toBe(0);
    const runs = (JSON.parse(s2.stdout) as Array<{ runs_detail: Array<{ slow_nodes: unknown[] }> }>)[0]!.runs_detail;
    expect(runs[0]!.slow_nodes).toEqual([]);
    expect(runs[1]!.slow_nodes).toEqual([{ op: 'GroupQueryAttention (CPU)', count: 1, of: 12, us: 30_000, median_us: 50, first_us: 50 }]);
    const b2 = spawnSync(requirePython(['json']), ['models/ort_profile_summary.py', '--brief', out], { cwd: ROOT, encoding: 'utf8' });
    expect(b2.stdout).toContain('run 1: seq None, 60.0 ms, 12 nodes');
    expect(b2.stdout).toMatch(/slow: GroupQueryAttention \(CPU\) 1 of 12 nodes 30.0 ms \(median 0.05 ms, first 0.[01] ms\)/);
    // a file that is not JSON, and JSON events without names: one line naming the file, not a traceback
    const broken = path.join(tmp, 'broken.json');
    writeFileSync(broken, '{not json');
    const nameless = path.join(tmp, 'nameless.json');
    writeFileSync(nameless, JSON.stringify([{ cat: 'Node' }]));
    for (const f of [broken, nameless]) {
      const bad = spawnSync(requirePython(['json']), ['models/ort_profile_summary.py', f, '--per-run'], { cwd: ROOT, encoding: 'utf8' });
      expect(bad.status).toBe(1);
      expect(bad.stderr.trim()).toBe(`${f}: ${bad.stderr.trim().slice(f.length + 2)}`);
      expect(bad.stderr).toMatch(/not an onnxruntime profile/);
      expect(bad.stderr).not.toMatch(/Traceback/);
    }
  });

  it('LOUPE_ORT_PROFILE: every session writes a profile; the summary finds the decode steps', async () => {
    await generateAndEndProfiling(await loadWith('LOUPE_ORT_PROFILE', path.join(tmp, 'ort')), 4);
    const files = readdirSync(tmp).filter((f) => f.startsWith('ort_') && f.endsWith('.json')).map((f) => path.join(tmp, f));
    expect(files.length).toBeGreaterThanOrEqual(2);
    const py = requirePython(['json']);
    const r = spawnSync(py, ['models/ort_profile_summary.py', ...files, '--top', '3'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as Array<{ decode_steps: number; other_runs: Array<{ seq_len: number | null }>; median_decode_step?: { nodes: number; by_provider_us: Record<string, number> } }>;
    const decoder = summary.find((s) => s.decode_steps > 0);
    // 4 new tokens: the prefill run, then 3 decode steps of one token each
    expect(decoder?.decode_steps).toBe(3);
    expect(decoder?.other_runs.some((o) => (o.seq_len ?? 0) > 1)).toBe(true);
    expect(decoder?.median_decode_step?.nodes).toBeGreaterThan(10);
    expect(Object.keys(decoder!.median_decode_step!.by_provider_us)).toContain('CPU');
    // --per-run: every run of the decoder (prefill, then 3 steps), each with its top ops; --brief: one line per run
    const out = path.join(tmp, 'per-run.json');
    const pr = spawnSync(py, ['models/ort_profile_summary.py', ...files, '--per-run', '--top', '3', '--out', out], { cwd: ROOT, encoding: 'utf8' });
    expect(pr.status, pr.stderr).toBe(0);
    const per = (JSON.parse(readFileSync(out, 'utf8')) as Array<{ decode_steps: number; runs_detail: Array<{ seq_len: number | null; nodes: number; top_ops_us: unknown[] }> }>).find((s) => s.decode_steps > 0)!;
    expect(per.runs_detail.map((r) => r.seq_len === 1)).toEqual([false, true, true, true]);
    for (const r of per.runs_detail) expect(r.top_ops_us.length).toBe(3);
    const br = spawnSync(py, ['models/ort_profile_summary.py', '--brief', out], { cwd: ROOT, encoding: 'utf8' });
    expect(br.status, br.stderr).toBe(0);
    expect(br.stdout).toMatch(/run 3: seq 1, [\d.]+ ms, \d+ nodes, gap [-\d.]+ ms; \w+ \(CPU\) [\d.]+ ms ×\d+/);
    // a summary without runs_detail, or not a summary at all: said, not a traceback
    const plain = spawnSync(py, ['models/ort_profile_summary.py', '--brief', files[0]!], { cwd: ROOT, encoding: 'utf8' });
    expect(plain.status).toBe(1);
    expect(plain.stderr).toMatch(/not a --per-run summary/);
  });
});

/** `loupe import` and `loupe synth` through commander, as the CLI runs them. */
import { Command } from 'commander';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { register as registerImport } from '../../../main/cli/commands/import';
import { register as registerSynth } from '../../../main/cli/commands/synth';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const tmp: string[] = [];
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

function program(): Command {
  const p = new Command().exitOverride();
  registerImport(p);
  registerSynth(p);
  return p;
}

async function capture(fn: () => Promise<unknown>): Promise<{ out: string; err: string }> {
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((c) => ((err += String(c)), true));
  try {
    await fn();
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
  return { out, err };
}

describe('loupe import', () => {
  it('imports into --workspace under --run and reports counts and bad lines', async () => {
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-cli-import-'));
    tmp.push(ws);
    const fixture = path.join(HERE, '../../fixtures/importers/pixel_reasoner/ckpt');
    const { out, err } = await capture(() => program().parseAsync(['node', 'loupe', 'import', '--from', 'pixel-reasoner', fixture, '--workspace', ws, '--run', 'pr eval'], { from: 'node' }));
    expect(out).toMatch(/read 8 record\(s\) from 2 file\(s\): 6 imported, 2 skipped \(2 error\(s\), 0 warning\(s\)\)/);
    expect(err).toContain('error: sample.eval_iter2_1.jsonl:2: qids: missing');
    const runs = await readdir(path.join(ws, 'runs'));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatch(/-pr-eval-/);
    const lines = (await readFile(path.join(ws, 'runs', runs[0]!, 'samples.jsonl'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(6);
    expect((await readdir(path.join(ws, 'media'))).filter((f) => f.endsWith('.jpg'))).toHaveLength(2);
  });

  it('rejects an unknown --from and writes nothing on --dry-run', async () => {
    await expect(capture(() => program().parseAsync(['node', 'loupe', 'import', '--from', 'nope', '.'], { from: 'node' }))).rejects.toThrow(/--from must be one of/);
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-cli-dry-'));
    tmp.push(ws);
    const fixture = path.join(HERE, '../../fixtures/importers/lmms_eval');
    const { out } = await capture(() => program().parseAsync(['node', 'loupe', 'import', '--from', 'lmms-eval', fixture, '--workspace', ws, '--dry-run'], { from: 'node' }));
    expect(out).toContain('50 imported');
    expect(await readdir(ws)).toEqual([]);
  });
});

describe('loupe synth', () => {
  it('writes a benchmark folder from --seed/--n/--kinds', { timeout: 180_000 }, async () => {
    const out = await mkdtemp(path.join(tmpdir(), 'loupe-cli-synth-'));
    tmp.push(out);
    const r = await capture(() => program().parseAsync(['node', 'loupe', 'synth', '--seed', '3', '--n', '2', '--kinds', 'box-dots', '--out', out, '--sft'], { from: 'node' }));
    expect(r.out).toContain('wrote 2 samples');
    const samples = (await readFile(path.join(out, 'samples.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(samples.map((s) => s.category)).toEqual(['box-dots', 'box-dots']);
    const sft = (await readFile(path.join(out, 'sft/trajectories.jsonl'), 'utf8')).trim().split('\n');
    expect(sft.length).toBeGreaterThanOrEqual(2);
    await expect(capture(() => program().parseAsync(['node', 'loupe', 'synth', '--out', out, '--kinds', 'bogus'], { from: 'node' }))).rejects.toThrow(/unknown kind "bogus"/);
  });
});

/** `loupe import` and `loupe synth` through commander, as the CLI runs them. */
import { Command } from 'commander';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { register as registerImport } from '../../../main/cli/commands/import';
import { register as registerSynth } from '../../../main/cli/commands/synth';
import { Workspace } from '../../../app/workspace';
import { register as registerRuns } from '../../../main/cli/commands/runs';
import { mkdir } from 'node:fs/promises';
import sharp from 'sharp';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const tmp: string[] = [];
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

function program(): Command {
  const p = new Command().exitOverride();
  registerImport(p);
  registerSynth(p);
  registerRuns(p);
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
    // 5 of the 6 samples: Pixel Reasoner's eval logs keep the crops they dumped, not the question images.
    expect(out).toMatch(/read 8 record\(s\) from 2 file\(s\): 6 imported, 2 skipped \(2 error\(s\), 5 warning\(s\)\)/);
    expect(err).toMatch(/image: image not in the file; attach a folder \(--images DIR\) \(and 4 more like it\)/);
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

const loupe = (...args: string[]) => capture(() => program().parseAsync(['node', 'loupe', ...args], { from: 'node' }));

describe('loupe import of outputs without images', () => {
  const de = path.join(HERE, '../../fixtures/importers/deepeyes');

  it('--images attaches the originals found by name; the rest are one grouped warning', async () => {
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-cli-images-'));
    tmp.push(ws);
    const imgs = path.join(ws, 'vstar-images');
    // Stand-ins for two V* images (the bench images are not in the repository), in V*'s own folders.
    for (const [cat, name] of [['direct_attributes', 'sa_79105.jpg'], ['relative_position', 'sa_31784.jpg']] as const) {
      await mkdir(path.join(imgs, cat), { recursive: true });
      await sharp({ create: { width: 2000, height: 1500, channels: 3, background: '#6a9' } }).jpeg().toFile(path.join(imgs, cat, name));
    }
    const { out, err } = await loupe('import', '--from', 'deepeyes', de, '--workspace', path.join(ws, 'w'), '--run', 'de v*', '--images', imgs);
    expect(out).toContain('read 191 record(s) from 2 file(s): 191 imported, 0 skipped (0 error(s), 189 warning(s))');
    expect(out).toContain('images attached to 2 of 191 sample(s)');
    expect(err.trim().split('\n')).toEqual([expect.stringMatching(/^warning: result_direct_attributes_tmp_acc\.jsonl:1: image: image not in the file; attach a folder \(not found under .*\) \(and 188 more like it\)$/)]);
    const runId = (await readdir(path.join(ws, 'w', 'runs'))).find((d) => !d.startsWith('.'))!;
    const rows = (await readFile(path.join(ws, 'w', 'runs', runId, 'samples.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    const s = rows.find((r) => r.qid === 'vstar-direct_attributes.sa_79105');
    expect(s.trajectory.originals[0]).toMatchObject({ width: 2000, height: 1500 });
    // Its one call [575, 868, 807, 941]: cropped as DeepEyes crops (no padding, no resize by the tool).
    const call = s.trajectory.turns[0].call;
    expect(call.cropBox).toEqual([575, 868, 807, 941]);
    expect(call.produced[0]).toMatchObject({ width: 232, height: 73 });
  });

  it('without --images every sample is a warning, and the count says so', async () => {
    const { out } = await loupe('import', '--from', 'deepeyes', de, '--dry-run');
    expect(out).toContain('(0 error(s), 191 warning(s))');
  });

  it('the wrong --from names the right format instead of a missing field per record', async () => {
    const r = loupe('import', '--from', 'pixel-reasoner', de, '--dry-run');
    await expect(r).rejects.toThrow(/looks like deepeyes output: try --from deepeyes/);
    await expect(loupe('import', '--from', 'deepeyes', path.join(HERE, '../../fixtures/importers/lmms_eval'), '--dry-run')).rejects.toThrow(/try --from lmms-eval/);
  });
});

describe('loupe runs', () => {
  it('rename, tag, delete to the trash, restore, empty the trash; names stay unique', async () => {
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-cli-runs-'));
    tmp.push(ws);
    const fixture = path.join(HERE, '../../fixtures/importers/lmms_eval');
    await loupe('import', '--from', 'lmms-eval', fixture, '--workspace', ws, '--run', 'sqa');
    const second = await loupe('import', '--from', 'lmms-eval', fixture, '--workspace', ws, '--run', 'sqa');
    expect(second.out).toContain('"sqa (2)"');
    const list = async (...extra: string[]) => (await loupe('runs', 'list', '--workspace', ws, ...extra)).out.trim().split('\n');
    const ids = (await list()).map((l) => l.split('\t')[0]!);
    expect(ids).toHaveLength(2);
    const [a, b] = ids as [string, string];
    await expect(loupe('runs', 'rename', a, 'sqa', '--workspace', ws)).rejects.toThrow(/already named "sqa"/);
    expect((await loupe('runs', 'rename', a, 'scienceqa llava', '--workspace', ws)).out).toContain('now named "scienceqa llava"');
    expect((await loupe('runs', 'tag', a, 'baseline', 'llava', '--workspace', ws)).out).toContain('tags baseline, llava');
    expect((await loupe('runs', 'tag', a, '--remove', 'llava', '--workspace', ws)).out).toContain('tags baseline');
    expect((await list()).find((l) => l.startsWith(a))).toContain('scienceqa llava\t[baseline]');
    await loupe('runs', 'rm', b, '--workspace', ws);
    expect(await list()).toHaveLength(1);
    expect((await list('--trash'))[0]).toMatch(new RegExp(`^${b}\tsqa`));
    await loupe('runs', 'restore', b, '--workspace', ws);
    expect(await list()).toHaveLength(2);
    await loupe('runs', 'rm', b, '--workspace', ws);
    expect((await loupe('runs', 'empty-trash', '--workspace', ws)).out).toContain('deleted 1 run(s)');
    expect(await list('--trash')).toEqual(['(the trash is empty)']);
    await expect(loupe('runs', 'restore', b, '--workspace', ws)).rejects.toThrow(/not in the trash/);
    // `delete` is `rm`: to the trash.
    await loupe('runs', 'delete', a, '--workspace', ws);
    expect((await list('--trash'))[0]).toMatch(new RegExp(`^${a}\tscienceqa llava`));
  });

  it('lists the Demo scratch space and saves a question from it as a run', async () => {
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-cli-demo-'));
    tmp.push(ws);
    const w = await new Workspace(ws).init();
    await w.demo.createRun({ id: 'q-sign', name: 'demo What is on the sign?', kind: 'demo', model: { id: 'loupe-tiny' }, engine: 'local', dialect: 'pixel-reasoner', prompt: 'vcot' });
    expect((await loupe('runs', 'list', '--workspace', ws)).out.trim()).toBe('(no runs)');
    expect((await loupe('runs', 'list', '--demo', '--workspace', ws)).out).toContain('q-sign\tdemo What is on the sign?');
    await expect(loupe('runs', 'save', '../x', '--workspace', ws)).rejects.toThrow(/not a valid run id/);
    expect((await loupe('runs', 'save', 'q-sign', '--name', 'sign question', '--workspace', ws)).out).toContain('saved as "sign question"');
    expect((await loupe('runs', 'list', '--workspace', ws)).out).toContain('q-sign\tsign question');
    expect((await loupe('runs', 'list', '--demo', '--workspace', ws)).out.trim()).toBe('(no unsaved Demo questions)');
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

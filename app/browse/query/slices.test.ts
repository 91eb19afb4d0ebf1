import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SliceError, SliceStore, SLICES_FILE } from './index';

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), 'loupe-slices-'));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

describe('SliceStore', () => {
  it('saves, lists, updates, renames and removes slices in <workspace>/slices.json', async () => {
    const s = new SliceStore(ws);
    expect(await s.list()).toEqual([]);
    await s.save({ name: 'needed ≥3 zooms', query: 'calls >= 3' });
    await s.save({ name: 'wrong vstar', query: 'bench = vstar and not correct', folder: 'vstar' });
    const first = (await s.get('needed ≥3 zooms'))!;
    await s.save({ name: 'needed ≥3 zooms', query: 'calls >= 3 and not correct' });
    const updated = (await s.get('needed ≥3 zooms'))!;
    expect(updated.query).toBe('calls >= 3 and not correct');
    expect(updated.createdAt).toBe(first.createdAt);
    const onDisk = JSON.parse(await readFile(join(ws, SLICES_FILE), 'utf8')) as { version: number; slices: Array<{ name: string }> };
    expect(onDisk.version).toBe(1);
    expect(onDisk.slices.map((x) => x.name)).toEqual(['needed ≥3 zooms', 'wrong vstar']);
    await s.rename('wrong vstar', 'vstar failures');
    expect((await s.compile('vstar failures')).matches({ bench: 'vstar', correct: false })).toBe(true);
    await expect(s.rename('vstar failures', 'needed ≥3 zooms')).rejects.toThrow(/already exists/);
    expect(await s.remove('vstar failures')).toBe(true);
    expect(await s.remove('vstar failures')).toBe(false);
    expect((await new SliceStore(ws).list()).map((x) => x.name)).toEqual(['needed ≥3 zooms']);
  });

  it('never stores a query that does not parse, and says where it breaks', async () => {
    const s = new SliceStore(ws);
    const err = await s.save({ name: 'bad', query: 'calls > lots' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SliceError);
    expect((err as Error).message).toContain("slice 'bad': 'calls' needs a number, got 'lots' (column 9)");
    expect((err as Error).message).toContain('^^^^');
    expect(await s.list()).toEqual([]);
    await expect(s.save({ name: '  ', query: '' })).rejects.toThrow(/needs a name/);
  });

  it('refuses overwrite when asked and reports a corrupt file by name', async () => {
    const s = new SliceStore(ws);
    await s.save({ name: 'a', query: '' });
    await expect(s.save({ name: 'a', query: 'correct' }, { overwrite: false })).rejects.toThrow(/already exists/);
    await writeFile(join(ws, SLICES_FILE), '{"version":1,"slices":[{"name":"x"}]}');
    await expect(s.list()).rejects.toThrow(/slices\.json: slices\.0\.query/);
  });
});

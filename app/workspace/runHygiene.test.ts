/** Run hygiene on a real workspace folder: unique names, tags, the trash (restore, empty), rewriting samples. */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunStore, TRASH_DIR } from './runStore';
import type { SampleRecord } from '../contract/trajectory';

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const manifest = (name: string) => ({ name, kind: 'import' as const, model: { id: 'm' }, engine: 'import', dialect: 'deepeyes', prompt: 'p' });
const sample = (qid: string): SampleRecord => ({ qid, bench: 'vstar', question: 'q', answer: 'A', prediction: 'A', score: 1, correct: true, stop_reason: 'answer', calls: 0, tool_errors: 0 });

async function store(): Promise<RunStore> {
  dir = await mkdtemp(path.join(tmpdir(), 'loupe-hygiene-'));
  return new RunStore(path.join(dir, 'runs'));
}

describe('RunStore hygiene', () => {
  it('names stay unique: uniqueName numbers a taken name, rename refuses one', async () => {
    const s = await store();
    const a = await s.createRun(manifest('v*'));
    await s.createRun(manifest(await s.uniqueName('v*')));
    expect(await s.uniqueName('v*')).toBe('v* (3)');
    const b = (await s.listRuns()).find((r) => r.id !== a.id)!;
    expect(b.manifest?.name).toBe('v* (2)');
    await expect(s.renameRun(b.id, 'v*')).rejects.toThrow(/already named "v\*"/);
    await expect(s.renameRun(b.id, '  ')).rejects.toThrow(/cannot be empty/);
    expect((await s.renameRun(b.id, ' deepeyes v* ')).name).toBe('deepeyes v*');
    // Renaming a run to its own name is not a clash.
    expect((await s.renameRun(b.id, 'deepeyes v*')).name).toBe('deepeyes v*');
  });

  it('tags are trimmed and de-duplicated; an empty list removes the field', async () => {
    const s = await store();
    const h = await s.createRun(manifest('x'));
    expect((await s.setTags(h.id, [' a', 'b', 'a', ''])).tags).toEqual(['a', 'b']);
    expect((await s.readManifest(h.id)).tags).toEqual(['a', 'b']);
    expect('tags' in (await s.setTags(h.id, []))).toBe(false);
  });

  it('delete moves to runs/.trash (hidden from listings), restore brings it back, empty deletes for good', async () => {
    const s = await store();
    const h = await s.createRun(manifest('x'));
    await h.appendSample(sample('q1'));
    await h.close();
    await s.trashRun(h.id);
    expect(await s.listRuns()).toEqual([]);
    expect((await s.listTrash()).map((r) => r.id)).toEqual([h.id]);
    expect(existsSync(path.join(s.runsDir, TRASH_DIR, h.id, 'samples.jsonl'))).toBe(true);
    await s.restoreRun(h.id);
    expect((await s.readSamples(h.id)).records.map((r) => r.qid)).toEqual(['q1']);
    await expect(s.restoreRun(h.id)).rejects.toThrow(/not in the trash/);
    await s.trashRun(h.id);
    expect(await s.emptyTrash()).toBe(1);
    expect(await readdir(path.join(s.runsDir, TRASH_DIR))).toEqual([]);
    await expect(s.trashRun(h.id)).rejects.toThrow(/no such run/);
    await expect(s.trashRun('../x')).rejects.toThrow(/not a valid run id/);
  });

  it('restore refuses to overwrite a run that took the id again', async () => {
    const s = await store();
    const h = await s.createRun({ ...manifest('x'), id: 'fixed-id' });
    await s.trashRun(h.id);
    await s.createRun({ ...manifest('y'), id: 'fixed-id' });
    await expect(s.restoreRun('fixed-id')).rejects.toThrow(/exists; rename or delete it first/);
  });

  it('replaceSamples rewrites all records or, on an invalid one, nothing', async () => {
    const s = await store();
    const h = await s.createRun(manifest('x'));
    await h.appendSample(sample('q1'));
    await h.close();
    await s.replaceSamples(h.id, [sample('q1'), sample('q2')]);
    expect((await s.readSamples(h.id)).records.map((r) => r.qid)).toEqual(['q1', 'q2']);
    await expect(s.replaceSamples(h.id, [sample('q3'), { ...sample('q4'), score: 'x' } as unknown as SampleRecord])).rejects.toThrow(/sample 2 \(q4\)/);
    expect((await s.readSamples(h.id)).records.map((r) => r.qid)).toEqual(['q1', 'q2']);
  });
});

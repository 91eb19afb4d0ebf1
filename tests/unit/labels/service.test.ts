import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { foldLabels, LabelService, LabelStore, parseCsv, sampleKey } from '../../../app/labels';
import { SampleIndex } from '../../../app/browse/query';
import { generateSamples } from '../../../scripts/gen-large-run';

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), 'loupe-lsvc-'));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

const t1 = { run: 'r', qid: 'q1' };

describe('LabelService', () => {
  it('toggles, clears and keeps the fold equal to a fresh fold of the files', async () => {
    const s = new LabelService(ws);
    await s.load();
    await s.toggle('alice', t1, 'wrong_region');
    await s.toggle('alice', t1, 'no_zoom');
    await s.toggle('alice', t1, 'wrong_region'); // off again
    await s.add('alice', { ...t1, step: 1 }, 'tool_format_error', 'bad JSON');
    await s.toggle('bob', t1, 'no_zoom');
    expect(s.labelsOn(t1).get('alice')!.map((c) => c.label)).toEqual(['no_zoom']);
    expect(s.labelsOn({ ...t1, step: 1 }).get('alice')![0]!.note).toBe('bad JSON');
    const fresh = foldLabels(await new LabelStore(ws).readAll());
    expect(fresh).toEqual(s.fold);
    await s.clear('alice', t1);
    expect(s.labelsOn(t1).has('alice')).toBe(false);
    expect(s.bySample().get(sampleKey('r', 'q1'))).toEqual(['no_zoom', 'tool_format_error']);
  });

  it('undo appends the inverse and restores removed labels with their note', async () => {
    const s = new LabelService(ws);
    await s.load();
    await s.add('alice', t1, 'no_zoom', 'sign too small');
    await s.remove('alice', t1, 'no_zoom');
    expect(s.labelsOn(t1).get('alice')).toBeUndefined();
    const inv = await s.undo('alice');
    expect(inv).toMatchObject({ op: 'add', label: 'no_zoom', note: 'sign too small' });
    expect(s.labelsOn(t1).get('alice')![0]!.note).toBe('sign too small');
    await s.undo('alice'); // undo the original add
    expect(s.labelsOn(t1).get('alice')).toBeUndefined();
    expect(await s.undo('alice')).toBeUndefined();
    expect((await new LabelStore(ws).read('alice')).events.map((e) => e.op)).toEqual(['add', 'remove', 'add', 'remove']);
  });

  it('reports torn tails and bad lines on load without losing good events', async () => {
    const s = new LabelService(ws);
    await s.load();
    await s.add('alice', t1, 'no_zoom');
    await appendFile(join(ws, 'labels', 'alice.jsonl'), 'not json\n{"v":1,"who":"alice"');
    const again = new LabelService(ws);
    await again.load();
    expect(again.issues.map((i) => i.line)).toEqual([2, 3]);
    expect(again.issues[1]!.message).toContain('torn last line');
    expect(again.labelsOn(t1).get('alice')!.map((c) => c.label)).toEqual(['no_zoom']);
  });

  it('feeds labels to the sample index so queries can use them, and exports', async () => {
    const recs = [...generateSamples({ n: 50, seed: 5 })];
    const idx = SampleIndex.from(recs, 'r');
    const s = new LabelService(ws);
    await s.load();
    await s.add('alice', { run: 'r', qid: recs[3]!.qid }, 'wrong_region');
    await s.add('bob', { run: 'r', qid: recs[7]!.qid, step: 0 }, 'wrong_region');
    await s.add('bob', { run: 'other', qid: 'x' }, 'no_zoom');
    expect(idx.applyLabels(s.bySample())).toBe(1);
    expect(Array.from(idx.filter('label = wrong_region'))).toEqual([3, 7]);
    const csv = parseCsv(s.exportCurrent('csv'));
    expect(csv).toHaveLength(4);
    expect(s.exportEvents('jsonl').trimEnd().split('\n')).toHaveLength(3);
    const agr = s.agreement({ annotators: ['alice', 'bob'] });
    expect(agr.units).toBe(0);
    expect(agr.partial).toBe(3);
  });
});

import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunManifestSchema, SampleRecordSchema } from '../../../app/contract/trajectory';
import { agreementReport, foldLabels, LabelStore } from '../../../app/labels';
import { accuracyTable, toolUse } from '../../../app/sweeps/stats';
import { RunStore } from '../../../app/workspace/runStore';
import { generateSamples, writeLargeRun } from '../../../scripts/gen-large-run';

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), 'loupe-gen-'));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

describe('gen-large-run', () => {
  it('writes a manifest and samples that validate against the contract, deterministically', async () => {
    const a = await writeLargeRun(join(ws, 'a'), { n: 400, seed: 3, media: false });
    const b = await writeLargeRun(join(ws, 'b'), { n: 400, seed: 3, media: false });
    const c = await writeLargeRun(join(ws, 'c'), { n: 400, seed: 4, media: false });
    expect(a.runDir.endsWith(join('runs', 'synthetic-400-s3'))).toBe(true);
    const text = await readFile(join(a.runDir, 'samples.jsonl'), 'utf8');
    expect(text).toBe(await readFile(join(b.runDir, 'samples.jsonl'), 'utf8'));
    expect(text).not.toBe(await readFile(join(c.runDir, 'samples.jsonl'), 'utf8'));
    const manifest = RunManifestSchema.parse(JSON.parse(await readFile(join(a.runDir, 'manifest.json'), 'utf8')));
    expect(manifest.id).toBe('synthetic-400-s3');
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(400);
    const recs = lines.map((l) => SampleRecordSchema.parse(JSON.parse(l)));
    expect(new Set(recs.map((r) => r.qid)).size).toBe(400);
    for (const r of recs) {
      expect(r.calls).toBe(r.trajectory!.turns.filter((t) => t.call).length);
      expect(r.tool_errors).toBe(r.trajectory!.turns.filter((t) => t.call?.error).length);
      expect(r.score).toBe(r.correct ? 1 : 0);
    }
    await expect(writeLargeRun(join(ws, 'a'), { n: 400, seed: 3, media: false })).rejects.toThrow(/already has samples\.jsonl; pass --force/);
    // the workspace's own RunStore lists and reads it without complaint
    const store = new RunStore(join(ws, 'a', 'runs'));
    const listed = await store.listRuns();
    expect(listed.map((r) => [r.id, r.error ?? null])).toEqual([['synthetic-400-s3', null]]);
    const read = await store.readSamples('synthetic-400-s3');
    expect(read.issues).toEqual([]);
    expect(read.records).toHaveLength(400);
  });

  it('looks like a real run: several benches, tool use between 0 and 1, a mix of stop reasons', () => {
    const recs = [...generateSamples({ n: 5000, seed: 1 })];
    const t = toolUse(recs);
    expect(t.rapr).toBeGreaterThan(0.3);
    expect(t.rapr).toBeLessThan(0.9);
    expect(t.toolErrorRate).toBeGreaterThan(0);
    expect(Object.keys(t.stopReasons).sort()).toEqual(['answer', 'engine_error', 'length', 'max_calls']);
    const benches = accuracyTable(recs, ['bench']);
    expect(benches.map((g) => g.key.bench)).toEqual(['hrbench', 'infovqa', 'mvbench', 'tallyqa', 'vsibench', 'vstar']);
    for (const g of benches) {
      expect(g.accuracy).toBeGreaterThan(0.2);
      expect(g.accuracy).toBeLessThan(0.95);
    }
    expect(recs.some((r) => r.trajectory?.isVideo && r.trajectory.turns.some((x) => x.call?.name === 'select_frames'))).toBe(true);
  });

  it('writes real content-addressed media and label events that load', async () => {
    const res = await writeLargeRun(ws, { n: 300, seed: 2, labels: true });
    const media = await readdir(join(ws, 'media'));
    expect(media.length).toBe(36);
    for (const name of media.slice(0, 4)) {
      const buf = await readFile(join(ws, 'media', name));
      expect(`${createHash('sha256').update(buf).digest('hex')}.png`).toBe(name);
      expect((await sharp(buf).metadata()).format).toBe('png');
    }
    const recs = (await readFile(join(res.runDir, 'samples.jsonl'), 'utf8')).trimEnd().split('\n').map((l) => SampleRecordSchema.parse(JSON.parse(l)));
    const referenced = new Set(recs.flatMap((r) => [...r.trajectory!.media, ...r.trajectory!.turns.flatMap((t) => t.call?.produced ?? [])].map((m) => m.id)));
    for (const id of referenced) expect(media).toContain(id);
    const store = new LabelStore(ws);
    const all = await store.readAll();
    expect(all.map((r) => r.annotator)).toEqual(['annotator-a', 'annotator-b']);
    expect(all.every((r) => r.issues.length === 0 && !r.tornTail)).toBe(true);
    expect(all[0]!.events.length + all[1]!.events.length).toBe(res.labelEvents);
    const report = agreementReport(foldLabels(all), { annotators: ['annotator-a', 'annotator-b'] });
    expect(report.units).toBeGreaterThan(0);
    expect(report.primary.kappa).toBeGreaterThan(0.3);
  });
});

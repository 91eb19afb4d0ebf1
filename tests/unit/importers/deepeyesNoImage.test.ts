/**
 * A real DeepEyes V* output without `image` keys (tests/fixtures/importers/deepeyes_noimage, the authors'
 * branch): all 191 records import, accuracy equals the eval's own summary.txt, and with a V* annotation
 * folder the originals are found by question and option set, the samples taking the V* adapter's qids.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachFolder, ImageFolder, importRun, missingImages, type ImportedRun } from '../../../app/importers';
import { Workspace } from '../../../app/workspace';
import { createImageOps } from '../../../native/image';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SRC = path.join(HERE, '../../fixtures/importers/deepeyes_noimage');
const tmp: string[] = [];
let dir = '';
let run: ImportedRun;
const raw: Record<string, Array<{ question: string; answer: string; pred_output: Array<{ role: string; content: unknown }> }>> = {};

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'loupe-de-noimg-'));
  tmp.push(dir);
  for (const cat of ['direct_attributes', 'relative_position']) {
    const text = gunzipSync(await readFile(path.join(SRC, `result_${cat}_tmp_acc.jsonl.gz`))).toString('utf8');
    await writeFile(path.join(dir, `result_${cat}_tmp_acc.jsonl`), text);
    raw[cat] = text.trim().split('\n').map((l) => JSON.parse(l));
  }
  run = await importRun('deepeyes', dir);
});
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

describe('DeepEyes V* output without image keys (real files)', () => {
  it('imports all 191 records; accuracy equals summary.txt (88.70 %, 82.89 %, 86.39 %)', async () => {
    expect(run.stats).toEqual({ files: 2, records: 191, imported: 191, skipped: 0 });
    expect(run.issues).toEqual([]);
    expect(missingImages(run.samples)).toHaveLength(191);
    const summary = await readFile(path.join(SRC, 'summary.txt'), 'utf8');
    const pct = (re: RegExp) => Number(re.exec(summary)![1]).toFixed(2);
    const acc = (cat?: string) => {
      const xs = run.samples.filter((s) => !cat || s.category === cat);
      return ((100 * xs.reduce((a, s) => a + s.score, 0)) / xs.length).toFixed(2);
    };
    expect(acc('direct_attributes')).toBe(pct(/direct_attributes: ([\d.]+)%/));
    expect(acc('relative_position')).toBe(pct(/relative_position: ([\d.]+)%/));
    expect(acc()).toBe(pct(/Overall Accuracy: ([\d.]+)%/));
  });

  it('a V* annotation folder gives the originals by question and option set, and the V* qids', async () => {
    // A V* folder in its raw layout (annotation + image per question) for two of the questions.
    const vstar = path.join(dir, 'vstar_bench');
    const picks: string[] = [];
    for (const [cat, i] of [['direct_attributes', 0], ['relative_position', 3]] as const) {
      const r = raw[cat]![i]!;
      const user = r.pred_output.find((m) => m.role === 'user')!.content as Array<{ type: string; text?: string }>;
      const text = user.find((p) => p.type === 'text')!.text!;
      const options = [...text.matchAll(/^[A-D]\. (.*)$/gm)].map((m) => m[1]!);
      const stem = `sa_test${i}`;
      await mkdir(path.join(vstar, cat), { recursive: true });
      await writeFile(path.join(vstar, cat, `${stem}.json`), JSON.stringify({ target_object: ['x'], bbox: [[10, 10, 50, 50]], question: r.question, options }));
      await sharp({ create: { width: 900, height: 700, channels: 3, background: '#345' } }).jpeg().toFile(path.join(vstar, cat, `${stem}.jpg`));
      picks.push(`vstar-${cat}.${stem}`);
    }
    const ws = await new Workspace(path.join(dir, 'ws')).init();
    const samples = structuredClone(run.samples);
    const res = await attachFolder(samples, await ImageFolder.scan(vstar), createImageOps(ws.media, { mode: 'inline' }));
    expect(res.attached).toBe(2);
    expect(res.missing).toHaveLength(189);
    const attached = samples.filter((s) => s.trajectory!.originals.length > 0);
    expect(attached.map((s) => s.qid).sort()).toEqual(picks.sort());
    expect(attached.map((s) => (s.extra as Record<string, unknown>).qidInFile).sort()).toEqual(['vstar-direct_attributes.line1', 'vstar-relative_position.line4']);
    for (const s of attached) expect(s.trajectory!.originals[0]).toMatchObject({ width: 900, height: 700 });
  });
});

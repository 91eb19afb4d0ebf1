/**
 * Pixel Reasoner importer on fixtures built from the documented output format (no real file exists; see
 * tests/fixtures/importers/README.md): eval logs of two ranks, metrics, conv.json dumps and crop JPEGs.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatIssue, importRun, workspaceWriter, type ImportedRun } from '../../../app/importers';
import { PR_GUIDELINES } from '../../../app/protocol/prompts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const CKPT = path.join(HERE, '../../fixtures/importers/pixel_reasoner/ckpt');
let run: ImportedRun;
const tmp: string[] = [];
beforeAll(async () => {
  run = await importRun('pixel-reasoner', CKPT);
});
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});
const byQid = (q: string) => {
  const s = run.samples.find((x) => x.qid === q);
  if (!s) throw new Error(`no ${q}`);
  return s;
};

describe('Pixel Reasoner importer', () => {
  it('reads every rank of the latest iteration; bad lines are named and skipped', () => {
    expect(run.manifest.extra).toMatchObject({ iter: 2, files: ['sample.eval_iter2_0.jsonl', 'sample.eval_iter2_1.jsonl'] });
    expect(run.stats).toEqual({ files: 2, records: 8, imported: 6, skipped: 2 });
    expect(run.issues.map(formatIssue)).toEqual([
      'error: sample.eval_iter2_1.jsonl:2: qids: missing (expected the question id)',
      expect.stringMatching(/^error: sample\.eval_iter2_1\.jsonl:4: not valid JSON .*the last line looks cut off$/),
    ]);
    expect(run.samples.map((s) => s.qid)).toEqual(['vstar-12', 'vstar-40', 'vstar-41', 'infovqa-7', 'mvbench-3', 'tallyqa-5']);
  });

  it('takes the benchmark from the qid prefix and the question from the prompt without the guideline', () => {
    const s = byQid('vstar-40');
    expect(s.bench).toBe('vstar');
    expect(s.question).toBe('What does the small sign above the door say?\n(A) OPEN\n(B) CLOSED\n(C) EXIT\n(D) SALE');
    expect(s.trajectory?.userText).toBe(`${s.question}\n\n${PR_GUIDELINES.vcot}`);
    expect(s.trajectory?.prompt).toBe('vcot');
    expect(s.trajectory?.system?.startsWith('You are a helpful assistant.\n\n# Tools')).toBe(true);
    expect(run.manifest.model).toEqual({ id: 'pixelreasoner-7b', path: '/ckpts/pixelreasoner-7b' });
  });

  it('splits solutions into turns, parses the calls and attaches the dumped crops', async () => {
    const s = byQid('vstar-40');
    const turns = s.trajectory!.turns;
    expect(turns).toHaveLength(2);
    expect(turns[0]!.call).toMatchObject({ name: 'crop_image_normalized', bboxRaw: [0.62, 0.18, 0.78, 0.3], bboxMode: 'normalized', targetIndex: 0 });
    expect(turns[0]!.observation).toBe('\nHere is the cropped image (Image Size: 112x84):');
    const file = path.join(CKPT, 'logs/dumps_iter2/vstar-40/iter0.jpg');
    const bytes = await readFile(file);
    const meta = await sharp(bytes).metadata();
    expect(turns[0]!.call!.produced).toEqual([
      { id: `${createHash('sha256').update(bytes).digest('hex')}.jpg`, width: meta.width, height: meta.height, mime: 'image/jpeg' },
    ]);
    expect(turns[1]!.call).toBeUndefined();
    expect(s.extracted).toBe('A');
    expect(s.correct).toBe(true);
    expect(s.stop_reason).toBe('answer');
    expect((s.extra as Record<string, unknown>).originalImages).toEqual(['/data/vstar/direct_attributes/sa_1011.jpg']);
  });

  it('records execution errors and the crop of the later turn', () => {
    const s = byQid('vstar-41');
    expect(s.calls).toBe(2);
    expect(s.tool_errors).toBe(1);
    const [t0, t1] = s.trajectory!.turns;
    expect(t0!.call!.error).toBe('Cropped image is too small: 20x24');
    expect(t0!.call!.produced).toEqual([]);
    expect(t1!.call!.produced).toHaveLength(1);
    expect(s.correct).toBe(false);
  });

  it('a forced finish after four calls is max_calls; acc −1 is kept as unparsed', () => {
    const s = byQid('infovqa-7');
    expect(s.calls).toBe(4);
    expect(s.stop_reason).toBe('max_calls');
    expect(s.scores).toEqual({ acc: -1 });
    expect(s.score).toBe(0);
    expect((s.extra as Record<string, unknown>).unparsed).toBe(true);
  });

  it('video: select_frames is parsed into frame indices', () => {
    const s = byQid('mvbench-3');
    expect(s.trajectory?.isVideo).toBe(true);
    expect(s.trajectory!.turns[0]!.call).toMatchObject({ name: 'select_frames', frameIndices: [4, 5, 6] });
    expect(byQid('tallyqa-5').answer).toEqual(['3', 'three']);
  });

  it('--iter picks an older iteration; a single log file works too', async () => {
    const old = await importRun('pixel-reasoner', CKPT, { iter: 1 });
    expect(old.samples.map((s) => [s.qid, s.correct])).toEqual([['vstar-12', false]]);
    await expect(importRun('pixel-reasoner', CKPT, { iter: 7 })).rejects.toThrow(/no eval logs for iteration 7 \(found 1, 2\)/);
    const one = await importRun('pixel-reasoner', path.join(CKPT, 'logs/sample.eval_iter2_0.jsonl'));
    expect(one.samples).toHaveLength(4);
  });

  it('stores the crops in the workspace media folder', async () => {
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-import-pr-'));
    tmp.push(ws);
    await workspaceWriter(ws).write(run);
    for (const m of run.media) expect(Buffer.compare(await readFile(path.join(ws, 'media', m.ref.id)), await readFile(m.path))).toBe(0);
    expect(run.media).toHaveLength(2);
  });
});

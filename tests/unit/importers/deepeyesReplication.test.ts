/**
 * DeepEyes V* outputs as the authors' eval writes them (`result_{test_type}_{model_name}[_acc].jsonl`,
 * real files of a replication, see tests/fixtures/importers/deepeyes_replication/SOURCE): counts and
 * accuracy against the eval's own final_acc.json, bench and categories as Loupe's V* adapter gives them,
 * records without `image`, and images attached from a folder (boxes, padded boxes and crops recomputed).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachFolder, attachRunImages, ImageFolder, importRun, missingImages, workspaceWriter, type ImportedRun } from '../../../app/importers';
import { parseDeepEyesFileName } from '../../../app/importers/deepeyes';
import { vstarAdapter } from '../../../app/bench/adapters/vstar';
import { deepEyesCropGeometry } from '../../../app/tools/crop';
import { Workspace } from '../../../app/workspace';
import type { RunManifest } from '../../../app/contract/trajectory';
import { createImageOps } from '../../../native/image';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SRC = path.join(HERE, '../../fixtures/importers/deepeyes_replication/deepeyes');
const NAMES = ['result_direct_attributes_deepeyes', 'result_direct_attributes_deepeyes_acc', 'result_relative_position_deepeyes', 'result_relative_position_deepeyes_acc'];

const tmp: string[] = [];
let dir: string; // <tmp>/deepeyes/ as the eval writes it: <save_path>/<model_name>/
let run: ImportedRun;
/** The manifest as stored (NewRunManifest's Omit over a passthrough type loses the field types). */
let manifest: RunManifest;
const raw: Record<string, Array<Record<string, unknown>>> = {};

beforeAll(async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'loupe-de-repl-'));
  tmp.push(root);
  dir = path.join(root, 'deepeyes');
  await mkdir(dir);
  for (const n of NAMES) {
    const text = gunzipSync(await readFile(path.join(SRC, `${n}.jsonl.gz`))).toString('utf8');
    await writeFile(path.join(dir, `${n}.jsonl`), text);
    raw[n] = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  }
  run = await importRun('deepeyes', dir);
  manifest = run.manifest as unknown as RunManifest;
});
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

describe('DeepEyes file names', () => {
  it('splits test type, model name and judging off the name', () => {
    expect(parseDeepEyesFileName('/x/deepeyes/result_direct_attributes_deepeyes.jsonl')).toEqual({ testType: 'direct_attributes', model: 'deepeyes', judged: false });
    expect(parseDeepEyesFileName('/x/m/result_relative_position_qwen2.5_vl_7b_acc.jsonl')).toEqual({ testType: 'relative_position', model: 'qwen2.5_vl_7b', judged: true });
    expect(parseDeepEyesFileName('/x/y/result_hr_bench_8k_hrbench_bs256_step56_acc.jsonl')).toEqual({ testType: 'hr_bench_8k', model: 'hrbench_bs256_step56', judged: true });
    expect(parseDeepEyesFileName('/x/y/result_direct_attributes_tmp_acc.jsonl')).toEqual({ testType: 'direct_attributes', judged: true });
    expect(parseDeepEyesFileName('/x/y/result_direct_attributes.jsonl')).toEqual({ testType: 'direct_attributes', judged: false });
    // An unknown test type: the folder (= --model_name) is the suffix.
    expect(parseDeepEyesFileName('/x/my-model/result_pope_adv_my-model.jsonl')).toEqual({ testType: 'pope_adv', model: 'my-model', judged: false });
  });
});

describe('DeepEyes replication outputs (real files)', () => {
  it('imports the judged files of the folder: 191 samples, bench V*, the model from the file names', () => {
    expect(run.stats).toEqual({ files: 2, records: 191, imported: 191, skipped: 0 });
    expect(run.issues).toEqual([]);
    expect(manifest.bench?.id).toBe('vstar');
    expect(manifest.model.id).toBe('deepeyes');
    expect(manifest.extra?.files).toEqual(['result_direct_attributes_deepeyes_acc.jsonl', 'result_relative_position_deepeyes_acc.jsonl']);
    expect(new Set(run.samples.map((s) => s.bench))).toEqual(new Set(['vstar']));
    expect(run.samples.filter((s) => s.category === 'direct_attributes')).toHaveLength(115);
    expect(run.samples.filter((s) => s.category === 'relative_position')).toHaveLength(76);
  });

  it('accuracy equals the eval\'s final_acc.json per category and overall', async () => {
    const final = JSON.parse(await readFile(path.join(SRC, 'final_acc.json'), 'utf8')) as Record<string, number>;
    const pct = (cat?: string) => {
      const xs = run.samples.filter((s) => !cat || s.category === cat);
      return (100 * xs.filter((s) => s.correct).length) / xs.length;
    };
    expect(pct('direct_attributes')).toBeCloseTo(final.direct_attributes!, 10);
    expect(pct('relative_position')).toBeCloseTo(final.relative_position!, 10);
    expect(pct()).toBeCloseTo(final.overall!, 10);
    expect(final.error_nums).toEqual({ direct_attributes: 0, relative_position: 0 });
  });

  it('175 records that end on a user turn end with the answer of their last reply, none is an error', () => {
    const judged = [...raw.result_direct_attributes_deepeyes_acc!, ...raw.result_relative_position_deepeyes_acc!];
    const endOnUser = Object.entries(raw)
      .filter(([n]) => n.endsWith('_acc'))
      .flatMap(([, rs]) => rs)
      .filter((r) => (r.pred_output as Array<{ role: string }>).at(-1)!.role === 'user');
    expect(endOnUser).toHaveLength(175);
    expect(run.samples.filter((s) => s.stop_reason !== 'answer')).toEqual([]);
    for (const s of run.samples) {
      expect(s.trajectory!.turns.at(-1)!.text, s.qid).toContain('<answer>');
      // The answer as the eval extracted it (`pred_ans`: the first <answer>…</answer> of the last reply).
      const r = judged.find((x) => `vstar-${s.category}.${String(x.image).replace(/\.jpg$/, '')}` === s.qid)!;
      expect(s.extracted, s.qid).toBe(r.pred_ans);
    }
  });

  it('has the qids and categories Loupe\'s V* adapter gives the same questions', async () => {
    const native = await vstarAdapter.load(path.join(dir, 'result_direct_attributes_deepeyes_acc.jsonl'), { skipMediaCheck: true });
    const imported = run.samples.filter((s) => s.category === 'direct_attributes');
    expect(new Set(imported.map((s) => s.qid))).toEqual(new Set(native.samples.map((s) => s.qid)));
    expect(new Set(native.samples.map((s) => s.category))).toEqual(new Set(['direct_attributes']));
    expect(native.samples[0]!.bench).toBe(manifest.bench?.id);
  });

  it('an unjudged file alone imports with one warning per record and the same qids', async () => {
    const r = await importRun('deepeyes', path.join(dir, 'result_relative_position_deepeyes.jsonl'));
    expect(r.samples).toHaveLength(76);
    expect(r.issues.filter((i) => i.field === 'acc')).toHaveLength(76);
    expect(r.samples.map((s) => s.qid)).toEqual(run.samples.filter((s) => s.category === 'relative_position').map((s) => s.qid));
  });

  it('records without an `image` key are imported, not rejected', async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'loupe-de-noimg-'));
    tmp.push(d);
    const rs = raw.result_relative_position_deepeyes_acc!.slice(0, 3).map(({ image: _drop, ...rest }) => rest);
    await writeFile(path.join(d, 'result_relative_position_deepeyes_acc.jsonl'), rs.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const r = await importRun('deepeyes', d);
    expect(r.stats.imported).toBe(3);
    expect(r.issues).toEqual([]);
    expect(r.samples.map((s) => s.qid)).toEqual(['vstar-relative_position.line1', 'vstar-relative_position.line2', 'vstar-relative_position.line3']);
    expect(missingImages(r.samples)).toHaveLength(3);
  });

  it('the wrong --from names the right one instead of listing a missing field per record', async () => {
    await expect(importRun('lmms-eval', dir)).rejects.toThrow(/looks like deepeyes output: try --from deepeyes/);
    await expect(importRun('verl-tool', path.join(dir, 'result_direct_attributes_deepeyes_acc.jsonl'))).rejects.toThrow(/try --from deepeyes/);
  });
});

/** Stand-in images: the V* images are not in the repository; these have the size the boxes need. */
async function standIn(file: string, w: number, h: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await sharp({ create: { width: w, height: h, channels: 3, background: { r: 90, g: 140, b: 200 } } }).jpeg({ quality: 80 }).toFile(file);
}

describe('attaching images by name', () => {
  it('--images: originals stored, boxes normalized, padded and cropped with the DeepEyes rule', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'loupe-de-attach-'));
    tmp.push(root);
    const images = path.join(root, 'vstar');
    const first = run.samples.filter((s) => s.category === 'direct_attributes' && s.trajectory!.turns.some((t) => t.call?.bboxRaw)).slice(0, 2);
    for (const s of first) await standIn(path.join(images, 'direct_attributes', String(s.extra!.image)), 2400, 1600);
    const ws = await new Workspace(path.join(root, 'ws')).init();
    const ops = createImageOps(ws.media, { mode: 'inline' });
    const copy = structuredClone(run);
    const res = await attachFolder(copy.samples, await ImageFolder.scan(images), ops);
    expect(res.attached).toBe(2);
    expect(res.missing).toHaveLength(189);
    let cropped = 0;
    for (const s of copy.samples.filter((x) => first.some((f) => f.qid === x.qid))) {
      const t = s.trajectory!;
      expect(t.originals).toHaveLength(1);
      expect([t.originals[0]!.width, t.originals[0]!.height]).toEqual([2400, 1600]);
      expect(t.media).toHaveLength(1);
      const calls = t.turns.filter((x) => x.call?.bboxRaw).map((x) => x.call!);
      expect(calls.length).toBeGreaterThan(0);
      for (const c of calls) {
        // The model's box on the question image, always.
        expect(c.bboxNormalized).toEqual([c.bboxRaw![0] / 2400, c.bboxRaw![1] / 1600, c.bboxRaw![2] / 2400, c.bboxRaw![3] / 1600]);
        expect(c.targetIndex).toBe(0);
        let geo: ReturnType<typeof deepEyesCropGeometry> | null = null;
        try {
          geo = deepEyesCropGeometry([2400, 1600], c.bboxRaw!);
        } catch {
          geo = null; // the rule refuses the box: no crop
        }
        if (!geo) {
          expect(c.produced).toEqual([]);
          continue;
        }
        cropped++;
        expect(c.cropBox).toEqual(geo.cropBox);
        expect(c.bboxPadded).toEqual(geo.normalizedBox);
        expect(c.produced).toHaveLength(1);
        expect([c.produced[0]!.width, c.produced[0]!.height]).toEqual(geo.cropSize);
        expect(await ws.media.has(c.produced[0]!.id)).toBe(true);
      }
    }
    expect(cropped).toBeGreaterThan(0);
  });

  it('"Locate images…" on a stored run rewrites its samples with the images', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'loupe-de-locate-'));
    tmp.push(root);
    const ws = await new Workspace(path.join(root, 'ws')).init();
    const { runId } = await workspaceWriter(ws.root).write(structuredClone(run));
    const s0 = run.samples.find((s) => s.category === 'relative_position')!;
    await standIn(path.join(root, 'imgs', String(s0.extra!.image)), 1200, 900);
    const ops = createImageOps(ws.media, { mode: 'inline' });
    const res = await attachRunImages(ws.runs, runId, path.join(root, 'imgs'), ops);
    expect(res).toMatchObject({ attached: 1, folderImages: 1 });
    expect(res.missing).toHaveLength(190);
    const back = await ws.runs.readSamples(runId);
    expect(back.records).toHaveLength(191);
    expect(back.records.find((s) => s.qid === s0.qid)!.trajectory!.originals[0]!.width).toBe(1200);
    await expect(attachRunImages(ws.runs, runId, path.join(root, 'nope'), ops)).rejects.toThrow(/not a folder/);
  });
});

describe('a folder with several models\' results', () => {
  it('asks for --model instead of mixing them, and imports the one named', async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'loupe-de-models-'));
    tmp.push(d);
    const rs = raw.result_direct_attributes_deepeyes_acc!.slice(0, 2).map((r) => JSON.stringify(r)).join('\n') + '\n';
    await writeFile(path.join(d, 'result_direct_attributes_deepeyes_eval_acc.jsonl'), rs);
    await writeFile(path.join(d, 'result_direct_attributes_deepeyes_eval_repeat1_acc.jsonl'), rs);
    await expect(importRun('deepeyes', d)).rejects.toThrow(/results of 2 models in this folder \(deepeyes_eval, deepeyes_eval_repeat1\); pass --model NAME/);
    const r = await importRun('deepeyes', d, { model: 'deepeyes_eval_repeat1' });
    expect(r.stats).toEqual({ files: 1, records: 2, imported: 2, skipped: 0 });
    expect((r.manifest as unknown as RunManifest).extra?.files).toEqual(['result_direct_attributes_deepeyes_eval_repeat1_acc.jsonl']);
  });
});

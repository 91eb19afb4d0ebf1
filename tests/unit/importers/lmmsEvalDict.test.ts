/**
 * lmms-eval sample logs whose per-sample metrics are dicts (MME, V*, HR-Bench): scored per sample and
 * re-aggregated with each task's own rule, equal to what the task's aggregation wrote to results.json
 * (fixtures built from lmms-eval's code: tests/fixtures/importers/lmms_eval_dict/README.md).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { importRun, type ImportedRun } from '../../../app/importers';
import { recordedImageNames } from '../../../app/importers/attach';
import type { RunManifest } from '../../../app/contract/trajectory';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIR = path.join(HERE, '../../fixtures/importers/lmms_eval_dict');

let run: ImportedRun;
let manifest: RunManifest;
let reported: Record<string, Record<string, number | string>>;
beforeAll(async () => {
  run = await importRun('lmms-eval', DIR);
  manifest = run.manifest as unknown as RunManifest;
  reported = (JSON.parse(await readFile(path.join(DIR, '20260301_101010_results.json'), 'utf8')) as { results: typeof reported }).results;
});

const taskScores = () => (manifest.extra as { taskScores: Record<string, Record<string, number>> }).taskScores;

describe('lmms-eval dict metrics', () => {
  it('imports every sample scored, with no issues', () => {
    expect(run.stats).toEqual({ files: 4, records: 13, imported: 13, skipped: 0 });
    expect(run.issues).toEqual([]);
    expect(run.samples.filter((s) => (s.extra as Record<string, unknown>).unscored)).toEqual([]);
  });

  it('MME: per-sample yes/no score, per-category acc + acc+ summed as mme_aggregate_results does', () => {
    const mme = run.samples.filter((s) => s.bench === 'mme');
    expect(mme.map((s) => s.score)).toEqual([1, 1, 1, 0, 0, 1]);
    expect(mme.map((s) => s.category)).toEqual(['existence', 'existence', 'color', 'color', 'code_reasoning', 'code_reasoning']);
    expect(taskScores().mme!.mme_perception_score).toBeCloseTo(reported.mme!['mme_perception_score,none'] as number, 10);
    expect(taskScores().mme!.mme_cognition_score).toBeCloseTo(reported.mme!['mme_cognition_score,none'] as number, 10);
    expect(taskScores().mme).toMatchObject({ existence: 200, color: 50, code_reasoning: 50 });
    // MME's question_id is the image path: the name to attach the original by.
    expect(recordedImageNames(mme[0]!)).toEqual(['existence/000000006040.jpg']);
  });

  it('V*: bench vstar, qids and categories as Loupe\'s V* adapter gives the same questions, accuracy as the task reports', () => {
    const v = run.samples.filter((s) => s.bench === 'vstar');
    expect(v.map((s) => s.qid)).toEqual(['vstar-0', 'vstar-1', 'vstar-115']);
    expect(v.map((s) => s.category)).toEqual(['direct_attributes', 'direct_attributes', 'relative_position']);
    expect(v.map((s) => s.correct)).toEqual([true, false, true]);
    expect(taskScores().vstar_bench!.overall).toBeCloseTo(reported.vstar_bench!['vstar_overall_acc,none'] as number, 10);
  });

  it('HR-Bench: category from the verdict key, cycle-averaged single / cross / average as hrbench_aggregate_results', () => {
    const h = run.samples.filter((s) => s.bench === 'hrbench4k');
    expect(h.map((s) => s.qid)).toEqual(['hrbench4k-0', 'hrbench4k-1', 'hrbench4k-2', 'hrbench4k-3']);
    expect(h.map((s) => s.category)).toEqual(['single', 'single', 'cross', 'cross']);
    for (const k of ['single', 'cross', 'average']) expect(taskScores().hrbench4k![k]).toBeCloseTo(reported.hrbench4k![`${k},none`] as number, 10);
  });

  it('a task without any per-sample metric imports unscored with a warning, not silently', async () => {
    const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const d = await mkdtemp(path.join(tmpdir(), 'loupe-lmms-nometric-'));
    try {
      await writeFile(path.join(d, 'samples_x.jsonl'), JSON.stringify({ doc_id: 0, target: 'a', filtered_resps: ['a'], judge: { verdict: 'ok' } }) + '\n');
      const r = await importRun('lmms-eval', d);
      expect(r.issues).toMatchObject([{ severity: 'warning', file: 'samples_x.jsonl', message: expect.stringMatching(/1 sample\(s\) carry no per-sample metric/) }]);
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});

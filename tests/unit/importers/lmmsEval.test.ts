/** lmms-eval importer on the real `--log_samples` excerpt and results.json. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { formatIssue, importRun } from '../../../app/importers';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const DIR = path.join(HERE, '../../fixtures/importers/lmms_eval');
const SAMPLES = '20260218_234435_samples_scienceqa_img.head50.jsonl';
const tmp: string[] = [];
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

describe('lmms-eval importer', () => {
  it('imports the 50 real samples with the model and metric from results.json', async () => {
    const run = await importRun('lmms-eval', DIR);
    const raw = (await readFile(path.join(DIR, SAMPLES), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    const results = JSON.parse(await readFile(path.join(DIR, '20260218_234435_results.json'), 'utf8'));
    expect(run.issues).toEqual([]);
    expect(run.stats.imported).toBe(50);
    expect((run.manifest.model as { id: string }).id).toBe(results.model_name);
    expect((run.manifest.bench as { id: string }).id).toBe('scienceqa_img');
    for (const [i, s] of run.samples.entries()) {
      expect(s.qid).toBe(`scienceqa_img/${raw[i].doc_id}`);
      expect(s.answer).toBe(raw[i].target);
      expect(s.prediction).toBe(raw[i].filtered_resps[0]);
      expect(s.score).toBe(raw[i].exact_match);
      expect(s.correct).toBe(raw[i].exact_match === 1);
      expect((s.extra as Record<string, unknown>).doc_hash).toBe(raw[i].doc_hash);
      expect(s.trajectory?.userText).toBe(raw[i].input);
    }
    // Options come out of the prompt's "A. …" lines; the question loses them.
    const s1 = run.samples[1]!;
    expect(s1.options).toEqual(['Maryland', 'New Hampshire', 'Rhode Island', 'Vermont']);
    expect(s1.question).toBe('What is the name of the colony shown?');
  });

  it('a single samples file finds its results.json by date', async () => {
    const run = await importRun('lmms-eval', path.join(DIR, SAMPLES));
    expect((run.manifest.model as { id: string }).id).toBe('liuhaotian/llava-v1.5-7b');
    expect(run.stats.files).toBe(2);
  });

  it('reports bad lines with file, line and field and keeps the others', async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'loupe-import-lmms-'));
    tmp.push(d);
    const lines = (await readFile(path.join(DIR, SAMPLES), 'utf8')).trim().split('\n');
    const noResp = JSON.parse(lines[1]!);
    delete noResp.filtered_resps;
    const noId = JSON.parse(lines[2]!);
    delete noId.doc_id;
    await writeFile(path.join(d, 'samples_mytask.jsonl'), [lines[0], JSON.stringify(noResp), JSON.stringify(noId), 'not json', lines[3]].join('\n') + '\n');
    const run = await importRun('lmms-eval', d);
    expect(run.stats).toEqual({ files: 1, records: 5, imported: 2, skipped: 3 });
    expect(run.samples.map((s) => s.bench)).toEqual(['mytask', 'mytask']);
    expect(run.issues.map(formatIssue)).toEqual([
      'error: samples_mytask.jsonl:2: filtered_resps: missing (neither filtered_resps nor resps is present)',
      'error: samples_mytask.jsonl:3: doc_id: missing (expected an integer)',
      expect.stringMatching(/^error: samples_mytask\.jsonl:4: not valid JSON/),
    ]);
  });
});

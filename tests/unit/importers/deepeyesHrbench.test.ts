/**
 * DeepEyes HR-Bench outputs: `eval/eval_hrbench.py` (TrerZy/Deepeyes_replication @ e3b42c86, the authors'
 * script) writes `result_hr_bench_{4k,8k}_{model}.jsonl` records `{question, answer (a letter),
 * answer_str, pred_ans, pred_output, category, status}` with no image and no row index. The records here
 * are written from that code for the rows of the built HR-Bench TSV fixture; the original is found by
 * question and options in the benchmark's TSV and the sample takes that row's qid.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { attachFolder, ImageFolder, importRun } from '../../../app/importers';
import { hrbenchAdapter } from '../../../app/bench/adapters/hrbench';
import { Workspace } from '../../../app/workspace';
import { createImageOps } from '../../../native/image';
import type { RunManifest } from '../../../app/contract/trajectory';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TSV = path.join(HERE, '../../fixtures/benchmarks/hrbench/hr_bench_4k.tsv');
const tmp: string[] = [];
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

const SYSTEM = 'You are a helpful assistant.\n\n# Tools\n…';
const SUFFIX = '\nThink first, call **image_zoom_in_tool** if needed, then answer. Format strictly as:  <think>...</think>  <tool_call>...</tool_call> (if tools needed)  <answer>...</answer> ';

/** One record as eval_hrbench.py's `process` saves it (images stripped from the printed messages). */
function record(question: string, options: string[], answer: string, category: string, reply: string, acc: number) {
  const optionStr = `\n${options.map((o, i) => `${'ABCD'[i]}. ${o}`).join('\n')}\n`;
  return {
    question,
    answer,
    answer_str: options['ABCD'.indexOf(answer)],
    pred_ans: /<answer>([\s\S]*?)<\/answer>/.exec(reply)?.[1] ?? reply,
    pred_output: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,' }, max_pixels: 12845056 }, { type: 'text', text: `Question: ${question}\nOptions: ${optionStr}${SUFFIX}` }] },
      { role: 'assistant', content: reply },
    ],
    category,
    status: 'success',
    acc,
  };
}

describe('DeepEyes HR-Bench results (no image, no index)', () => {
  it('imports as hrbench4k with the record\'s category; --images with the bench folder finds each row by question and options', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'loupe-de-hr-'));
    tmp.push(root);
    const bench = path.join(root, 'HR-Bench');
    await mkdir(bench);
    await copyFile(TSV, path.join(bench, 'hr_bench_4k.tsv'));
    const rows = (await hrbenchAdapter.load(path.join(bench, 'hr_bench_4k.tsv'), { mediaCacheDir: path.join(root, 'cache') })).samples;
    const r1 = rows.find((r) => r.qid === 'hrbench4k-1')!;
    const r0 = rows.find((r) => r.qid === 'hrbench4k-0')!;
    const out = path.join(root, 'results', 'my-model');
    await mkdir(out, { recursive: true });
    const recs = [
      record(r0.question, r0.options!, String(r0.answer), 'single', '<think>It is 37B.</think>  \n<answer>B. 37B</answer>', 1),
      record(r1.question, r1.options!, String(r1.answer), 'single', '<think>Hm.</think>  \n<answer>B. 47B</answer>', 0),
    ];
    await writeFile(path.join(out, 'result_hr_bench_4k_my-model_acc.jsonl'), recs.map((r) => JSON.stringify(r)).join('\n') + '\n');

    const run = await importRun('deepeyes', out);
    expect(run.issues).toEqual([]);
    expect((run.manifest as unknown as RunManifest).bench?.id).toBe('hrbench4k');
    expect((run.manifest as unknown as RunManifest).model.id).toBe('my-model');
    expect(run.samples.map((s) => [s.qid, s.bench, s.category, s.correct, s.answer])).toEqual([
      ['hrbench4k-line1', 'hrbench4k', 'single', true, 'B'],
      ['hrbench4k-line2', 'hrbench4k', 'single', false, 'A'],
    ]);
    expect(run.samples[0]!.options).toEqual(r0.options);

    const ws = await new Workspace(path.join(root, 'ws')).init();
    const res = await attachFolder(run.samples, await ImageFolder.scan(bench), createImageOps(ws.media, { mode: 'inline' }));
    expect(res).toEqual({ attached: 2, missing: [] });
    // The bench's own qids (rows 0 and 1 share one image in the TSV: row 1 refers to row 0's by index).
    expect(run.samples.map((s) => s.qid)).toEqual(['hrbench4k-0', 'hrbench4k-1']);
    expect(run.samples.map((s) => (s.extra as Record<string, unknown>).qidInFile)).toEqual(['hrbench4k-line1', 'hrbench4k-line2']);
    for (const s of run.samples) expect(s.trajectory!.originals[0]).toMatchObject({ width: 20, height: 20 });
    expect(run.samples[0]!.trajectory!.originals[0]!.id).toBe(run.samples[1]!.trajectory!.originals[0]!.id);
  });
});

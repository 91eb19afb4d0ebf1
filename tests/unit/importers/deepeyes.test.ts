/** DeepEyes importer on the real V* result files (all 191 questions) and on broken input. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatIssue, importRun, workspaceWriter, type ImportedRun } from '../../../app/importers';
import { RunStore } from '../../../app/workspace';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const DIR = path.join(HERE, '../../fixtures/importers/deepeyes');
const FILES = ['result_direct_attributes_tmp_acc.jsonl', 'result_relative_position_tmp_acc.jsonl'];

interface RawRec {
  image: string;
  acc: number;
  status: string;
  pred_output: Array<{ role: string; content: unknown }>;
}
const raw: Record<string, RawRec[]> = {};
let run: ImportedRun;
const tmp: string[] = [];

beforeAll(async () => {
  for (const f of FILES) raw[f] = (await readFile(path.join(DIR, f), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as RawRec);
  run = await importRun('deepeyes', DIR);
});
afterAll(async () => {
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

/** The qid Loupe's own V* adapter gives the same question (`vstar-<category>.<image stem>`). */
const qidOf = (cat: string, image: string) => `vstar-${cat}.${image.replace(/\.jpg$/, '')}`;
const sample = (cat: string, image: string) => {
  const s = run.samples.find((x) => x.qid === qidOf(cat, image));
  if (!s) throw new Error(`no sample ${cat}/${image}`);
  return s;
};

describe('DeepEyes importer (real files)', () => {
  it('imports all 191 V* records with no issues', () => {
    expect(run.stats).toEqual({ files: 2, records: 191, imported: 191, skipped: 0 });
    expect(run.issues).toEqual([]);
    expect(new Set(run.samples.map((s) => s.qid)).size).toBe(191);
    expect(new Set(run.samples.map((s) => s.bench))).toEqual(new Set(['vstar']));
    expect(run.manifest.dialect).toBe('deepeyes');
  });

  it('keeps the judged accuracy per record and per category', () => {
    for (const f of FILES) {
      const cat = f.replace(/^result_/, '').replace(/_tmp_acc\.jsonl$/, '');
      const mine = run.samples.filter((s) => s.category === cat);
      expect(mine).toHaveLength(raw[f]!.length);
      const meanRaw = raw[f]!.reduce((a, r) => a + r.acc, 0) / raw[f]!.length;
      expect(mine.reduce((a, s) => a + s.score, 0) / mine.length).toBeCloseTo(meanRaw, 12);
      for (const r of raw[f]!) expect(sample(cat, r.image).correct).toBe(r.acc > 0.5);
    }
  });

  it('counts tool calls as the conversations show them', () => {
    for (const f of FILES) {
      const cat = f.replace(/^result_/, '').replace(/_tmp_acc\.jsonl$/, '');
      for (const r of raw[f]!) {
        const assistantWithCall = r.pred_output.filter((m) => m.role === 'assistant' && typeof m.content === 'string' && m.content.includes('<tool_call>')).length;
        const s = sample(cat, r.image);
        expect(s.calls, r.image).toBe(assistantWithCall);
        expect(s.trajectory?.turns).toHaveLength(r.pred_output.filter((m) => m.role === 'assistant').length);
      }
    }
  });

  it('line 43 (sa_29744): three zoom calls with absolute boxes, then the answer', () => {
    const s = sample('direct_attributes', 'sa_29744.jpg');
    expect(s.calls).toBe(3);
    expect(s.stop_reason).toBe('answer');
    const calls = s.trajectory!.turns.filter((t) => t.call).map((t) => t.call!);
    expect(calls.every((c) => c.name === 'image_zoom_in_tool' && c.bboxMode === 'absolute')).toBe(true);
    const firstText = (raw[FILES[0]!]![42]!.pred_output[2]!.content as string);
    const args = JSON.parse(firstText.slice(firstText.indexOf('<tool_call>') + 11).trim()).arguments;
    expect(calls[0]!.bboxRaw).toEqual(args.bbox_2d);
    expect(s.options).toHaveLength(4);
    expect((s.extra as Record<string, unknown>).answerLetter).toBe('A');
  });

  it('line 68 (sa_23893): answer and call in one turn: the call ran, then the episode ended with that answer', () => {
    const s = sample('direct_attributes', 'sa_23893.jpg');
    expect(s.calls).toBe(2);
    expect(s.correct).toBe(false);
    // The eval loop (`while '</answer>' not in response`) executes the call, then stops on the answer.
    expect(s.stop_reason).toBe('answer');
    expect(s.error).toBeUndefined();
    const last = s.trajectory!.turns.at(-1)!;
    expect(last.text).toContain('<answer>');
    expect(last.call?.name).toBe('image_zoom_in_tool');
    expect(s.extracted).toBe(/<answer>([\s\S]*?)<\/answer>/.exec(last.text)![1]);
  });

  it('accuracy equals the eval\'s own summary.txt (84.35 %, 75.00 %, 80.63 %)', async () => {
    const summary = await readFile(path.join(DIR, 'summary.txt'), 'utf8');
    const pct = (re: RegExp) => Number(re.exec(summary)![1]);
    const acc = (xs: typeof run.samples) => (100 * xs.reduce((a, s) => a + s.score, 0)) / xs.length;
    expect(acc(run.samples.filter((s) => s.category === 'direct_attributes')).toFixed(2)).toBe(pct(/direct_attributes: ([\d.]+)%/).toFixed(2));
    expect(acc(run.samples.filter((s) => s.category === 'relative_position')).toFixed(2)).toBe(pct(/relative_position: ([\d.]+)%/).toFixed(2));
    expect(acc(run.samples).toFixed(2)).toBe(pct(/Overall Accuracy: ([\d.]+)%/).toFixed(2));
  });

  it('relative_position line 55 (sa_24971): status "error" with 10 calls', () => {
    const s = sample('relative_position', 'sa_24971.jpg');
    expect(s.calls).toBe(10);
    expect(s.stop_reason).toBe('error');
    expect(s.error).toMatch(/status "error" after 10 tool call/);
    expect((s.extra as Record<string, unknown>).status).toBe('error');
  });

  it('every other record has exactly one call and ends with an answer', () => {
    const special = new Set([qidOf('direct_attributes', 'sa_29744.jpg'), qidOf('direct_attributes', 'sa_23893.jpg'), qidOf('relative_position', 'sa_24971.jpg')]);
    const rest = run.samples.filter((s) => !special.has(s.qid));
    expect(rest).toHaveLength(188);
    for (const s of rest) {
      expect(s.calls, s.qid).toBe(1);
      expect(s.stop_reason, s.qid).toBe('answer');
    }
  });

  it('writes through the workspace RunStore and reads back unchanged', async () => {
    const ws = await mkdtemp(path.join(tmpdir(), 'loupe-import-ws-'));
    tmp.push(ws);
    const res = await workspaceWriter(ws).write(run);
    const back = await new RunStore(path.join(ws, 'runs')).readSamples(res.runId);
    expect(back.issues).toEqual([]);
    expect(back.records).toHaveLength(191);
    expect(back.records[42]).toEqual(run.samples[42]);
    const manifest = JSON.parse(await readFile(path.join(res.dir, 'manifest.json'), 'utf8'));
    expect(manifest.kind).toBe('import');
  });
});

describe('DeepEyes importer (broken input)', () => {
  it('names file, line and field of each bad record and imports the rest', async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'loupe-import-de-'));
    tmp.push(d);
    const lines = (await readFile(path.join(DIR, FILES[1]!), 'utf8')).trim().split('\n');
    const noOutput = JSON.parse(lines[1]!);
    delete noOutput.pred_output;
    const badType = JSON.parse(lines[2]!);
    badType.question = 7;
    const file = path.join(d, 'result_relative_position_acc.jsonl');
    await writeFile(file, [lines[0], JSON.stringify(noOutput), '{"image": "x.jpg", ', JSON.stringify(badType), '', lines[3]].join('\n') + '\n');
    const r = await importRun('deepeyes', file);
    expect(r.stats).toEqual({ files: 1, records: 5, imported: 2, skipped: 3 });
    expect(r.issues.map(formatIssue)).toEqual([
      `error: ${file}:2: pred_output: missing (expected a list)`,
      expect.stringMatching(new RegExp(`^error: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3: not valid JSON`)),
      `error: ${file}:4: question: expected a string, got number`,
    ]);
  });

  it('an unjudged file imports with a warning per record', async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'loupe-import-de2-'));
    tmp.push(d);
    const line = JSON.parse((await readFile(path.join(DIR, FILES[0]!), 'utf8')).split('\n')[0]!);
    delete line.acc;
    await writeFile(path.join(d, 'result_direct_attributes.jsonl'), JSON.stringify(line) + '\n');
    const r = await importRun('deepeyes', d);
    expect(r.samples).toHaveLength(1);
    expect(r.issues).toMatchObject([{ severity: 'warning', line: 1, field: 'acc' }]);
  });
});

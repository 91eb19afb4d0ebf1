/**
 * models/loupe-tiny/eval_breakdown.py, the per-kind account of where an evaluation's answers are lost (the first crop's
 * aim; left-of's reading against its boxed option letter), on loupe-synth samples generated here (seed 9, rings and
 * left-of) and an evaluation file written by hand in the runs' format: a first crop on the target's centre and one
 * beside it, a left-of turn that reads the left tag and boxes its option, one that reads it and boxes the other option,
 * and one that names the right-hand tag. A sample the evaluation names but the samples lack is a clear error.
 * --swap-options: each left-of sample followed by its copy with the options in the other order and the answer letter
 * moved with them (nothing else changed, no other kind), and the pairs counted by reading and boxed letter.
 *
 * Needs a python3 with numpy and Pillow (pr_env.py, which it shares the swap with): LOUPE_PYTHON, else python3, else /usr/bin/python3. None → the test fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSynth } from '../../../app/synth';
import { sharpSynthRaster } from '../../../native/image/synthRaster';
import { requirePython } from './python';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-eval-breakdown-'));
const DATA = path.join(tmp, 'synth');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Gold {
  qid: string;
  category: string;
  answer: string;
  options?: string[];
  target: { norm: [number, number, number, number] };
  facts: Record<string, string>;
}
let gold: Gold[] = [];

beforeAll(async () => {
  await generateSynth({ seed: 9, n: 6, kinds: ['ring-digits', 'left-of'] }, DATA, sharpSynthRaster);
  gold = readFileSync(path.join(DATA, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Gold);
}, 120_000);

const call = (b: number[]) => `Let me zoom in.\n<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [${b.join(', ')}], "target_image": 1}}\n</tool_call>`;

function run(evalSamples: unknown[], samplesFile = path.join(DATA, 'samples.jsonl')): { status: number | null; stdout: string; stderr: string } {
  const file = path.join(tmp, `eval-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ source: 'hand-written', correct: 0, n: evalSamples.length, samples: evalSamples }));
  const python = requirePython(['numpy', 'PIL']);
  return spawnSync(python, ['models/loupe-tiny/eval_breakdown.py', '--samples', samplesFile, '--eval', file], { cwd: ROOT, encoding: 'utf8' });
}

describe('eval_breakdown.py', () => {
  it('counts first crops on the target centre and left-of readings against their boxed letters', () => {
    const rings = gold.filter((g) => g.category === 'ring-digits');
    const lefts = gold.filter((g) => g.category === 'left-of');
    expect(rings.length).toBeGreaterThanOrEqual(2);
    expect(lefts.length).toBeGreaterThanOrEqual(3);
    const [r0, r1] = rings as [Gold, Gold];
    const around = (t: number[]) => [Math.max(0, t[0]! - 0.05), Math.max(0, t[1]! - 0.05), Math.min(1, t[2]! + 0.05), Math.min(1, t[3]! + 0.05)].map((v) => v.toFixed(3));
    // a box beside the target: the half of the image the target's centre is not in
    const beside = (t: number[]) => ((t[0]! + t[2]!) / 2 < 0.5 ? [0.6, 0, 1, 1] : [0, 0, 0.4, 1]);
    const optionOf = (g: Gold, letter: string) => 'AB'[g.options!.indexOf(letter)]!;
    const [l0, l1, l2] = lefts as [Gold, Gold, Gold];
    const samples = [
      { qid: r0.qid, category: r0.category, correct: true, extracted: r0.answer, turns: [call(around(r0.target.norm).map(Number)), `The ring shows ${r0.answer}: \\boxed{${r0.answer}}`] },
      { qid: r1.qid, category: r1.category, correct: false, extracted: '1', turns: [call(beside(r1.target.norm)), 'The ring shows 1: \\boxed{1}'] },
      // reads the left tag, boxes its option: consistent (and right)
      // (the turn since the v19 recipe: the options listed after the reading, copied right)
      { qid: l0.qid, category: 'left-of', correct: true, extracted: optionOf(l0, l0.facts.left!).toLowerCase(), turns: [call(around(l0.target.norm).map(Number)), `The left tag shows ${l0.facts.left}; (A) ${l0.options![0]}, (B) ${l0.options![1]}: \\boxed{${optionOf(l0, l0.facts.left!)}}`] },
      // reads the left tag, boxes the other option
      // (its list has the options' letters the other way round: copied wrong)
      { qid: l1.qid, category: 'left-of', correct: false, extracted: optionOf(l1, l1.facts.right!).toLowerCase(), turns: [call(beside(l1.target.norm)), `The left tag shows ${l1.facts.left}; (A) ${l1.options![1]}, (B) ${l1.options![0]}: \\boxed{${optionOf(l1, l1.facts.right!)}}`] },
      // names the right-hand tag, boxes its option
      { qid: l2.qid, category: 'left-of', correct: false, extracted: optionOf(l2, l2.facts.right!).toLowerCase(), turns: [call(around(l2.target.norm).map(Number)), `The left tag shows ${l2.facts.right}: \\boxed{${optionOf(l2, l2.facts.right!)}}`] },
    ];
    const r = run(samples);
    expect(r.status, r.stderr).toBe(0);
    const row = (k: string) => r.stdout.split('\n').find((l) => l.startsWith(k + ' '))!.trim().split(/\s+/).slice(1).map(Number);
    expect(row('ring-digits')).toEqual([2, 1, 1, 1]); // n, right, centre, right|centre
    expect(row('left-of')).toEqual([3, 1, 2, 1]);
    expect(row('all')).toEqual([5, 2, 3, 2]);
    const left = r.stdout.split('\n').find((l) => l.startsWith('left-of:'))!;
    expect(left).toContain('read right / letter of the option read: 1');
    expect(left).toContain('read right / other letter: 1');
    expect(left).toContain('read wrong / letter of the option read: 1');
    const lists = r.stdout.split('\n').find((l) => l.startsWith('left-of lists:'))!;
    expect(lists).toBe('left-of lists: no options listed: 1, options copied right: 1, options copied wrong: 1');
  });

  it('--swap-options writes each left-of sample with its options swapped, and the pairs are counted', () => {
    const python = requirePython(['numpy', 'PIL']);
    const out = path.join(tmp, 'swapped');
    const w = spawnSync(python, ['models/loupe-tiny/eval_breakdown.py', '--swap-options', DATA, out], { cwd: ROOT, encoding: 'utf8' });
    expect(w.status, w.stderr).toBe(0);
    const rows = readFileSync(path.join(out, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Gold & Record<string, unknown>);
    const lefts = gold.filter((g) => g.category === 'left-of');
    expect(rows.length).toBe(2 * lefts.length);
    for (let i = 0; i < rows.length; i += 2) {
      const [a, b] = [rows[i]!, rows[i + 1]!];
      expect(a).toEqual(lefts[i / 2]);
      expect(b.qid).toBe(a.qid + '-swap');
      expect(b.options).toEqual([...a.options!].reverse());
      expect(b.answer).not.toBe(a.answer);
      expect(b.options!['AB'.indexOf(b.answer)]).toBe(a.options!['AB'.indexOf(a.answer)]); // the same tag is the answer
      const { qid: _q, options: _o, answer: _a, ...restA } = a;
      const { qid: _q2, options: _o2, answer: _a2, ...restB } = b;
      expect(restB).toEqual(restA);
    }
    const [l0, l1, l2] = lefts as [Gold, Gold, Gold];
    const said = (g: Gold, letter: string) => ({ qid: g.qid, category: 'left-of', correct: false, extracted: letter.toLowerCase(), turns: [`The left tag shows ${g.facts.left}: \\boxed{${letter}}`] });
    // l0, l2: the same letter both ways (options ignored); l1: the letter moves with the options
    const r = run(
      [said(l0, 'A'), { ...said(l0, 'A'), qid: l0.qid + '-swap' }, said(l1, 'A'), { ...said(l1, 'B'), qid: l1.qid + '-swap' }, said(l2, 'B'), { ...said(l2, 'B'), qid: l2.qid + '-swap' }],
      path.join(out, 'samples.jsonl'),
    );
    expect(r.status, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith('options swapped:'))!;
    expect(line).toBe('options swapped: same reading / other letter: 1, same reading / same letter: 2');
  });

  it('a truncated or foreign evaluation file is a one-line error naming it', () => {
    const python = requirePython(['json']);
    const q = gold[0]!.qid;
    for (const [name, body] of [
      ['truncated.json', '{"samples": [{"qid": "synth-9-0'],
      ['foreign.json', '{"rows": []}'],
      // a sample whose turns are not a list of texts (a null turn ended in a TypeError; a bare string was read letter by letter)
      ['null-turn.json', JSON.stringify({ samples: [{ qid: q, correct: false, turns: [null] }] })],
      ['string-turns.json', JSON.stringify({ samples: [{ qid: q, correct: false, turns: 'The ring shows 1: \\boxed{1}' }] })],
      ['number-extracted.json', JSON.stringify({ samples: [{ qid: q, correct: false, extracted: 7, turns: [] }] })],
    ] as const) {
      const f = path.join(tmp, name);
      writeFileSync(f, body);
      const r = spawnSync(python, ['models/loupe-tiny/eval_breakdown.py', '--samples', path.join(DATA, 'samples.jsonl'), '--eval', f], { cwd: ROOT, encoding: 'utf8' });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(`${f}: not`);
      expect(r.stderr).not.toContain('Traceback');
    }
  });

  it('names a sample the samples file lacks', () => {
    const r = run([{ qid: 'synth-9-99999', category: 'left-of', correct: false, extracted: 'a', turns: ['The left tag shows K: \\boxed{A}'] }]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('synth-9-99999: not in the samples given');
  });
});

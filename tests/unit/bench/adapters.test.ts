/**
 * Every benchmark adapter on files in its published layout (tests/fixtures/benchmarks, see its README),
 * plus the error cases: missing file, malformed record, missing media.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { adapters, BenchDataError, getAdapter } from '../../../app/bench/adapters';
import { readTsv } from '../../../app/bench/adapters/io';
import { parseLetteredOptions, questionForSample, questionWithOptions, seededPermutation } from '../../../app/bench/adapters/options';
import { getScorer } from '../../../app/bench/scorers';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

const FIX = path.resolve(__dirname, '../../fixtures/benchmarks');
const tmpRoot = mkdtempSync(path.join(tmpdir(), 'loupe-bench-'));
afterAll(() => rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
/** A writable copy of a fixture folder. */
function copyFixture(rel: string): string {
  const dst = path.join(tmpRoot, `${n++}-${path.basename(rel)}`);
  cpSync(path.join(FIX, rel), dst, { recursive: true });
  return dst;
}
const media = () => path.join(tmpRoot, `media-${n++}`);

async function loadError(id: string, dir: string, opts: Record<string, unknown> = {}): Promise<BenchDataError> {
  try {
    await getAdapter(id).load(dir, { mediaCacheDir: media(), ...opts });
  } catch (e) {
    expect(e).toBeInstanceOf(BenchDataError);
    return e as BenchDataError;
  }
  throw new Error(`${id} loaded ${dir} without an error`);
}

function expectWellFormed(samples: Array<{ qid: string; bench: string; media: { images?: string[]; frames?: string[]; video?: string }; scorer: string; options?: string[]; answer: unknown }>) {
  const qids = new Set<string>();
  for (const s of samples) {
    if (s.bench !== 'loupe-synth') expect(s.qid.split('-')[0]).toBe(s.bench);
    expect(qids.has(s.qid)).toBe(false);
    qids.add(s.qid);
    expect(() => getScorer(s.scorer)).not.toThrow();
    for (const p of [...(s.media.images ?? []), ...(s.media.frames ?? []), ...(s.media.video ? [s.media.video] : [])]) {
      expect(path.isAbsolute(p)).toBe(true);
      expect(existsSync(p)).toBe(true);
    }
    if (s.options && typeof s.answer === 'string' && /^[A-Z]$/.test(s.answer)) expect(s.answer.charCodeAt(0) - 65).toBeLessThan(s.options.length);
  }
}

describe('registry', () => {
  it('knows every benchmark and its aliases', () => {
    expect(Object.keys(adapters).sort()).toEqual(['hrbench', 'infovqa', 'loupe-synth', 'mvbench', 'pixel-reasoner', 'tallyqa', 'vsibench', 'vstar']);
    expect(getAdapter('V*').id).toBe('vstar');
    expect(getAdapter('hrbench8k').id).toBe('hrbench');
    expect(() => getAdapter('mmlu')).toThrow(/unknown benchmark 'mmlu'.*vstar/);
  });
});

describe('V*', () => {
  it('reads real DeepEyes V* result files and shuffles the always-first options', async () => {
    const { samples, info } = await getAdapter('vstar').load(path.join(FIX, 'vstar/deepeyes'), { skipMediaCheck: true });
    expect(info.format).toBe('vstar.deepeyes-results.jsonl');
    expect(info.optionOrder).toBe('seeded-shuffle:0');
    expect(samples).toHaveLength(5);
    expect(samples.map((s) => s.category)).toEqual(['direct_attributes', 'direct_attributes', 'direct_attributes', 'relative_position', 'relative_position']);
    const lines = readFileSync(path.join(FIX, 'vstar/deepeyes/result_direct_attributes_tmp_acc.head3.jsonl'), 'utf8').trim().split('\n');
    const first = JSON.parse(lines[0]!) as { answer: string; question: string };
    const s0 = samples[0]!;
    expect(s0.question).toBe(first.question);
    // The gold letter points at the DeepEyes `answer` text wherever the shuffle put it.
    expect(s0.options![(s0.answer as string).charCodeAt(0) - 65]).toBe(first.answer);
    expect(s0.options).toHaveLength(4);
    const perm = s0.extra!.optionPermutation as number[];
    expect([...perm].sort()).toEqual([0, 1, 2, 3]);
    expect(s0.media.images![0]).toBe(path.join(FIX, 'vstar/deepeyes/direct_attributes/sa_30411.jpg'));
  });

  it('the shuffle is seeded: same seed same order, other seeds differ, and the correct option is not always first', async () => {
    const dir = path.join(FIX, 'vstar/deepeyes');
    const a = await getAdapter('vstar').load(dir, { skipMediaCheck: true, seed: 0 });
    const b = await getAdapter('vstar').load(dir, { skipMediaCheck: true, seed: 0 });
    expect(b.samples.map((s) => s.options)).toEqual(a.samples.map((s) => s.options));
    const orders = new Set<string>();
    for (let seed = 0; seed < 8; seed++) {
      const r = await getAdapter('vstar').load(dir, { skipMediaCheck: true, seed });
      orders.add(JSON.stringify(r.samples.map((s) => s.answer)));
    }
    expect(orders.size).toBeGreaterThan(1);
    // Over many questions the correct (source index 0) option lands at every position.
    const positions = new Set<number>();
    for (let q = 0; q < 64; q++) positions.add(seededPermutation(4, 0, `vstar-q${q}`).indexOf(0));
    expect([...positions].sort()).toEqual([0, 1, 2, 3]);
  });

  it('reads raw per-image annotations (real V* demo image) with a recorded shuffle', async () => {
    const { samples, info } = await getAdapter('vstar').load(path.join(FIX, 'vstar/raw'), { seed: 3 });
    expect(info.format).toBe('vstar.raw-annotations');
    expect(info.optionOrder).toBe('seeded-shuffle:3');
    expectWellFormed(samples);
    const glass = samples.find((s) => s.qid === 'vstar-direct_attributes.animate_glass')!;
    expect(glass.options![(glass.answer as string).charCodeAt(0) - 65]).toBe('The color of the liquid in the glass is orange.');
    expect(glass.extra!.bbox).toEqual([[870, 300, 120, 180]]);
  });

  it('reads test_questions.jsonl in the official order', async () => {
    const { samples, info } = await getAdapter('vstar').load(path.join(FIX, 'vstar/test_questions'));
    expect(info.optionOrder).toBe('official');
    expectWellFormed(samples);
    expect(samples[0]).toMatchObject({ qid: 'vstar-0', question: 'What is the color of the umbrella?', options: ['blue', 'red', 'green', 'white'], answer: 'B' });
    expect(samples[1]).toMatchObject({ options: ['right', 'left'], answer: 'A', category: 'relative_position' });
  });

  it('parses options on their own lines or inline', () => {
    expect(parseLetteredOptions('Q?\n(A) red\n(B) blue\nAnswer with the option\'s letter from the given choices directly.')).toEqual({ question: 'Q?', options: ['red', 'blue'], trailer: "Answer with the option's letter from the given choices directly." });
    expect(parseLetteredOptions("Q? (A) red car (B) blue (C) green Answer with the option's letter from the given choices directly.")).toMatchObject({ question: 'Q?', options: ['red car', 'blue', 'green'] });
    expect(parseLetteredOptions('no options here')).toBeNull();
  });

  it('errors name the file, the line and the field', async () => {
    const dir = copyFixture('vstar/test_questions');
    const f = path.join(dir, 'test_questions.jsonl');
    const lines = readFileSync(f, 'utf8').trim().split('\n');
    writeFileSync(f, [lines[0], JSON.stringify({ ...JSON.parse(lines[1]!), label: 'Q' })].join('\n') + '\n');
    const e = await loadError('vstar', dir);
    expect(e.message).toContain('test_questions.jsonl');
    expect(e.record).toBe('line 2');
    expect(e.field).toBe('label');
    writeFileSync(f, lines[0] + '\n{"image": \n');
    expect((await loadError('vstar', dir)).message).toMatch(/test_questions\.jsonl, line 2: not valid JSON/);
    rmSync(path.join(dir, 'direct_attributes/sa_0001.jpg'));
    writeFileSync(f, lines[0] + '\n');
    const m = await loadError('vstar', dir);
    expect(m.field).toBe('image');
    expect(m.message).toContain('direct_attributes/sa_0001.jpg');
  });

  it('a folder with no V* data says what it expected', async () => {
    const e = await loadError('vstar', path.join(FIX, 'vsibench/frames'));
    expect(e.message).toMatch(/no V\* data found; expected one of: test_questions\.jsonl/);
    const missing = await loadError('vstar', path.join(tmpRoot, 'does-not-exist'));
    expect(missing.message).toMatch(/does-not-exist.*not found/);
  });
});

describe('TallyQA', () => {
  it('reads the official test.json, with simple/complex subsets', async () => {
    const dir = path.join(FIX, 'tallyqa/official');
    const all = await getAdapter('tallyqa').load(dir);
    expectWellFormed(all.samples);
    expect(all.samples[0]).toMatchObject({ qid: 'tallyqa-30095774', answer: 4, category: 'complex', scorer: 'tallyqa.count' });
    expect((await getAdapter('tallyqa').load(dir, { subset: 'simple' })).samples.map((s) => s.answer)).toEqual([2, 0]);
    expect((await getAdapter('tallyqa').load(dir, { subset: 'complex' })).samples).toHaveLength(1);
    await expect(getAdapter('tallyqa').load(dir, { subset: 'hard' })).rejects.toThrow(/subset must be one of all, simple, complex/);
  });

  it('a bad record names its index and field', async () => {
    const dir = copyFixture('tallyqa/official');
    const f = path.join(dir, 'test.json');
    const data = JSON.parse(readFileSync(f, 'utf8')) as Array<Record<string, unknown>>;
    data[1]!.issimple = 'yes';
    writeFileSync(f, JSON.stringify(data));
    const e = await loadError('tallyqa', dir);
    expect(e.message).toBe("test.json, record 1, field 'issimple': expected true/false, got string \"yes\"");
    rmSync(f);
    expect((await loadError('tallyqa', dir)).message).toMatch(/no TallyQA data found/);
  });

  it('reads the VLMEvalKit TSV with base64 images', async () => {
    const dir = path.join(tmpRoot, 'tally-tsv');
    cpSync(path.join(FIX, 'tallyqa/official'), path.join(tmpRoot, 'tally-src'), { recursive: true });
    const jpg = readFileSync(path.join(tmpRoot, 'tally-src/VG_100K_2/2410408.jpg')).toString('base64');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'tallyqa_data.tsv'), `index\timage\tquestion\tanswer\n0\t${jpg}\tHow many buses?\t2\n1\t0\tHow many wheels?\t6\n`);
    const cache = media();
    const { samples } = await getAdapter('tallyqa').load(dir, { mediaCacheDir: cache });
    expectWellFormed(samples);
    expect(samples.map((s) => s.answer)).toEqual([2, 6]);
    expect(samples[1]!.media.images).toEqual(samples[0]!.media.images);
    expect(samples[0]!.media.images![0]!.startsWith(cache)).toBe(true);
    expect((await sharp(samples[0]!.media.images![0]!).metadata()).width).toBe(32);
  });
});

describe('InfographicsVQA', () => {
  it('reads the official JSON', async () => {
    const { samples } = await getAdapter('infovqa').load(path.join(FIX, 'infovqa/official'));
    expectWellFormed(samples);
    expect(samples[0]).toMatchObject({ qid: 'infovqa-65718', answer: ['45%', '45'], scorer: 'anls', category: 'single span' });
    expect(getScorer(samples[0]!.scorer).score('45', samples[0]!).score).toBe(1);
  });

  it('reads the lmms-eval parquet with embedded image bytes', async () => {
    const cache = media();
    const { samples, info } = await getAdapter('infovqa').load(path.join(FIX, 'infovqa/lmms'), { mediaCacheDir: cache });
    expect(info.format).toBe('infovqa.lmms-eval.parquet');
    expectWellFormed(samples);
    expect(samples[0]!.media.images![0]!.startsWith(cache)).toBe(true);
    expect(readFileSync(samples[0]!.media.images![0]!)).toEqual(readFileSync(path.join(FIX, 'infovqa/official/infographicsvqa_images/20471.jpeg')));
  });

  it('a test-split record without answers is refused', async () => {
    const dir = copyFixture('infovqa/official');
    const f = path.join(dir, 'infographicsVQA_val_v1.0_withQT.json');
    const top = JSON.parse(readFileSync(f, 'utf8')) as { data: Array<Record<string, unknown>> };
    delete top.data[1]!.answers;
    writeFileSync(f, JSON.stringify(top));
    const e = await loadError('infovqa', dir);
    expect(e).toMatchObject({ record: 'data[1]', field: 'answers' });
  });
});

describe('HR-Bench', () => {
  it('reads the VLMEvalKit TSV: base64 images, index references, quoted fields, cycles', async () => {
    const cache = media();
    const { samples } = await getAdapter('hrbench').load(path.join(FIX, 'hrbench'), { mediaCacheDir: cache });
    expectWellFormed(samples);
    expect(samples.map((s) => s.bench)).toEqual(['hrbench4k', 'hrbench4k', 'hrbench4k']);
    expect(samples[1]!.media.images).toEqual(samples[0]!.media.images);
    expect(samples[0]!.media.images).not.toEqual(samples[2]!.media.images);
    expect(samples[2]!.question).toBe('Which sign is closer to the camera:\tthe "STOP" sign or the arrow?');
    expect(samples[2]!.options).toEqual(['STOP', 'arrow']);
    expect(samples.map((s) => s.extra!.cycle_category)).toEqual(['cycle_0', 'cycle_1', 'cycle_0']);
    expect((await sharp(samples[2]!.media.images![0]!).metadata()).format).toBe('png');
  });

  it('a row with a wrong field count or a bad letter is named', async () => {
    const dir = copyFixture('hrbench');
    const f = path.join(dir, 'hr_bench_4k.tsv');
    const lines = readFileSync(f, 'utf8').split('\n');
    writeFileSync(f, [lines[0], lines[1]!.replace('\tB\tsingle', '\tF\tsingle')].join('\n') + '\n');
    expect((await loadError('hrbench', dir)).message).toMatch(/hr_bench_4k\.tsv, row 1 \(line 2\), field 'answer': expected one of the option letters A–D, got "F"/);
    writeFileSync(f, [lines[0], lines[1]!.split('\t').slice(0, 5).join('\t')].join('\n') + '\n');
    expect((await loadError('hrbench', dir)).message).toMatch(/row 1 \(line 2\): has 5 fields but the header has 10/);
    writeFileSync(f, [lines[0], lines[1]!.replace(/\t[A-Za-z0-9+/=]{40,}\t/, '\tnot-an-image\t')].join('\n') + '\n');
    expect(await loadError('hrbench', dir)).toMatchObject({ field: 'image' });
  });
});

describe('TSV reader', () => {
  const collect = async (text: string) => {
    const f = path.join(tmpRoot, `t${n++}.tsv`);
    writeFileSync(f, text);
    const rows: Array<Record<string, string>> = [];
    for await (const r of readTsv(f, tmpRoot)) rows.push(r.record);
    return rows;
  };
  it('handles a BOM, CRLF, quoted tabs/newlines and doubled quotes', async () => {
    expect(await collect('\ufeffa\tb\r\n1\t"x\ty\nz ""q"""\r\n\r\n2\t3\r\n')).toEqual([
      { a: '1', b: 'x\ty\nz "q"' },
      { a: '2', b: '3' },
    ]);
  });
  it('reports an unclosed quote and an empty file', async () => {
    await expect(collect('a\tb\n1\t"never closed\n')).rejects.toThrow(/line 2: a quoted field is never closed/);
    await expect(collect('')).rejects.toThrow(/empty file/);
  });
});

describe('MVBench', () => {
  it('reads a task JSON with pre-extracted frames; gold letter from the answer text', async () => {
    const { samples } = await getAdapter('mvbench').load(path.join(FIX, 'mvbench'));
    expectWellFormed(samples);
    const s = samples[0]!;
    expect(s).toMatchObject({ qid: 'mvbench-object_shuffle.0', category: 'object_shuffle', answer: 'C', isVideo: true, scorer: 'mc.mvbench' });
    expect(s.media.frames!.map((f) => path.basename(f))).toEqual(['5.jpg', '10.jpg', '15.jpg']);
  });

  it('an answer that is not a candidate, or missing media, is an error', async () => {
    const dir = copyFixture('mvbench');
    const f = path.join(dir, 'json/object_shuffle.json');
    const data = JSON.parse(readFileSync(f, 'utf8')) as Array<Record<string, unknown>>;
    writeFileSync(f, JSON.stringify([{ ...data[0], answer: 'Nowhere.' }]));
    expect(await loadError('mvbench', dir)).toMatchObject({ file: 'json/object_shuffle.json', record: 'record 0', field: 'answer' });
    writeFileSync(f, JSON.stringify([{ ...data[0], video: 'video_404.mp4' }]));
    expect((await loadError('mvbench', dir)).message).toMatch(/video_404\.mp4.*not found/);
    await expect(getAdapter('mvbench').load(dir, { tasks: ['action_count'] })).rejects.toThrow(/action_count not found/);
  });
});

describe('VSI-Bench', () => {
  it('routes MCA to mc.vsi and NA to MRA (variant selectable)', async () => {
    const { samples } = await getAdapter('vsibench').load(path.join(FIX, 'vsibench'));
    expectWellFormed(samples);
    expect(samples[0]).toMatchObject({ qid: 'vsibench-0', scorer: 'mra.tis', answer: '4', category: 'object_counting' });
    expect(samples[1]).toMatchObject({ scorer: 'mc.vsi', answer: 'B', options: ['table', 'sofa', 'tv'] });
    expect(samples[0]!.media.frames).toHaveLength(2);
    const lm = await getAdapter('vsibench').load(path.join(FIX, 'vsibench'), { mra: 'lmmsEval' });
    expect(lm.samples[0]!.scorer).toBe('mra.lmmsEval');
  });

  it('an unknown question type is named', async () => {
    const dir = copyFixture('vsibench');
    writeFileSync(path.join(dir, 'test.jsonl'), JSON.stringify({ id: 5, dataset: 'arkitscenes', scene_name: '41069025', question_type: 'object_color', question: 'q', ground_truth: '1' }) + '\n');
    expect(await loadError('vsibench', dir)).toMatchObject({ file: 'test.jsonl', record: 'line 1', field: 'question_type' });
  });
});

describe('Pixel Reasoner eval data', () => {
  it('reads the parquet: bench from the qid, frames for videos', async () => {
    const { samples, info } = await getAdapter('pixel-reasoner').load(path.join(FIX, 'pixel_reasoner/parquet'));
    expect(info.format).toBe('pixel-reasoner.parquet');
    expectWellFormed(samples);
    expect(samples.map((s) => [s.qid, s.bench, s.isVideo, s.scorer])).toEqual([
      ['vstar-0', 'vstar', false, 'pr.boxed'],
      ['mvbench-7', 'mvbench', true, 'pr.boxed'],
    ]);
    expect(samples[1]!.media.frames).toHaveLength(2);
    expect(getScorer('pr.boxed').score('The shirt is black. \\boxed{B}<|im_end|>', samples[0]!).correct).toBe(true);
  });

  it('reads the JSONL form and the rename_imagepath.py layout', async () => {
    const { samples } = await getAdapter('pixel-reasoner').load(path.join(FIX, 'pixel_reasoner/jsonl'));
    expect(samples[0]).toMatchObject({ qid: 'infovqa-3', bench: 'infovqa', answer: ['45%', '45'] });
    const dir = copyFixture('pixel_reasoner/jsonl');
    cpSync(path.join(dir, 'images'), path.join(dir, 'infovqa_images'), { recursive: true });
    rmSync(path.join(dir, 'images'), { recursive: true });
    const renamed = await getAdapter('pixel-reasoner').load(dir);
    expect(renamed.samples[0]!.media.images![0]).toBe(path.join(dir, 'infovqa_images/infovqa_3.jpg'));
  });

  it('a missing image or a bad answer is named', async () => {
    const dir = copyFixture('pixel_reasoner/jsonl');
    const f = path.join(dir, 'infovqa.jsonl');
    const rec = JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;
    writeFileSync(f, JSON.stringify({ ...rec, image: ['images/nope.jpg'] }) + '\n');
    expect(await loadError('pixel-reasoner', dir)).toMatchObject({ record: 'line 1', field: 'image[0]' });
    writeFileSync(f, JSON.stringify({ ...rec, answer: { a: 1 } }) + '\n');
    expect(await loadError('pixel-reasoner', dir)).toMatchObject({ field: 'answer' });
    writeFileSync(f, JSON.stringify(rec) + '\n' + JSON.stringify(rec) + '\n');
    expect((await loadError('pixel-reasoner', dir)).message).toMatch(/duplicate qid "infovqa-3"/);
  });
});

describe('Loupe benchmark folder (loupe-synth)', () => {
  it('reads benchmark.json + samples.jsonl + images/', async () => {
    const { samples, info } = await getAdapter('loupe-synth').load(path.join(FIX, 'loupe-synth'));
    expect(info.format).toBe('loupe-bench@1');
    expectWellFormed(samples);
    expect(samples[0]).toMatchObject({ qid: 'synth-7-00000', bench: 'loupe-synth', answer: '482', isVideo: false, scorer: 'pr.boxed' });
    expect(samples[0]!.extra).toMatchObject({ answerText: '482', needsZoom: true });
    expect(samples[1]).toMatchObject({ isVideo: true, options: ['K', 'R', 'X'], answer: 'B' });
    expect(samples[1]!.media.frames).toHaveLength(2);
  });

  it('schema violations name the line and field', async () => {
    const dir = copyFixture('loupe-synth');
    const f = path.join(dir, 'samples.jsonl');
    const first = JSON.parse(readFileSync(f, 'utf8').split('\n')[0]!) as Record<string, unknown>;
    writeFileSync(f, JSON.stringify({ ...first, image: '../escape.jpg' }) + '\n');
    expect(await loadError('loupe-synth', dir)).toMatchObject({ file: 'samples.jsonl', record: 'line 1', field: 'image' });
    const { image: _drop, ...noMedia } = first;
    writeFileSync(f, JSON.stringify(noMedia) + '\n');
    expect((await loadError('loupe-synth', dir)).message).toMatch(/needs media/);
    writeFileSync(f, JSON.stringify({ ...first, scorer: 'bogus' }) + '\n');
    expect(await loadError('loupe-synth', dir)).toMatchObject({ field: 'scorer' });
    rmSync(path.join(dir, 'benchmark.json'));
    expect((await loadError('loupe-synth', dir)).message).toMatch(/^benchmark\.json: file not found/);
  });

  it('reads what the loupe-synth generator writes', async () => {
    const { generateSynth } = await import('../../../app/synth');
    const dir = path.join(tmpRoot, 'synth-gen');
    const gen = await generateSynth({ seed: 11, n: 2 }, dir, sharpSynthRaster);
    const { samples } = await getAdapter('loupe-synth').load(dir);
    expectWellFormed(samples);
    expect(samples.map((s) => s.qid)).toEqual(gen.samples.map((s) => s.qid));
    expect(samples.map((s) => s.answer)).toEqual(gen.samples.map((s) => s.answer));
  });
});

describe('the question a multiple-choice sample is asked (questionForSample)', () => {
  it("V*: exactly the official test_questions.jsonl text (question, (A) lines, lmms-eval's letter instruction)", async () => {
    const { samples } = await getAdapter('vstar').load(path.join(FIX, 'vstar/test_questions'));
    expect(samples.length).toBeGreaterThan(1);
    for (const s of samples) expect(questionForSample(s)).toBe(s.extra!.text);
  });

  it('VSI-Bench: the data\'s own "A. …" option strings, as lmms-eval joins them', async () => {
    const { samples } = await getAdapter('vsibench').load(path.join(FIX, 'vsibench'));
    const mca = samples.find((s) => s.options)!;
    const raw = mca.extra!.rawOptions as string[];
    expect(questionForSample(mca)).toBe(`${mca.question}\n${raw.join('\n')}\nAnswer with the option's letter from the given choices directly.`);
    const na = samples.find((s) => !s.options)!;
    expect(questionForSample(na)).toBe(na.question);
  });

  it('MVBench: lmms-eval\'s "Question: … Option: (A) …" layout; loupe-synth and other files: the plain layout', async () => {
    const { samples } = await getAdapter('mvbench').load(path.join(FIX, 'mvbench'));
    const q = questionForSample(samples[0]!);
    expect(q.startsWith(`Question: ${samples[0]!.question}\nOption:\n(A) ${samples[0]!.options![0]}\n`)).toBe(true);
    expect(q.endsWith('\nOnly give the best option.')).toBe(true);
    expect(questionForSample({ bench: 'loupe-synth', question: 'Which tag is on the left?', options: ['K', 'R'] })).toBe(questionWithOptions('Which tag is on the left?', ['K', 'R']));
    expect(questionWithOptions('Which tag is on the left?', ['K', 'R'])).toBe('Which tag is on the left?\n(A) K\n(B) R\nAnswer with the option letter.');
    expect(questionForSample({ bench: 'vstar', question: 'q' })).toBe('q');
  });
});

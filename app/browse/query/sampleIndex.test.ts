import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SampleRecord } from '../../contract/trajectory';
import { generateSamples } from '../../../scripts/gen-large-run';
import { compileQuery, matchRow, SampleIndex, SCAN_CHUNK_CHARS, searchableText, type QueryRow, type SortKey } from './index';

let records: SampleRecord[];
let idx: SampleIndex;
let rows: QueryRow[];
const RUN = 'run-a';

function toRow(r: SampleRecord, labels: string[]): QueryRow {
  return {
    run: RUN,
    qid: r.qid,
    bench: r.bench,
    stop: r.stop_reason,
    correct: r.correct,
    score: r.score,
    calls: r.calls,
    tool_errors: r.tool_errors,
    labels,
    ...(r.category !== undefined ? { category: r.category } : {}),
    ...(r.latency_ms !== undefined ? { latency: r.latency_ms } : {}),
  };
}

beforeAll(() => {
  records = [...generateSamples({ n: 3000, seed: 7 })];
  // Some records without category/latency, to exercise missing values.
  records.forEach((r, i) => {
    if (i % 97 === 0) delete r.category;
    if (i % 89 === 0) delete r.latency_ms;
    if (i % 89 === 0 && r.trajectory) delete r.trajectory.latencyMs;
  });
  idx = SampleIndex.from(records, RUN);
  const labels = new Map<string, string[]>();
  records.forEach((r, i) => {
    if (!r.correct && i % 3 === 0) labels.set(`${RUN}\u001f${r.qid}`, i % 2 ? ['wrong_region'] : ['no_zoom', 'reasoning_error']);
  });
  expect(idx.applyLabels(labels)).toBe(0);
  rows = records.map((r) => toRow(r, labels.get(`${RUN}\u001f${r.qid}`) ?? []));
});

const QUERIES = [
  'correct = false and calls > 1 and bench = vstar',
  'label = wrong_region',
  'stop != answer or tool_errors >= 1',
  'category ~ "color"',
  'category ~ pos or category = SIMPLE',
  'not (bench = tallyqa or bench = infovqa) and correct',
  'latency > 2s',
  'latency != 5',
  'category != simple',
  'label = none and not correct',
  'label = any',
  'labels >= 2',
  'labels != 1',
  'label ~ region',
  'label !~ region',
  'qid = tallyqa_000000 or qid ~ _0001',
  'run = RUN-A and score >= 1',
  'stop = max_calls',
  '',
];

describe('SampleIndex.filter', () => {
  it.each(QUERIES)('%s matches the row-by-row evaluation', (q) => {
    const ids = idx.filter(q);
    const ast = compileQuery(q).ast;
    const want = rows.flatMap((r, i) => (matchRow(ast, r) ? [i] : []));
    expect(Array.from(ids)).toEqual(want);
  });

  it('finds what the query says (spot checks against the raw records)', () => {
    const ids = idx.filter('correct = false and calls > 1 and bench = vstar');
    expect(ids.length).toBeGreaterThan(0);
    for (const i of ids) {
      const r = records[i]!;
      expect(r.correct === false && r.calls > 1 && r.bench === 'vstar').toBe(true);
    }
    const noLatency = records.filter((r) => r.latency_ms === undefined).length;
    expect(noLatency).toBeGreaterThan(0);
    expect(idx.filter('latency != 5').length).toBe(records.length); // missing latency is "not 5"
    expect(idx.filter('latency >= 0').length).toBe(records.length - noLatency);
  });

  it('agrees with matchRow on random queries', () => {
    const cmp = fc.oneof(
      fc.tuple(fc.constantFrom('bench', 'category', 'stop'), fc.constantFrom('=', '!=', '~', '!~'), fc.constantFrom('vstar', 'simple', 'answer', 'a', 'max_calls', 'fcp')).map(([f, o, v]) =>
        f === 'stop' && (o === '=' || o === '!=') ? `stop ${o} ${['answer', 'max_calls', 'length'][v.length % 3]}` : `${f} ${o} ${v}`,
      ),
      fc.tuple(fc.constantFrom('calls', 'tool_errors', 'latency', 'score', 'labels'), fc.constantFrom('=', '!=', '<', '<=', '>', '>='), fc.integer({ min: 0, max: 3000 })).map(([f, o, v]) => `${f} ${o} ${f === 'latency' ? v : v % 4}`),
      fc.constantFrom('correct', 'not correct', 'label = wrong_region', 'label = none', 'label ~ zoom'),
    );
    const query = fc.array(fc.tuple(cmp, fc.constantFrom(' and ', ' or ', ' and not ')), { minLength: 1, maxLength: 4 }).map((parts) => parts.map(([c, j], i) => (i ? j : '') + c).join(''));
    fc.assert(
      fc.property(query, (q) => {
        const ast = compileQuery(q).ast;
        expect(Array.from(idx.filter(q))).toEqual(rows.flatMap((r, i) => (matchRow(ast, r) ? [i] : [])));
      }),
      { numRuns: 150 },
    );
  });

  it('restricts to given ids', () => {
    const vstar = idx.filter('bench = vstar');
    const wrong = idx.filter('not correct', vstar);
    expect(Array.from(wrong)).toEqual(Array.from(idx.filter('bench = vstar and not correct')));
  });
});

describe('SampleIndex.sort', () => {
  const ref = (keys: SortKey[]) => {
    const coll = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
    const get = (i: number, f: SortKey['field']): number | string | undefined => {
      const r = rows[i]!;
      if (f === 'label') return r.labels?.length ?? 0;
      if (f === 'correct') return r.correct ? 1 : 0;
      if (f === 'stop') return r.stop;
      return r[f as keyof QueryRow] as number | string | undefined;
    };
    return rows
      .map((_, i) => i)
      .sort((a, b) => {
        for (const k of keys) {
          const x = get(a, k.field);
          const y = get(b, k.field);
          if (x === y) continue;
          if (x === undefined) return 1;
          if (y === undefined) return -1;
          const c = typeof x === 'string' ? coll.compare(x, y as string) || (x < (y as string) ? -1 : 1) : x - (y as number);
          if (c !== 0) return k.dir === 'desc' ? -c : c;
        }
        return a - b;
      });
  };

  it.each<[SortKey[]]>([
    [[{ field: 'bench' }, { field: 'calls', dir: 'desc' }]],
    [[{ field: 'latency', dir: 'desc' }]],
    [[{ field: 'latency' }]],
    [[{ field: 'category', dir: 'desc' }, { field: 'qid', dir: 'desc' }]],
    [[{ field: 'correct' }, { field: 'label', dir: 'desc' }, { field: 'tool_errors', dir: 'desc' }]],
    [[{ field: 'stop' }, { field: 'score' }]],
    // many high-cardinality keys: the packed key would pass 2^53, so the comparator path runs
    [[{ field: 'latency' }, { field: 'qid', dir: 'desc' }, { field: 'score' }, { field: 'latency', dir: 'desc' }, { field: 'qid' }]],
  ])('%j matches a reference sort (missing values last either way)', (keys) => {
    expect(Array.from(idx.sort(keys))).toEqual(ref(keys));
  });

  it('sorts a subset and keeps the input order of ties', () => {
    const ids = Int32Array.from([30, 10, 20, 5]);
    const out = idx.sort([{ field: 'run' }], ids);
    expect(Array.from(out)).toEqual([30, 10, 20, 5]);
  });

  it('sorts qids naturally and is stable by row id', () => {
    const small = SampleIndex.from(
      ['q10', 'q2', 'q1'].map((qid) => ({ ...records[0]!, qid })),
      'r',
    );
    expect(Array.from(small.sort([{ field: 'qid' }])).map((i) => small.row(i).qid)).toEqual(['q1', 'q2', 'q10']);
    expect(Array.from(small.sort([{ field: 'bench' }]))).toEqual([0, 1, 2]);
  });
});

describe('SampleIndex.search', () => {
  const naive = (terms: string[]) => records.flatMap((r, i) => (terms.every((t) => searchableText(r).includes(t)) ? [i] : []));

  it.each([['umbrella'], ['UMBRELLA kitchen'], ['"the answer is"'], ['select frames 3'], ['boxed{b}'], ['zzzz-not-there'], ['\\boxed{6}']])('scan search %s equals a naive substring scan', (q) => {
    const terms = q.match(/"[^"]*"|\S+/g)!.map((t) => t.replace(/"/g, '').toLowerCase());
    expect(Array.from(idx.search(q))).toEqual(naive(terms));
  });

  it('gives the same hits when the text is split into many scan chunks', () => {
    const small = SampleIndex.from(records, RUN, { scanChunkChars: 20_000 });
    expect(SCAN_CHUNK_CHARS).toBeGreaterThan(20_000);
    for (const q of ['answer', 'umbrella kitchen', 'tallyqa', 'zoom into']) expect(Array.from(small.search(q))).toEqual(Array.from(idx.search(q)));
    expect(small.search('answer').length).toBe(naive(['answer']).length);
    // appending and replacing rows rebuilds only what changed, and stays correct
    small.add(RUN, { ...records[1500]!, question: 'a rare-token-xyz here' });
    small.add(RUN, { ...records[0]!, qid: 'appended', question: 'another rare-token-xyz' });
    expect(Array.from(small.search('rare-token-xyz'))).toEqual([1500, records.length]);
  });

  it('token search matches whole words', () => {
    const ids = idx.search('umbrella kitchen', { mode: 'tokens' });
    const want = records.flatMap((r, i) => {
      const words = new Set(searchableText(r).match(/[\p{L}\p{N}_]+/gu));
      return words.has('umbrella') && words.has('kitchen') ? [i] : [];
    });
    expect(Array.from(ids)).toEqual(want);
    expect(ids.length).toBeGreaterThan(0);
    // substring scan also finds "umbrellas"
    expect(idx.search('umbrella kitchen').length).toBeGreaterThanOrEqual(ids.length);
    expect(Array.from(idx.search('"in the kitchen"', { mode: 'tokens' }))).toEqual(naive(['in the kitchen']));
  });

  it('searches within ids and sees rows added later', () => {
    const extra = SampleIndex.from(records.slice(0, 100), 'r');
    const before = extra.search('zebra-crossing').length;
    expect(before).toBe(0);
    extra.add('r', { ...records[0]!, qid: 'new', question: 'Is there a zebra-crossing?' });
    expect(Array.from(extra.search('zebra-crossing'))).toEqual([100]);
    // a re-recorded row in the middle: its new text is found, its old text is gone
    extra.add('r', { ...records[5]!, question: 'Where is the giraffe-statue?' });
    expect(Array.from(extra.search('giraffe-statue'))).toEqual([5]);
    expect(Array.from(extra.search('zebra-crossing'))).toEqual([100]);
    const vstar = idx.filter('bench = vstar');
    expect(Array.from(idx.search('color', { ids: vstar }))).toEqual(Array.from(vstar).filter((i) => searchableText(records[i]!).includes('color')));
  });
});

describe('SampleIndex rows', () => {
  it('replaces a re-recorded sample in place and reports its row', () => {
    const i = SampleIndex.from(records.slice(0, 10), 'r');
    const id = i.add('r', { ...records[3]!, correct: !records[3]!.correct });
    expect(id).toBe(3);
    expect(i.size).toBe(10);
    expect(i.row(3).correct).toBe(!records[3]!.correct);
    expect(i.rowOf('r', records[3]!.qid)).toBe(3);
    expect(() => i.row(10)).toThrow(/out of range/);
  });

  it('restored from columns: finds rows by key, takes labels and replaces a re-recorded sample in place (the key map is built on first use)', () => {
    const src = SampleIndex.from(records.slice(0, 50), 'r');
    const i = SampleIndex.fromColumns(src.columns(), () => records.slice(0, 50).map(searchableText));
    expect(i.rowOf('r', records[7]!.qid)).toBe(7);
    expect(i.rowOf('r', 'no-such-qid')).toBeUndefined();
    expect(i.applyLabels(new Map([[`r\u001f${records[9]!.qid}`, ['wrong_region']], ['r\u001fmissing', ['x']]]))).toBe(1);
    expect(i.row(9).labels).toEqual(['wrong_region']);
    expect(i.row(8).labels).toEqual([]);
    expect(i.add('r', { ...records[3]!, correct: !records[3]!.correct })).toBe(3);
    expect(i.size).toBe(50);
    expect(i.add('r', { ...records[60]! })).toBe(50);
    expect(i.rowOf('r', records[60]!.qid)).toBe(50);
  });

  it('restored from columns: rows added later reuse the codes of values already there (the value maps are built on first add)', () => {
    const src = SampleIndex.from(records.slice(0, 50), 'r');
    const i = SampleIndex.fromColumns(src.columns(), () => records.slice(0, 50).map(searchableText));
    const before = i.columns();
    const known = records.slice(0, 50).find((r) => r.bench === records[60]!.bench)!;
    expect(i.add('r', { ...records[60]!, bench: known.bench })).toBe(50);
    const after = i.columns();
    // No new dictionary entry for a bench or run the index already had; one for the new qid.
    expect(after.bench.values).toEqual(before.bench.values);
    expect(after.run.values).toEqual(['r']);
    expect(after.bench.codes[50]).toBe(before.bench.values.indexOf(known.bench));
    expect(after.qid.values).toEqual([...before.qid.values, records[60]!.qid]);
    expect(i.select({ query: `bench = ${known.bench}`, search: '', sort: [] })).toContain(50);
    expect(i.row(50).qid).toBe(records[60]!.qid);
  });

  it('a repeated filter gives its kept result until a row or a label changes', () => {
    const i = SampleIndex.from(records.slice(0, 40), 'r');
    const wrong = i.filter('correct = false');
    const again = i.filter('correct = false');
    expect(Array.from(again)).toEqual(Array.from(wrong));
    again.fill(-1); // the caller owns what it got: the kept result is not handed out
    expect(Array.from(i.filter('correct = false'))).toEqual(Array.from(wrong));
    // A label (setLabels and applyLabels) changes what `label = …` matches.
    expect(i.filter('label = wrong_region').length).toBe(0);
    i.setLabels(wrong[0]!, ['wrong_region']);
    expect(Array.from(i.filter('label = wrong_region'))).toEqual([wrong[0]]);
    i.applyLabels(new Map([[`r\u001f${records[1]!.qid}`, ['wrong_region']]]));
    expect(Array.from(i.filter('label = wrong_region'))).toEqual([1]);
    // A row added or replaced changes it too.
    const flipped = wrong[0]!;
    i.add('r', { ...records[flipped]!, correct: true });
    expect(Array.from(i.filter('correct = false'))).toEqual(Array.from(wrong).slice(1));
    i.add('r', { ...records[60]!, correct: false });
    expect(Array.from(i.filter('correct = false'))).toEqual([...Array.from(wrong).slice(1), 40]);
  });

  it('refuses restored columns with a repeated value in a small dictionary', () => {
    const c = SampleIndex.from(records.slice(0, 20), 'r').columns();
    c.bench.values.push(c.bench.values[0]!);
    expect(() => SampleIndex.fromColumns(c, () => [])).toThrow(/column bench: repeated values/);
  });

  it('refuses restored columns with a row that has no qid', () => {
    const c = SampleIndex.from(records.slice(0, 5), 'r').columns();
    c.qid.codes[2] = -1;
    expect(() => SampleIndex.fromColumns(c, () => [])).toThrow(/row 2 has no qid/);
  });

  it('select = filter → search → sort; facets count values', () => {
    const ids = idx.select({ query: 'bench = vstar', search: 'color', sort: [{ field: 'calls', dir: 'desc' }] });
    const calls = Array.from(ids).map((i) => idx.row(i).calls);
    expect(calls).toEqual([...calls].sort((a, b) => b - a));
    expect(Array.from(ids).every((i) => idx.row(i).bench === 'vstar')).toBe(true);
    const f = idx.facet('bench');
    expect(f.reduce((s, x) => s + x.count, 0)).toBe(records.length);
    expect(f.find((x) => x.value === 'tallyqa')!.count).toBe(records.filter((r) => r.bench === 'tallyqa').length);
    expect(idx.facet('category').find((x) => x.value === null)!.count).toBe(records.filter((r) => r.category === undefined).length);
  });

  it('throws QueryError for bad queries', () => {
    expect(() => idx.filter('bench =')).toThrow(/expected a value/);
  });
});

describe('search by image file name', () => {
  it('finds a sample by the image name its record keeps (extra.image / images) and by its id', () => {
    const base = { bench: 'vstar', question: 'What colour is the cap?', answer: 'A', prediction: 'A', score: 1, correct: true, stop_reason: 'answer' as const, calls: 0, tool_errors: 0 };
    const idx = new SampleIndex();
    idx.add('r', { ...base, qid: 'vstar-direct_attributes.sa_30411', extra: { image: 'sa_30411.jpg' } });
    idx.add('r', { ...base, qid: 'tallyqa-7', extra: { images: ['VG_100K/2354786.jpg'] } });
    expect(Array.from(idx.search('sa_30411.jpg'))).toEqual([0]);
    expect(Array.from(idx.search('2354786.jpg'))).toEqual([1]);
    expect(Array.from(idx.search('tallyqa-7'))).toEqual([1]);
  });
});

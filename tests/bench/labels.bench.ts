/**
 * Sample index, query, search, statistics and label fold over a synthetic 50 000-sample run
 * (scripts/gen-large-run.ts, seed 1). Prints one row per operation: median wall time over `reps`.
 *
 *   node --import tsx -e "import('./tests/bench/labels.bench.ts').then(async m => console.table(await m.bench()))"
 */
import type { SampleRecord } from '../../app/contract/trajectory';
import { agreementReport, foldLabels, labelsBySample } from '../../app/labels';
import { compileQuery, SampleIndex } from '../../app/browse/query';
import { accuracy, accuracyByToolUse, accuracyTable, pairedCompare, toolUse } from '../../app/sweeps/stats';
import { generateLabelEvents, generateSamples } from '../../scripts/gen-large-run';

const N = Number(process.env.LOUPE_BENCH_N ?? 50_000);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Median wall time and median CPU time (user + system of this process; steadier on a busy machine). */
function time<T>(fn: () => T, reps: number): { ms: number; cpu: number; out: T } {
  let out!: T;
  const ts: number[] = [];
  const cs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    out = fn();
    ts.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cs.push((c.user + c.system) / 1000);
  }
  return { ms: median(ts), cpu: median(cs), out };
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  const add = (op: string, t: { ms: number; cpu: number }, reps: number, result: string | number, note = ''): void => {
    rows.push({ op, wall_ms: Math.round(t.ms * 100) / 100, cpu_ms: Math.round(t.cpu * 100) / 100, reps, result, note });
  };

  const gen = time(() => [...generateSamples({ n: N, seed: 1 })], 1);
  const records: SampleRecord[] = gen.out;
  add('generate samples (in memory)', gen, 1, records.length);

  const lines = records.map((r) => JSON.stringify(r));
  const bytes = lines.reduce((s, l) => s + l.length + 1, 0);
  const parse = time(() => lines.map((l) => JSON.parse(l) as SampleRecord), 1);
  add('JSON.parse samples.jsonl lines', parse, 1, `${(bytes / 1e6).toFixed(1)} MB`);

  const gc = (globalThis as { gc?: () => void }).gc;
  const build = time(() => SampleIndex.from(records, 'synthetic-50k-s1'), 3);
  add('SampleIndex build', build, 3, build.out.size, 'columns + lower-cased search text per row');
  gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const idx = SampleIndex.from(records, 'synthetic-50k-s1');
  gc?.();
  const heapIdx = process.memoryUsage().heapUsed - heap0;

  const labels = generateLabelEvents('synthetic-50k-s1', records, 1);
  const foldT = time(() => foldLabels([{ events: labels.a }, { events: labels.b }]), 5);
  add('label fold', foldT, 5, `${labels.a.length + labels.b.length} events`);
  const apply = time(() => idx.applyLabels(labelsBySample(foldT.out)), 5);
  add('attach labels to index', apply, 5, `${labelsBySample(foldT.out).size} samples`);
  const agr = time(() => agreementReport(foldT.out, { annotators: ['annotator-a', 'annotator-b'] }), 5);
  add('agreement report (2 annotators)', agr, 5, `κ primary ${agr.out.primary.kappa.toFixed(3)} over ${agr.out.units}`);

  const queries = [
    'correct = false and calls > 1 and bench = vstar',
    'stop != answer or tool_errors >= 1',
    'category ~ "attr" and not correct',
    'label = wrong_region',
    '(bench = tallyqa or bench = vsibench) and latency > 2s and labels = 0',
    'qid ~ 00042',
  ];
  for (const q of queries) {
    const c = compileQuery(q);
    const r = time(() => idx.filter(c), 21);
    add(`filter: ${q}`, r, 21, r.out.length);
  }
  const parseQ = time(() => compileQuery(queries[4]!), 101);
  add('parse + compile a query', parseQ, 101, '');

  const s1 = time(() => idx.sort([{ field: 'bench' }, { field: 'calls', dir: 'desc' }, { field: 'latency' }]), 7);
  add('sort all: bench ↑, calls ↓, latency ↑', s1, 7, s1.out.length);
  const s2 = time(() => idx.sort([{ field: 'qid', dir: 'desc' }]), 7);
  add('sort all: qid ↓ (natural)', s2, 7, s2.out.length);

  // Full-text search: scan (one big string + indexOf) vs inverted index of words.
  const prepScan = time(() => {
    idx.add('synthetic-50k-s1', records[0]!); // bumps the version: next search rebuilds its buffer
    idx.prepareScan();
  }, 3);
  add('search prep: scan buffer (join all text)', prepScan, 3, '');
  const prepTok = time(() => {
    idx.add('synthetic-50k-s1', records[0]!);
    idx.prepareTokens();
  }, 1);
  add('search prep: inverted word index', prepTok, 1, '');
  idx.prepareScan();
  for (const q of ['umbrella', 'umbrella kitchen', '"the answer is"', 'select frames', 'zebra']) {
    const sc = time(() => idx.search(q), 11);
    const tk = time(() => idx.search(q, { mode: 'tokens' }), 11);
    add(`search scan: ${q}`, sc, 11, sc.out.length);
    add(`search tokens: ${q}`, tk, 11, tk.out.length);
  }
  const sel = time(() => idx.select({ query: 'not correct', search: 'umbrella', sort: [{ field: 'latency', dir: 'desc' }] }), 11);
  add('select: filter + search + sort', sel, 11, sel.out.length);

  const acc = time(() => accuracy(records, { seed: 1 }), 3);
  add('accuracy + bootstrap CI (1000 resamples)', acc, 3, `${acc.out.accuracy.toFixed(4)} [${acc.out.ci.lo.toFixed(4)}, ${acc.out.ci.hi.toFixed(4)}]`);
  const tab = time(() => accuracyTable(records, ['bench', 'category'], { seed: 1 }), 3);
  add('accuracy table bench × category (bootstrap)', tab, 3, `${tab.out.length} groups`);
  const tu = time(() => toolUse(records), 5);
  add('tool-use stats', tu, 5, `RaPR ${tu.out.rapr.toFixed(3)}`);
  const split = time(() => accuracyByToolUse(records, { seed: 1 }), 3);
  add('accuracy with vs without tools', split, 3, `Δ ${split.out.difference.delta.toFixed(3)}`);
  const other = [...generateSamples({ n: N, seed: 2 })];
  const pc = time(() => pairedCompare(records, other, { seed: 1 }), 3);
  add('paired compare + McNemar (2 runs)', pc, 3, `p ${pc.out.mcnemar.p.toPrecision(3)}`);

  add('index heap (approx.)', { ms: 0, cpu: 0 }, 1, `${(heapIdx / 1e6).toFixed(0)} MB`, gc ? 'heapUsed delta of one index (before search buffers)' : 'run node with --expose-gc for this number');
  return rows;
}

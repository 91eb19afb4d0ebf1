/**
 * Results of runs as the `report` command and `eval --json` print them: the shards of one run merged
 * (one record per qid, the last one written wins), accuracy with bootstrap CIs per bench and category,
 * RaPR, calls per sample, tool error rate and stop reasons.
 */
import type { RunManifest, SampleRecord } from '../../contract/trajectory';
import type { RunStore } from '../../workspace/runStore';
import { accuracy, accuracyTable, toolUse, type GroupRow } from '../stats';
import { splitRunId } from '../plan';

export interface RunGroup {
  /** The name the user gave (a run name merges its shards; a full shard id selects one). */
  ref: string;
  runs: Array<{ id: string; manifest: RunManifest; records: number; issues: number }>;
  /** One record per qid. */
  records: SampleRecord[];
  /** Records that repeated a qid (across shards or after a retry) and were superseded. */
  superseded: number;
  /** Samples the manifests expect in total (sum over shards). */
  expected: number;
  /** Shard indices of the shard count that have no run folder. */
  missingShards: number[];
}

/** Find the run(s) for `ref`: the run itself, or every `ref.shard-<i>of<n>` folder. Throws naming what exists. */
export async function loadRunGroup(store: RunStore, ref: string): Promise<RunGroup> {
  const all = await store.listRuns();
  const exact = all.find((r) => r.id === ref);
  const shards = all.filter((r) => {
    const s = splitRunId(r.id);
    return s.shard && s.name === ref;
  });
  const picked = exact ? [exact] : shards.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
  if (!picked.length) {
    const names = [...new Set(all.map((r) => splitRunId(r.id).name))].slice(0, 20);
    throw new Error(`no run named ${JSON.stringify(ref)} in ${store.runsDir}${names.length ? ` (runs there: ${names.join(', ')})` : ' (it has no runs)'}`);
  }
  const runs: RunGroup['runs'] = [];
  const byQid = new Map<string, SampleRecord>();
  let superseded = 0;
  let expected = 0;
  let count = 0;
  const have = new Set<number>();
  for (const r of picked) {
    if (!r.manifest) throw new Error(`run ${r.id}: ${r.error ?? 'manifest unreadable'}`);
    const { records, issues } = await store.readSamples(r.id);
    for (const rec of records) {
      if (byQid.has(rec.qid)) superseded++;
      byQid.set(rec.qid, rec);
    }
    runs.push({ id: r.id, manifest: r.manifest, records: records.length, issues: issues.length });
    expected += r.manifest.bench?.n ?? 0;
    if (r.manifest.shard) {
      count = r.manifest.shard.count;
      have.add(r.manifest.shard.index);
    }
  }
  const missingShards = exact ? [] : Array.from({ length: count }, (_, i) => i).filter((i) => !have.has(i));
  return { ref, runs, records: [...byQid.values()], superseded, expected, missingShards };
}

/** The name of the one interval method: the same k of n gives the same interval in every table and door. */
export const INTERVAL_METHOD = 'wilson-95';

export interface RunSummary {
  run: string;
  /** Comma-separated benchmark ids (one for a plain run). */
  bench: string;
  model: string;
  dialect: string;
  prompt: string;
  /** Samples recorded (one per qid). */
  n: number;
  /** Samples the run(s) should have when complete. */
  expected: number;
  complete: boolean;
  correct: number;
  accuracy: number;
  /** 95 % Wilson score interval of `accuracy` (see `interval`). */
  ci95: [number, number];
  /** How every `ci95` here is computed: the one interval method Loupe shows everywhere. */
  interval: typeof INTERVAL_METHOD;
  mean_score: number;
  /** RaPR: share of samples with at least one tool call. */
  tool_use_rate: number;
  calls_per_sample: number;
  tool_error_rate: number;
  stop_reasons: Record<string, number>;
  shards: string[];
  missing_shards: number[];
  by_bench: Array<{ bench: string; n: number; accuracy: number; ci95: [number, number]; rapr: number }>;
  by_category: Array<{ bench: string; category: string | null; n: number; accuracy: number; ci95: [number, number]; rapr: number; calls_per_sample: number }>;
}

const nz = (x: number) => (Number.isFinite(x) ? x : 0);

export function summarize(g: RunGroup): RunSummary {
  const rows = g.records;
  const acc = accuracy(rows);
  const tu = toolUse(rows);
  const m = g.runs[0]!.manifest;
  const benches = [...new Set(rows.map((r) => r.bench))].sort();
  const byBench: GroupRow[] = accuracyTable(rows, ['bench']);
  const byCat: GroupRow[] = accuracyTable(rows, ['bench', 'category']);
  return {
    run: g.ref,
    bench: benches.length ? benches.join(',') : m.bench?.id ?? '',
    model: String(m.model.id),
    dialect: m.dialect,
    prompt: m.prompt,
    n: rows.length,
    expected: g.expected,
    complete: rows.length >= g.expected && g.missingShards.length === 0,
    correct: acc.correct,
    accuracy: nz(acc.accuracy),
    ci95: [nz(acc.wilson.lo), nz(acc.wilson.hi)],
    interval: INTERVAL_METHOD,
    mean_score: nz(acc.meanScore),
    tool_use_rate: nz(tu.rapr),
    calls_per_sample: nz(tu.callsPerSample),
    tool_error_rate: nz(tu.toolErrorRate),
    stop_reasons: tu.stopReasons,
    shards: g.runs.map((r) => r.id),
    missing_shards: g.missingShards,
    by_bench: byBench.map((r) => ({ bench: r.key['bench'] ?? '', n: r.n, accuracy: nz(r.accuracy), ci95: [nz(r.wilson.lo), nz(r.wilson.hi)], rapr: nz(r.rapr) })),
    by_category: byCat.map((r) => ({
      bench: r.key['bench'] ?? '',
      category: r.key['category'] ?? null,
      n: r.n,
      accuracy: nz(r.accuracy),
      ci95: [nz(r.wilson.lo), nz(r.wilson.hi)],
      rapr: nz(r.rapr),
      calls_per_sample: nz(r.callsPerSample),
    })),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}`;

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), w.map((n) => '-'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}

/** The human-readable report of one run (or merged shards). */
export function formatSummary(s: RunSummary): string {
  const out: string[] = [];
  out.push(`run ${s.run}  model ${s.model}  dialect ${s.dialect}  prompt ${s.prompt}`);
  if (s.shards.length > 1 || s.missing_shards.length) out.push(`shards merged: ${s.shards.join(', ')}${s.missing_shards.length ? `  (missing shard ${s.missing_shards.join(', ')})` : ''}`);
  out.push(`samples ${s.n}/${s.expected}${s.complete ? '' : '  (incomplete: resume with the same --run)'}`);
  out.push('');
  out.push(
    table(
      ['bench / category', 'n', 'acc %', '95% CI (Wilson)', 'RaPR %', 'calls/sample'],
      [
        ...s.by_bench.flatMap((b) => [
          [b.bench, String(b.n), pct(b.accuracy), `${pct(b.ci95[0])}–${pct(b.ci95[1])}`, pct(b.rapr), ''],
          ...s.by_category
            .filter((c) => c.bench === b.bench && c.category !== null)
            .map((c) => [`  ${c.category}`, String(c.n), pct(c.accuracy), `${pct(c.ci95[0])}–${pct(c.ci95[1])}`, pct(c.rapr), c.calls_per_sample.toFixed(2)]),
        ]),
        ['all', String(s.n), pct(s.accuracy), `${pct(s.ci95[0])}–${pct(s.ci95[1])}`, pct(s.tool_use_rate), s.calls_per_sample.toFixed(2)],
      ],
    ),
  );
  out.push('');
  out.push(`tool error rate ${pct(s.tool_error_rate)}%  mean score ${s.mean_score.toFixed(4)}`);
  out.push(`stop reasons: ${Object.entries(s.stop_reasons).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ') || '(none)'}`);
  return out.join('\n');
}

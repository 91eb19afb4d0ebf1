/**
 * indexStats (one pass over the index's columns) gives exactly the numbers of the row-based statistics in
 * app/sweeps/stats for the same rows: whole runs, filters, empty results, several runs, missing categories.
 */
import { describe, expect, it } from 'vitest';
import { generateSamples } from '../../../scripts/gen-large-run';
import type { SampleRecord } from '../../contract/trajectory';
import { accuracy, accuracyByToolUse, accuracyTable, toolUse, type StatRow } from '../../sweeps/stats';
import { indexStats } from './indexStats';
import { SampleIndex } from './sampleIndex';


function expected(rows: StatRow[]) {
  const group = (key: Record<string, string | null>, rs: StatRow[]) => {
    const a = accuracy(rs, { resamples: 1 });
    const tu = toolUse(rs);
    return { key, n: a.n, correct: a.correct, accuracy: a.accuracy, wilson: a.wilson, rapr: tu.rapr, callsPerSample: tu.callsPerSample, toolErrorRate: tu.toolErrorRate };
  };
  const tu = toolUse(rows);
  const split = accuracyByToolUse(rows, { resamples: 1 });
  const fromTable = (g: ReturnType<typeof accuracyTable>[number]) => ({ key: g.key, n: g.n, correct: g.correct, accuracy: g.accuracy, wilson: g.wilson, rapr: g.rapr, callsPerSample: g.callsPerSample, toolErrorRate: g.toolErrorRate });
  return {
    overall: group({}, rows),
    byBench: accuracyTable(rows, ['bench'], { resamples: 1 }).map(fromTable),
    byCategory: accuracyTable(rows, ['bench', 'category'], { resamples: 1 }).map(fromTable),
    toolUse: { n: tu.n, rapr: tu.rapr, callsPerSample: tu.callsPerSample, toolErrorRate: tu.toolErrorRate, stopReasons: tu.stopReasons, callHistogram: tu.callHistogram },
    withTool: { n: split.withTool.n, correct: split.withTool.correct, accuracy: split.withTool.accuracy, wilson: split.withTool.wilson },
    withoutTool: { n: split.withoutTool.n, correct: split.withoutTool.correct, accuracy: split.withoutTool.accuracy, wilson: split.withoutTool.wilson },
  };
}

const records = (n: number, seed: number): SampleRecord[] => [...generateSamples({ n, seed })];

describe('indexStats', () => {
  const recs = records(3000, 5);
  // Some rows without a category, one with many calls and errors.
  recs[7] = { ...recs[7]!, category: undefined };
  recs[8] = { ...recs[8]!, category: undefined, calls: 9, tool_errors: 4 };
  const index = SampleIndex.from(recs, 'r1');

  for (const q of ['', 'correct = false and calls > 1', 'bench = vstar and stop != answer', 'tool_errors >= 1 or latency > 20s', 'calls = 0', 'qid = nothing-matches']) {
    it(`matches the row-based statistics for ${JSON.stringify(q)}`, () => {
      const ids = q ? index.filter(q) : index.all();
      const rows = Array.from(ids, (i) => index.statRow(i));
      const got = indexStats(index, q ? ids : undefined);
      expect(got).toEqual(expected(rows));
      if (q === 'qid = nothing-matches') expect(got.overall.n).toBe(0);
    });
  }

  it('matches over several runs pooled into one index', () => {
    const pooled = SampleIndex.concat([index, SampleIndex.from(records(500, 9), 'r2')]);
    const rows = Array.from(pooled.all(), (i) => pooled.statRow(i));
    expect(indexStats(pooled)).toEqual(expected(rows));
    expect(indexStats(pooled).overall.n).toBe(3500);
  });
});

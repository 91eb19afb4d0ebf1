import { describe, expect, it } from 'vitest';
import { currentLabelRows, foldLabels, labelCounts, labelsBySample, parseUnitKey, sampleKey, unitKey, type LabelEvent } from '../../../app/labels';

let t = 0;
const e = (who: string, qid: string, label: string, op: 'add' | 'remove' = 'add', extra: Partial<LabelEvent> = {}): LabelEvent => ({
  v: 1,
  who,
  at: new Date(Date.UTC(2026, 0, 1) + 1000 * t++).toISOString(),
  run: 'r1',
  qid,
  label,
  op,
  ...extra,
});

describe('foldLabels', () => {
  it('applies add/remove in file order per annotator and unit', () => {
    const fold = foldLabels([
      e('a', 'q1', 'wrong_region'),
      e('a', 'q1', 'no_zoom'),
      e('a', 'q1', 'wrong_region', 'remove'),
      e('a', 'q1', 'wrong_region'), // re-added: now after no_zoom
      e('a', 'q2', 'grader_error'),
      e('a', 'q2', 'grader_error', 'remove'),
      e('a', 'q3', 'no_zoom', 'remove'), // removing an absent label is a no-op
    ]);
    expect([...fold.keys()]).toEqual([unitKey('r1', 'q1')]);
    const list = fold.get(unitKey('r1', 'q1'))!.get('a')!;
    expect(list.map((c) => c.label)).toEqual(['no_zoom', 'wrong_region']);
    expect(list[0]!.seq).toBeLessThan(list[1]!.seq);
  });

  it('keeps step labels apart from sample labels and annotators apart', () => {
    const fold = foldLabels([e('a', 'q1', 'wrong_region', 'add', { step: 0 }), e('a', 'q1', 'reasoning_error'), e('b', 'q1', 'wrong_region', 'add', { step: 0 })]);
    expect(fold.size).toBe(2);
    const step0 = fold.get(unitKey('r1', 'q1', 0))!;
    expect([...step0.keys()]).toEqual(['a', 'b']);
    expect(parseUnitKey(unitKey('r1', 'q1', 0))).toEqual({ run: 'r1', qid: 'q1', step: 0 });
    expect(parseUnitKey(unitKey('r1', 'q1'))).toEqual({ run: 'r1', qid: 'q1', step: null });
  });

  it('updates notes when a present label is added again with a note', () => {
    const fold = foldLabels([e('a', 'q1', 'no_zoom', 'add', { note: 'first' }), e('a', 'q1', 'no_zoom', 'add', { note: 'tiny sign, needed zoom' }), e('a', 'q1', 'no_zoom')]);
    const c = fold.get(unitKey('r1', 'q1'))!.get('a')![0]!;
    expect(c.note).toBe('tiny sign, needed zoom');
  });

  it('gives per-sample label sets (union over steps and annotators), rows and counts', () => {
    const fold = foldLabels([
      e('a', 'q1', 'wrong_region', 'add', { step: 1 }),
      e('b', 'q1', 'no_zoom'),
      e('a', 'q2', 'no_zoom'),
      e('b', 'q2', 'no_zoom'),
    ]);
    const by = labelsBySample(fold);
    expect(by.get(sampleKey('r1', 'q1'))).toEqual(['no_zoom', 'wrong_region']);
    expect(labelsBySample(fold, ['a']).get(sampleKey('r1', 'q1'))).toEqual(['wrong_region']);
    expect(Object.fromEntries(labelCounts(fold))).toEqual({ no_zoom: 2, wrong_region: 1 });
    expect(labelCounts(fold, 'other').size).toBe(0);
    const rows = currentLabelRows(fold);
    expect(rows.map((r) => `${r.qid}/${r.step ?? '-'}/${r.annotator}/${r.label}`)).toEqual(['q1/-/b/no_zoom', 'q1/1/a/wrong_region', 'q2/-/a/no_zoom', 'q2/-/b/no_zoom']);
  });
});

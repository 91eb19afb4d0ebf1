import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvField, currentLabelsToCsv, currentLabelsToJsonl, eventsToCsv, eventsToJsonl, foldLabels, LabelEventSchema, parseCsv, toCsv, type LabelEvent } from '../../../app/labels';

const events: LabelEvent[] = [
  { v: 1, who: 'alice', at: '2026-01-01T00:00:00.000Z', run: 'r1', qid: 'q,1', label: 'wrong_region', op: 'add', note: 'says "left", means right' },
  { v: 1, who: 'alice', at: '2026-01-01T00:00:01.000Z', run: 'r1', qid: 'q2', step: 2, label: 'no_zoom', op: 'add', note: 'line one\nline two' },
  { v: 1, who: 'bob', at: '2026-01-01T00:00:02.000Z', run: 'r1', qid: 'q2', label: 'no_zoom', op: 'add', note: ' padded ' },
];

describe('CSV quoting', () => {
  it('quotes only when needed and doubles quotes', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\rhere')).toBe('"cr\rhere"');
    expect(csvField(' lead')).toBe('" lead"');
    expect(csvField(undefined)).toBe('');
    expect(csvField(3)).toBe('3');
    expect(csvField({ a: 1 })).toBe('"{""a"":1}"');
  });

  it('guards spreadsheet formulas only when asked', () => {
    expect(csvField('=SUM(A1)')).toBe('=SUM(A1)');
    expect(csvField('=SUM(A1)', { guardFormulas: true })).toBe("'=SUM(A1)");
    expect(csvField('-1,2', { guardFormulas: true })).toBe(`"'-1,2"`);
  });

  it('writes CRLF lines and round-trips arbitrary text through parseCsv', () => {
    expect(toCsv(['a', 'b'], [['1', 'x,y']])).toBe('a,b\r\n1,"x,y"\r\n');
    fc.assert(
      fc.property(fc.array(fc.array(fc.string({ unit: 'grapheme-ascii' }), { minLength: 2, maxLength: 2 }), { maxLength: 8 }), (rows) => {
        const text = toCsv(['h1', 'h2'], rows);
        expect(parseCsv(text)).toEqual([['h1', 'h2'], ...rows]);
      }),
    );
  });

  it('names the line of an unterminated quote', () => {
    expect(() => parseCsv('a,b\n1,"open\n2,3\n')).toThrow(/line 2/);
  });
});

describe('label exports', () => {
  it('events CSV has one row per event with quoted notes', () => {
    const rows = parseCsv(eventsToCsv(events));
    expect(rows[0]).toEqual(['who', 'at', 'run', 'qid', 'step', 'label', 'op', 'note']);
    expect(rows).toHaveLength(4);
    expect(rows[1]).toEqual(['alice', '2026-01-01T00:00:00.000Z', 'r1', 'q,1', '', 'wrong_region', 'add', 'says "left", means right']);
    expect(rows[2]![4]).toBe('2');
    expect(rows[2]![7]).toBe('line one\nline two');
    expect(rows[3]![7]).toBe(' padded ');
  });

  it('events JSONL parses back to the same events', () => {
    const lines = eventsToJsonl(events).trimEnd().split('\n');
    expect(lines.map((l) => LabelEventSchema.parse(JSON.parse(l)))).toEqual(events);
  });

  it('current-label exports reflect the fold', () => {
    const fold = foldLabels([...events, { ...events[0]!, op: 'remove' as const, at: '2026-01-01T00:00:03.000Z' }]);
    const rows = parseCsv(currentLabelsToCsv(fold));
    expect(rows[0]).toEqual(['run', 'qid', 'step', 'annotator', 'label', 'at', 'note']);
    expect(rows.slice(1).map((r) => `${r[1]}/${r[2]}/${r[3]}`)).toEqual(['q2//bob', 'q2/2/alice']);
    const jl = currentLabelsToJsonl(fold).trimEnd().split('\n').map((l) => JSON.parse(l) as { annotator: string; step: number | null });
    expect(jl.map((r) => [r.annotator, r.step])).toEqual([
      ['bob', null],
      ['alice', 2],
    ]);
  });
});

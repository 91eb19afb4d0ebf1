import { describe, expect, it } from 'vitest';
import { agreementReport, cohenKappa, cohenKappaFromMatrix, fleissKappa, fleissKappaFromRatings, foldLabels, type LabelEvent } from '../../../app/labels';

/** Expand a 2×2 yes/no table into two rating lists. */
function fromTable(yy: number, yn: number, ny: number, nn: number): [string[], string[]] {
  const a: string[] = [];
  const b: string[] = [];
  const push = (n: number, x: string, y: string) => {
    for (let i = 0; i < n; i++) {
      a.push(x);
      b.push(y);
    }
  };
  push(yy, 'yes', 'yes');
  push(yn, 'yes', 'no');
  push(ny, 'no', 'yes');
  push(nn, 'no', 'no');
  return [a, b];
}

describe("Cohen's kappa (textbook examples)", () => {
  it('50 proposals: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no → po 0.7, pe 0.5, κ 0.4', () => {
    // po = 35/50 = 0.7; A yes 25/50, B yes 30/50: pe = .5·.6 + .5·.4 = 0.5; κ = (.7 − .5)/(1 − .5) = 0.4
    const r = cohenKappa(...fromTable(20, 5, 10, 15));
    expect(r.po).toBeCloseTo(0.7, 12);
    expect(r.pe).toBeCloseTo(0.5, 12);
    expect(r.kappa).toBeCloseTo(0.4, 12);
  });

  it('same observed agreement, different kappa: 45/15/25/15 → 0.1304, 25/35/5/35 → 0.2593', () => {
    // case 1: pe = .6·.7 + .4·.3 = .54, κ = .06/.46; case 2: pe = .6·.3 + .4·.7 = .46, κ = .14/.54
    expect(cohenKappa(...fromTable(45, 15, 25, 15)).kappa).toBeCloseTo(0.06 / 0.46, 12);
    expect(cohenKappa(...fromTable(25, 35, 5, 35)).kappa).toBeCloseTo(0.14 / 0.54, 12);
    expect(cohenKappa(...fromTable(45, 15, 25, 15)).kappa.toFixed(4)).toBe('0.1304');
    expect(cohenKappa(...fromTable(25, 35, 5, 35)).kappa.toFixed(4)).toBe('0.2593');
  });

  it('matches the confusion-matrix form for three categories', () => {
    const m = [
      [10, 2, 1],
      [3, 12, 2],
      [0, 4, 6],
    ];
    const a: string[] = [];
    const b: string[] = [];
    m.forEach((row, i) => row.forEach((n, j) => Array.from({ length: n }, () => (a.push(`c${i}`), b.push(`c${j}`)))));
    // po = 28/40 = 0.7; rows 13,17,10; cols 13,18,9 → pe = (169 + 306 + 90)/1600 = 565/1600
    const pe = 565 / 1600;
    expect(cohenKappaFromMatrix(m).kappa).toBeCloseTo((0.7 - pe) / (1 - pe), 12);
    expect(cohenKappa(a, b).kappa).toBeCloseTo(cohenKappaFromMatrix(m).kappa, 12);
  });

  it('perfect agreement is 1; one shared category everywhere is undefined (NaN); mismatched lengths throw', () => {
    expect(cohenKappa(['a', 'b', 'a'], ['a', 'b', 'a']).kappa).toBe(1);
    const r = cohenKappa(['a', 'a'], ['a', 'a']);
    expect(r.po).toBe(1);
    expect(r.kappa).toBeNaN();
    expect(() => cohenKappa(['a'], [])).toThrow(/different numbers of units/);
  });
});

describe("Fleiss' kappa (textbook examples)", () => {
  it('the classic 10 subjects × 14 raters × 5 categories table → P̄ 0.378, P̄e 0.213, κ 0.210', () => {
    const table = [
      [0, 0, 0, 0, 14],
      [0, 2, 6, 4, 2],
      [0, 0, 3, 5, 6],
      [0, 3, 9, 2, 0],
      [2, 2, 8, 1, 1],
      [7, 7, 0, 0, 0],
      [3, 2, 6, 3, 0],
      [2, 5, 3, 2, 2],
      [6, 5, 2, 1, 0],
      [0, 2, 2, 3, 7],
    ];
    const r = fleissKappa(table);
    expect(r.po.toFixed(3)).toBe('0.378');
    expect(r.pe.toFixed(3)).toBe('0.213');
    expect(r.kappa.toFixed(3)).toBe('0.210');
    expect(r.raters).toBe(14);
  });

  it('a hand-computed 3-rater example: κ = 1/3', () => {
    // P_i = 1, 1, 1/3, 1/3 → P̄ = 2/3; p = (.5, .5) → P̄e = .5; κ = (2/3 − 1/2)/(1/2) = 1/3
    const r = fleissKappaFromRatings([
      ['y', 'y', 'y'],
      ['n', 'n', 'n'],
      ['y', 'y', 'n'],
      ['y', 'n', 'n'],
    ]);
    expect(r.kappa).toBeCloseTo(1 / 3, 12);
  });

  it('rejects rows with different rater counts and bad counts', () => {
    expect(() => fleissKappa([[1, 1], [2, 1]])).toThrow(/unit 1 has 3 ratings/);
    expect(() => fleissKappa([[1, 0]])).toThrow(/at least 2/);
    expect(() => fleissKappa([[1.5, 0.5]])).toThrow(/non-negative integer/);
  });
});

describe('agreementReport over label events', () => {
  let t = 0;
  const add = (who: string, qid: string, label: string, step?: number): LabelEvent => ({
    v: 1,
    who,
    at: new Date(Date.UTC(2026, 0, 1) + 1000 * t++).toISOString(),
    run: 'r',
    qid,
    label,
    op: 'add',
    ...(step !== undefined ? { step } : {}),
  });

  it('scores only samples labelled by all, per label (binary Cohen) and by primary label', () => {
    const fold = foldLabels([
      add('a', 's1', 'wrong_region'),
      add('b', 's1', 'wrong_region'),
      add('a', 's2', 'no_zoom'),
      add('a', 's2', 'reasoning_error'),
      add('b', 's2', 'no_zoom'),
      add('a', 's3', 'wrong_region'),
      add('b', 's3', 'right_region_misread'),
      add('b', 's3', 'wrong_region'), // b's primary on s3 is right_region_misread (added first)
      add('a', 's4', 'no_zoom'),
      add('b', 's4', 'reasoning_error'),
      add('a', 's5', 'no_zoom'), // only a: partial, not scored
    ]);
    const r = agreementReport(fold, { annotators: ['a', 'b'], labels: ['wrong_region', 'no_zoom', 'grader_error'] });
    expect(r.method).toBe('cohen');
    expect(r.units).toBe(4);
    expect(r.partial).toBe(1);
    const by = Object.fromEntries(r.perLabel.map((p) => [p.label, p]));
    // wrong_region: a = [1,0,1,0], b = [1,0,1,0] → κ = 1
    expect(by.wrong_region!.kappa).toBe(1);
    expect(by.wrong_region!.positives).toEqual([2, 2]);
    // no_zoom: a = [0,1,0,1], b = [0,1,0,0] → po = 3/4; pa = 1/2, pb = 1/4 → pe = 1/2·1/4 + 1/2·3/4 = 1/2 → κ = 1/2
    expect(by.no_zoom!.kappa).toBeCloseTo(0.5, 12);
    // reasoning_error: a = [0,1,0,0], b = [0,0,0,1] → po = 1/2, pe = 1/4·1/4 + 3/4·3/4 = 10/16 → κ = (8/16 − 10/16)/(6/16) = −1/3
    expect(by.reasoning_error!.kappa).toBeCloseTo(-1 / 3, 12);
    // grader_error: nobody used it → undefined and left out of the mean
    expect(by.grader_error!.kappa).toBeNaN();
    // right_region_misread: a = [0,0,0,0], b = [0,0,1,0] → po = 3/4, pe = 0·1/4 + 1·3/4 = 3/4 → κ = 0
    expect(by.right_region_misread!.kappa).toBeCloseTo(0, 12);
    expect(r.meanPerLabelKappa).toBeCloseTo((1 + 0.5 - 1 / 3 + 0) / 4, 12);
    // primary: a = [wr, nz, wr, nz], b = [wr, nz, rrm, re] → po = 1/2;
    // pe = Σ pa·pb = wr .5·.25 + nz .5·.25 = .25 → κ = (.5 − .25)/.75 = 1/3
    expect(r.primary.kappa).toBeCloseTo(1 / 3, 12);
  });

  it('uses Fleiss for three annotators and can score steps separately', () => {
    const fold = foldLabels([
      add('a', 's1', 'wrong_region', 0),
      add('b', 's1', 'wrong_region', 0),
      add('c', 's1', 'wrong_region', 0),
      add('a', 's1', 'no_zoom', 1),
      add('b', 's1', 'no_zoom', 1),
      add('c', 's1', 'wrong_region', 1),
      add('a', 's2', 'no_zoom'),
      add('b', 's2', 'no_zoom'),
      add('c', 's2', 'no_zoom'),
    ]);
    const unit = agreementReport(fold, { annotators: ['a', 'b', 'c'], level: 'unit' });
    expect(unit.method).toBe('fleiss');
    expect(unit.units).toBe(3);
    // primary ratings: [wr,wr,wr], [nz,nz,wr], [nz,nz,nz] → same as fleissKappaFromRatings
    expect(unit.primary.kappa).toBeCloseTo(
      fleissKappaFromRatings([
        ['wr', 'wr', 'wr'],
        ['nz', 'nz', 'wr'],
        ['nz', 'nz', 'nz'],
      ]).kappa,
      12,
    );
    const sample = agreementReport(fold, { annotators: ['a', 'b', 'c'] });
    expect(sample.units).toBe(2);
    // s1 merged: a,b have {wr, nz}, c has {wr}; primary is the first added: wr for all three
    expect(sample.primary.po).toBe(1);
  });

  it('needs two distinct annotators', () => {
    const fold = foldLabels([]);
    expect(() => agreementReport(fold, { annotators: ['a'] })).toThrow(/at least 2/);
    expect(() => agreementReport(fold, { annotators: ['a', 'a'] })).toThrow(/twice/);
  });
});

/** The uniform scorer API (runtime scoring), beyond the vector-shaped functions. */
import { describe, expect, it } from 'vitest';
import { getScorer, scorers, scorerVersions } from '../../../app/bench/scorers';
import { mcMvbenchCompute } from '../../../app/bench/scorers/mcMvbench';
import { mraCompute, MRA_BOUNDS } from '../../../app/bench/scorers/mra';
import { lastBoxedContent, mathEquivalent, prReward } from '../../../app/bench/scorers/prBoxed';

describe('scorer registry', () => {
  it('every scorer has a distinct name, a version and a score()', () => {
    const names = Object.keys(scorers);
    expect(names).toEqual(expect.arrayContaining(['anls', 'mra.tis', 'mra.lmmsEval', 'tallyqa.count', 'mc.vstar', 'mc.vsi', 'mc.mvbench', 'pr.boxed']));
    for (const [name, s] of Object.entries(scorers)) {
      expect(s.name).toBe(name);
      expect(s.version).toMatch(/\S+\/\d+$/);
      const r = s.score('', { answer: name.startsWith('mra') ? '3' : name === 'tallyqa.count' ? 3 : 'A' });
      expect(typeof r.score).toBe('number');
      expect(typeof r.correct).toBe('boolean');
    }
  });

  it('reports versions for a manifest and rejects unknown names', () => {
    expect(scorerVersions(['anls'])).toEqual({ anls: scorers.anls!.version });
    expect(() => getScorer('nope')).toThrow(/unknown scorer 'nope'.*anls/);
  });
});

describe('runtime scores', () => {
  it('anls: list answers, threshold', () => {
    const s = getScorer('anls');
    expect(s.score('45', { answer: ['45%', '45'] })).toMatchObject({ score: 1, correct: true });
    expect(s.score('canada', { answer: ['2019'] })).toMatchObject({ score: 0, correct: false });
  });

  it('mra: the two extraction variants differ where the references differ', () => {
    expect(getScorer('mra.tis').score('About 15.3', { answer: '15' }).score).toBe(0);
    expect(getScorer('mra.lmmsEval').score('About 15.3', { answer: '15' }).score).toBe(1);
    expect(getScorer('mra.lmmsEval').score('three hundred and twenty-one', { answer: '321' }).extracted).toBe(321);
  });

  it('mra: relative error 0.2 passes 6 thresholds, ground truth 0 is an error not a crash', () => {
    expect(mraCompute('12', '10').tis.mra).toBe(0.6);
    expect(MRA_BOUNDS).toHaveLength(10);
    const z = mraCompute('3', '0');
    expect(z.tis.error).toEqual({ type: 'ZeroDivisionError', message: 'float division by zero' });
    expect(z.tis.mra).toBeUndefined();
    expect(mraCompute('x', '0').tis).toEqual({ predFloat: null, relError: null, mra: 0 });
    expect(getScorer('mra.tis').score('3', { answer: '0' })).toMatchObject({ score: 0, correct: false });
    expect(mraCompute('3', '-3').tis.mra).toBe(1);
  });

  it('tallyqa, mc.vstar, mc.vsi', () => {
    expect(getScorer('tallyqa.count').score('I count seven.', { answer: 7 })).toMatchObject({ correct: true, extracted: 7 });
    expect(getScorer('tallyqa.count').score('3', { answer: '3' }).correct).toBe(true);
    expect(getScorer('mc.vstar').score('The best option is (C).', { answer: 'C' })).toMatchObject({ correct: true, extracted: 'C' });
    expect(getScorer('mc.vstar').score('Answer: B', { answer: 'B' })).toMatchObject({ correct: false, extracted: 'A' });
    expect(getScorer('mc.vsi').score('b. sofa', { answer: 'B' })).toMatchObject({ correct: true, extracted: 'b' });
  });

  it('mc.mvbench follows lmms-eval mcq_acc', () => {
    expect(mcMvbenchCompute('C. Under the second object', 'C')).toEqual({ extracted: 'C', score: 1 });
    expect(mcMvbenchCompute('(B) He leaves.', 'B')).toEqual({ extracted: 'B', score: 1 });
    expect(mcMvbenchCompute('I think so', 'A').score).toBe(0);
    expect(mcMvbenchCompute('', 'A')).toEqual({ extracted: '', score: 0 });
  });
});

describe('pr.boxed runtime equivalence (math_verify approximation)', () => {
  it('reads the last balanced \\boxed{}', () => {
    expect(lastBoxedContent('\\boxed{1} then \\boxed{\\frac{1}{2}}<|im_end|>')).toBe('\\frac{1}{2}');
    expect(lastBoxedContent('no box')).toBeNull();
  });

  it('accepts equal strings, numbers, fractions and option letters', () => {
    expect(mathEquivalent('\\boxed{blue}<|im_end|>', '\\boxed{blue}')).toBe(1);
    expect(mathEquivalent('\\boxed{0.25}', '\\boxed{\\frac{1}{4}}')).toBe(1);
    expect(mathEquivalent('\\boxed{1,200}', '\\boxed{1200}')).toBe(1);
    expect(mathEquivalent('\\boxed{(c)}', '\\boxed{c}')).toBe(1);
    expect(mathEquivalent('\\boxed{45}', '\\boxed{45%}')).toBe(1);
    expect(mathEquivalent('\\boxed{red}', '\\boxed{blue}')).toBe(0);
    expect(mathEquivalent('no number here', '\\boxed{3}')).toBe(-1);
  });

  it('scores a whole multi-turn solution like rule_reward', () => {
    const sol = 'Let me zoom.\n<tool_call>{}</tool_call><|im_end|>\n<|im_start|>user\nHere is the cropped image (Image Size: 812x560):<|im_end|>\nIt is \\boxed{Red}<|im_end|>';
    expect(prReward(sol, 'red')).toMatchObject({ res: 1, matchedBy: '\\boxed' });
    expect(prReward(sol, ['blue', 'red']).res).toBe(1);
    expect(prReward('\\boxed{paris and london}<|im_end|>', '\\boxed{paris, london}')).toMatchObject({ res: 1, matchedBy: 'multispan' });
    expect(prReward('\\boxed{paris}<|im_end|>', '\\boxed{paris, london}').res).toBe(0);
    expect(getScorer('pr.boxed').score('<|im_start|>assistant\nSo \\boxed{B}<|im_end|>', { answer: '(B)' })).toMatchObject({ correct: true, extracted: 'b' });
  });
});

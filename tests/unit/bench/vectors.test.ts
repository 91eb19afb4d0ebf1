/**
 * Every scorer suite of the public golden vectors, compared by exact deep equality (IEEE doubles, no
 * tolerance). The held-back vectors run the same functions through `scorerSuites`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { scorerSuites } from '../../../app/bench/scorers/vectorSuites';

interface VectorCase {
  suite: string;
  name: string;
  input: unknown;
  expected: unknown;
  note?: string;
}

const file = path.resolve(__dirname, '../../fixtures/vectors/public.json');
const cases = JSON.parse(readFileSync(file, 'utf8')) as VectorCase[];
const SUITES = ['anls', 'mra', 'tallyqa', 'mc_vstar', 'mc_vsi', 'pr_boxed'];

describe('scorer golden vectors (public.json)', () => {
  it('exports a function for every scorer suite and every suite has cases', () => {
    for (const s of SUITES) {
      expect(typeof scorerSuites[s], s).toBe('function');
      expect(cases.filter((c) => c.suite === s).length, s).toBeGreaterThan(0);
    }
  });

  for (const suite of SUITES) {
    describe(suite, () => {
      for (const c of cases.filter((x) => x.suite === suite)) {
        it(c.name, () => {
          expect(scorerSuites[suite]!(c.input)).toEqual(c.expected);
        });
      }
    });
  }

  it('rejects a malformed input with a message naming the field', () => {
    expect(() => scorerSuites.anls!({ references: 'abc', prediction: 'x' })).toThrow(/references/);
    expect(() => scorerSuites.mra!({ prediction: 3, groundTruth: '3' })).toThrow(/prediction/);
  });
});

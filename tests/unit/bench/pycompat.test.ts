/** Python-exact string and float helpers. Expected values are what CPython 3.10 prints. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pyFloat, pyFloatRepr, tryPyFloat } from '../../../app/pycompat/float';
import {
  decimalValue,
  isSpace,
  levenshtein,
  pyCount,
  pyLen,
  pyLower,
  pyRstrip,
  pySlice,
  pySplit,
  pyStrip,
  pyStrRepr,
  pyUpper,
} from '../../../app/pycompat/str';

describe('pycompat/str', () => {
  it('cases with full Unicode mappings', () => {
    expect(pyUpper('ß')).toBe('SS');
    expect(pyUpper('ﬁx')).toBe('FIX');
    expect(pyLower('İ')).toBe('i\u0307');
    expect(pyLower('ΟΔΟΣ')).toBe('οδος');
  });

  it('counts code points, not UTF-16 units', () => {
    expect(pyLen('a😀b')).toBe(3);
    expect('a😀b'.length).toBe(4);
    expect(pySlice('a😀bc', 1, -1)).toBe('😀b');
    expect(pySlice('abc', 7, -1)).toBe('');
  });

  it('uses Python whitespace for strip/split (U+00A0, U+001C, U+0085 yes; U+FEFF, U+200B no)', () => {
    expect(pySplit('ten\u00a0dollars')).toEqual(['ten', 'dollars']);
    expect(pySplit('a\u001cb\u0085c')).toEqual(['a', 'b', 'c']);
    expect(pySplit('a\ufeffb\u200bc')).toEqual(['a\ufeffb\u200bc']);
    expect(pyStrip('\u3000 x \u2028')).toBe('x');
    expect(pyStrip('\ufeffx')).toBe('\ufeffx');
    expect(pySplit('  ')).toEqual([]);
    expect(pySplit(' a', ' ')).toEqual(['', 'a']);
    expect(pySplit('a b c', undefined, 1)).toEqual(['a', 'b c']);
    expect(pyRstrip('A.\n', '.')).toBe('A.\n');
    expect(isSpace('\u00a0')).toBe(true);
  });

  it('counts non-overlapping occurrences like str.count', () => {
    expect(pyCount('aaaa', 'aa')).toBe(2);
    expect(pyCount('abc', '')).toBe(4);
  });

  it('Levenshtein on code points', () => {
    expect(levenshtein('kitten', 'sitting')).toBe(3);
    expect(levenshtein('😀a', 'a')).toBe(1);
    expect(levenshtein('', 'abc')).toBe(3);
  });

  it('is a metric: symmetric, zero iff equal, triangle inequality', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (a, b, c) => {
        const ab = levenshtein(a, b);
        expect(ab).toBe(levenshtein(b, a));
        expect(ab === 0).toBe(a === b);
        expect(levenshtein(a, c)).toBeLessThanOrEqual(ab + levenshtein(b, c));
      }),
    );
  });

  it('split() output never holds Python whitespace or empty items', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', ' ', '\u00a0', '\u001f', '\u3000', 'é', '\t') }), (s) => {
        for (const w of pySplit(s)) {
          expect(w).not.toBe('');
          expect(Array.from(w).some(isSpace)).toBe(false);
        }
      }),
    );
  });

  it('repr of str as CPython writes it', () => {
    expect(pyStrRepr("it's")).toBe(`"it's"`);
    expect(pyStrRepr(`a'b"c`)).toBe(`'a\\'b"c'`);
    expect(pyStrRepr('\t\n\\\x00\x7f')).toBe(`'\\t\\n\\\\\\x00\\x7f'`);
    expect(pyStrRepr('\u00a0é\u3000\u200b😀\ud800')).toBe(`'\\xa0é\\u3000\\u200b😀\\ud800'`);
  });

  it('decimal value of Unicode digits', () => {
    expect(decimalValue('٣')).toBe(3);
    expect(decimalValue('５')).toBe(5);
    expect(decimalValue('𝟡')).toBe(9);
    expect(decimalValue('½')).toBe(-1);
  });
});

describe('pycompat/float', () => {
  it('parses what float() accepts', () => {
    expect(pyFloat(' 1_000.5 ')).toBe(1000.5);
    expect(pyFloat('1e1_0')).toBe(1e10);
    expect(pyFloat('-iNfInItY')).toBe(-Infinity);
    expect(Number.isNaN(pyFloat('+nan'))).toBe(true);
    expect(pyFloat('.5')).toBe(0.5);
    expect(pyFloat('5.')).toBe(5);
    expect(pyFloat('1e400')).toBe(Infinity);
    expect(Object.is(pyFloat('-0'), -0)).toBe(true);
    expect(pyFloat('\u00a0٣.٥\u3000')).toBe(3.5);
    expect(pyFloat('007')).toBe(7);
  });

  it('raises ValueError with the exact CPython message', () => {
    const msg = (s: string) => {
      try {
        pyFloat(s);
      } catch (e) {
        expect((e as { pyType?: string }).pyType).toBe('ValueError');
        return (e as Error).message;
      }
      throw new Error('no error');
    };
    expect(msg('')).toBe("could not convert string to float: ''");
    expect(msg(' 3 meters')).toBe("could not convert string to float: ' 3 meters'");
    expect(msg('1__0')).toBe("could not convert string to float: '1__0'");
    expect(msg('_1')).toBe("could not convert string to float: '_1'");
    expect(msg('1_.5')).toBe("could not convert string to float: '1_.5'");
    expect(msg("it's")).toBe(`could not convert string to float: "it's"`);
    expect(msg('0x10')).toBe("could not convert string to float: '0x10'");
    expect(msg('inf_')).toBe("could not convert string to float: 'inf_'");
    expect(msg('1e')).toBe("could not convert string to float: '1e'");
    expect(msg('2,500')).toBe("could not convert string to float: '2,500'");
    expect(tryPyFloat('twenty')).toBeNull();
  });

  it('repr(float) as Python prints it', () => {
    expect(pyFloatRepr(1)).toBe('1.0');
    expect(pyFloatRepr(0.3 - 0.1)).toBe('0.19999999999999998');
    expect(pyFloatRepr(1e16)).toBe('1e+16');
    expect(pyFloatRepr(1e15)).toBe('1000000000000000.0');
    expect(pyFloatRepr(0.0001)).toBe('0.0001');
    expect(pyFloatRepr(0.00001)).toBe('1e-05');
    expect(pyFloatRepr(-0)).toBe('-0.0');
    expect(pyFloatRepr(5e-324)).toBe('5e-324');
    expect(pyFloatRepr(1.7976931348623157e308)).toBe('1.7976931348623157e+308');
    expect(pyFloatRepr(123456789012345678)).toBe('1.2345678901234568e+17');
    expect(pyFloatRepr(201)).toBe('201.0');
    expect(pyFloatRepr(NaN)).toBe('nan');
    expect(pyFloatRepr(-Infinity)).toBe('-inf');
  });

  it('float(repr(x)) == x for every double', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), (x) => {
        expect(Object.is(pyFloat(pyFloatRepr(x)), x)).toBe(true);
      }),
    );
  });
});

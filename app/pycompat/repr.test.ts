import { describe, expect, it } from 'vitest';
import { pyJsonLoads } from './json';
import { asPyError, PyException, pyRepr, pyStr, pyTypeName } from './repr';
import { pyCeil, pyFloor, pyInt, roundHalfEven } from './round';

describe('pyRepr / pyStr (CPython 3.10 output)', () => {
  it('prints values as Python does', () => {
    expect(pyRepr(pyJsonLoads('[3, 17.0, true, null, "a\'b", {"k": 1e16}]'))).toBe(`[3, 17.0, True, None, "a'b", {'k': 1e+16}]`);
    expect(pyRepr('a"b\'c')).toBe(`'a"b\\'c'`);
    expect(pyRepr('\x00\x7f\x85\u200b😀\ud800')).toBe("'\\x00\\x7f\\x85\\u200b😀\\ud800'");
    expect(pyRepr(201)).toBe('201.0');
    expect(pyRepr(2.5e-7)).toBe('2.5e-07');
    expect(pyStr('crop')).toBe('crop');
    expect(pyStr(12345678901234567890n)).toBe('12345678901234567890');
  });

  it('names Python types', () => {
    expect(pyJsonLoadsTypes('[1, 1.0, "s", true, null, [], {}]')).toEqual(['int', 'float', 'str', 'bool', 'NoneType', 'list', 'dict']);
  });

  it('carries exception types as values', () => {
    expect(asPyError(new PyException('KeyError', "'x'"))).toEqual({ type: 'KeyError', message: "'x'" });
    expect(asPyError(new Error('plain'))).toBeNull();
  });
});

function pyJsonLoadsTypes(text: string): string[] {
  return (pyJsonLoads(text) as unknown[]).map((v) => pyTypeName(v as never));
}

describe('Python rounding', () => {
  it('rounds half to even, unlike Math.round', () => {
    expect([0.5, 1.5, 2.5, 416.5, 472.5, -0.5, -1.5, 0.4999999999999963, 252.49999999999997].map(roundHalfEven)).toEqual([0, 2, 2, 416, 472, 0, -2, 0, 252]);
    expect(Math.round(2.5)).not.toBe(roundHalfEven(2.5));
    expect(Object.is(roundHalfEven(-0.4), 0)).toBe(true);
  });
  it('truncates for int() and floors/ceils without -0', () => {
    expect([pyInt(2.9), pyInt(-2.9), pyFloor(-0.5), pyCeil(-0.5)]).toEqual([2, -2, -1, 0]);
    expect(Object.is(pyCeil(-0.5), 0)).toBe(true);
    expect(() => roundHalfEven(NaN)).toThrow('cannot convert float NaN to integer');
  });
});

import { describe, expect, it } from 'vitest';
import { PyJSONDecodeError, pyJsonDumps, pyJsonLoads, toPlainJson } from './json';
import { pyRepr } from './repr';

/** Outcomes printed by CPython 3.10.13 `json.loads` for the same texts. */
const PYTHON_310: Array<[string, string]> = [
  ['', 'Expecting value: line 1 column 1 (char 0)'],
  [' ', 'Expecting value: line 1 column 2 (char 1)'],
  ['{', 'Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'],
  ['[', 'Expecting value: line 1 column 2 (char 1)'],
  ['[1,]', 'Expecting value: line 1 column 4 (char 3)'],
  ['{"a":1,}', 'Expecting property name enclosed in double quotes: line 1 column 8 (char 7)'],
  ['{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"],
  ['"abc', 'Unterminated string starting at: line 1 column 1 (char 0)'],
  ['"a\\x"', 'Invalid \\escape: line 1 column 3 (char 2)'],
  ['"\\u12"', 'Invalid \\uXXXX escape: line 1 column 3 (char 2)'],
  ['"\\u12G4"', 'Invalid \\uXXXX escape: line 1 column 3 (char 2)'],
  ['1.', 'Extra data: line 1 column 2 (char 1)'],
  ['-', 'Expecting value: line 1 column 1 (char 0)'],
  ['01', 'Extra data: line 1 column 2 (char 1)'],
  ['1e', 'Extra data: line 1 column 2 (char 1)'],
  ['nul', 'Expecting value: line 1 column 1 (char 0)'],
  ['[1 2]', "Expecting ',' delimiter: line 1 column 4 (char 3)"],
  ['{"a":1}x', 'Extra data: line 1 column 8 (char 7)'],
  ['\ufeff{}', 'Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)'],
  ['"é\\u00e9😀', 'Unterminated string starting at: line 1 column 1 (char 0)'],
  ['[1,\n 2,\n ]', 'Expecting value: line 3 column 2 (char 9)'],
  // the emoji is one code point, so the position is 6 (7 UTF-16 units)
  ['{"😀": tru}', 'Expecting value: line 1 column 7 (char 6)'],
  ['"a\tb"', 'Invalid control character at: line 1 column 3 (char 2)'],
];

describe('pyJsonLoads (CPython 3.10 json.loads)', () => {
  it.each(PYTHON_310)('rejects %j with the Python message', (text, message) => {
    let caught: unknown;
    try {
      pyJsonLoads(text);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(PyJSONDecodeError);
    expect((caught as PyJSONDecodeError).message).toBe(message);
    expect((caught as PyJSONDecodeError).pyType).toBe('JSONDecodeError');
  });

  it('keeps ints exact and apart from floats', () => {
    expect(pyJsonLoads('12345678901234567890')).toBe(12345678901234567890n);
    expect(pyJsonLoads('1.0')).toBe(1);
    expect(typeof pyJsonLoads('1.0')).toBe('number');
    expect(typeof pyJsonLoads('1')).toBe('bigint');
    expect(pyJsonLoads('1e5')).toBe(100000);
    expect(pyJsonLoads('1E+2')).toBe(100);
    expect(pyJsonLoads('-0')).toBe(0n);
  });

  it('accepts the Python constants and surrogate escapes', () => {
    expect(Number.isNaN(pyJsonLoads('NaN') as number)).toBe(true);
    expect(pyJsonLoads('-Infinity')).toBe(-Infinity);
    expect(pyJsonLoads('"\\ud83d\\ude00"')).toBe('😀');
    expect(pyJsonLoads('"\\ud83d"')).toBe('\ud83d');
  });

  it('keeps the first position and the last value of a duplicate key', () => {
    const v = pyJsonLoads('{"a": 1, "b": 2, "a": 3}');
    expect(pyRepr(v)).toBe("{'a': 3, 'b': 2}");
    expect(toPlainJson(v)).toEqual({ a: 3, b: 2 });
  });

  it('turns values into plain JSON with non-finite strings and own __proto__ keys', () => {
    const plain = toPlainJson(pyJsonLoads('{"__proto__": [NaN, Infinity, 2, 2.5]}')) as Record<string, unknown>;
    expect(Object.keys(plain)).toEqual(['__proto__']);
    expect(plain['__proto__']).toEqual(['NaN', 'Infinity', 2, 2.5]);
  });
});

describe('pyJsonDumps', () => {
  it('uses Python separators and ensure_ascii', () => {
    const v = { a: [1, 2.5, 'é"\n'], b: null, c: true };
    expect(pyJsonDumps(v, { ensureAscii: false })).toBe('{"a": [1, 2.5, "é\\"\\n"], "b": null, "c": true}');
    expect(pyJsonDumps(v)).toBe('{"a": [1, 2.5, "\\u00e9\\"\\n"], "b": null, "c": true}');
    expect(pyJsonDumps(pyJsonLoads('[1.0, 1e16, 2, "😀"]'), { floatNumbers: true })).toBe('[1.0, 1e+16, 2, "\\ud83d\\ude00"]');
  });
});

/**
 * Python 3.10 `float()` parsing and `repr(float)` formatting.
 *
 * `float(str)` (CPython `PyFloat_FromString`):
 * - non-ASCII whitespace becomes ' ', non-ASCII decimal digits (category Nd) become ASCII digits, any other
 *   non-ASCII code point makes the string invalid;
 * - surrounding whitespace is stripped;
 * - `_` is allowed only between two digits (`1_000`, `1e1_0`), then removed;
 * - grammar: `[+-]` then `digits[.digits]` / `.digits` with an optional `e[+-]digits`, or `inf`, `infinity`,
 *   `nan` in any case; overflow gives ±inf, not an error.
 * An invalid string raises `ValueError: could not convert string to float: <repr of the original>`.
 */
import { decimalValue, isSpace, PyValueError, pyStrRepr } from './str';

const FINITE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/** Python `float(x)` for a str (or a number, which passes through). Throws {@link PyValueError}. */
export function pyFloat(x: string | number | boolean): number {
  if (typeof x === 'number') return x;
  if (typeof x === 'boolean') return x ? 1 : 0;
  const fail = (): never => {
    throw new PyValueError(`could not convert string to float: ${pyStrRepr(x)}`);
  };
  let ascii = '';
  for (const ch of x) {
    const cp = ch.codePointAt(0)!;
    if (cp < 127) ascii += ch;
    else if (isSpace(ch)) ascii += ' ';
    else {
      const d = decimalValue(ch);
      ascii += d >= 0 ? String(d) : '?';
    }
  }
  // Only ASCII whitespace remains at this point; CPython strips it with Py_ISSPACE.
  const s = ascii.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, '');
  if (s.includes('_')) {
    for (let i = 0; i < s.length; i++) {
      if (s[i] !== '_') continue;
      const prev = s[i - 1] ?? '';
      const next = s[i + 1] ?? '';
      if (!/[0-9]/.test(prev) || !/[0-9]/.test(next)) fail();
    }
  }
  const t = s.replace(/_/g, '');
  const sp = SPECIAL.exec(t);
  if (sp) {
    const neg = sp[1] === '-';
    if (sp[2]!.toLowerCase() === 'nan') return NaN;
    return neg ? -Infinity : Infinity;
  }
  if (!FINITE.test(t)) fail();
  return Number(t);
}

/** `float(x)` that returns null instead of raising (the reference `to_float` helpers). */
export function tryPyFloat(x: unknown): number | null {
  if (typeof x === 'number') return x;
  if (typeof x !== 'string' && typeof x !== 'boolean') return null;
  try {
    return pyFloat(x);
  } catch {
    return null;
  }
}

/**
 * `repr(x)` / `str(x)` of a Python float: the shortest round-tripping digits, fixed notation when
 * -4 <= exponent < 16, otherwise `d.ddde+XX` (at least two exponent digits); always a `.0` on integral
 * fixed values; `inf`, `-inf`, `nan`.
 */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  // toExponential() without an argument gives the shortest digits that round-trip.
  const m = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(Math.abs(x).toExponential());
  if (!m) throw new Error(`unexpected number format for ${x}`);
  const digits = m[1]! + (m[2] ?? '');
  const exp = Number(m[3]); // value = 0.digits * 10^(exp+1)
  const decpt = exp + 1; // position of the decimal point relative to the digit string
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const e = decpt - 1;
  const eAbs = Math.abs(e);
  return `${sign}${mant}e${e < 0 ? '-' : '+'}${eAbs < 10 ? '0' : ''}${eAbs}`;
}

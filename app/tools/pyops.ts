/**
 * The handful of Python operations the reference tool code applies to parsed JSON values, with
 * CPython 3.10 semantics and error texts: subscripting, comparison, `max`, `len`, `x - 1`, `float(x)`.
 * The reference runs `args['target_image'] - 1`, `bbox_2d[0] < 1`, `float(bbox_2d[2])`, `max(tgt)` on
 * whatever the model wrote, so each of these must fail (or succeed) exactly as Python does.
 */
import { pyFloat } from '../pycompat/float';
import { decimalValue } from '../pycompat/str';
import { PyException, keyErrorMessage, pyTypeName, type PyValue } from '../pycompat/repr';

const SSIZE_MAX = 2n ** 63n - 1n;

export type PyNum = bigint | number | boolean;

export function isPyNum(v: PyValue): v is PyNum {
  return typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean';
}

function codePointArray(s: string): string[] {
  return Array.from(s);
}

/**
 * The position `seq[key]` reads in a sequence of `length` items (negative keys count from the end),
 * raising what CPython raises for a list (or str) index.
 */
export function resolveIndex(length: number, key: PyValue, kind: 'list' | 'string' = 'list'): number {
  if (typeof key !== 'bigint' && typeof key !== 'boolean') {
    if (kind === 'string') throw new PyException('TypeError', 'string indices must be integers');
    throw new PyException('TypeError', `list indices must be integers or slices, not ${pyTypeName(key)}`);
  }
  let i = typeof key === 'boolean' ? (key ? 1n : 0n) : key;
  if (i > SSIZE_MAX || i < -SSIZE_MAX - 1n) {
    throw new PyException('IndexError', "cannot fit 'int' into an index-sized integer");
  }
  const n = BigInt(length);
  if (i < 0n) i += n;
  if (i < 0n || i >= n) throw new PyException('IndexError', kind === 'string' ? 'string index out of range' : 'list index out of range');
  return Number(i);
}

/** `obj[key]`. */
export function pyGetItem(obj: PyValue, key: PyValue): PyValue {
  if (obj instanceof Map) {
    if (Array.isArray(key) || key instanceof Map) throw new PyException('TypeError', `unhashable type: '${pyTypeName(key)}'`);
    if (typeof key === 'string' && obj.has(key)) return obj.get(key)!;
    throw new PyException('KeyError', keyErrorMessage(key));
  }
  if (Array.isArray(obj) || typeof obj === 'string') {
    const isStr = typeof obj === 'string';
    if (typeof key !== 'bigint' && typeof key !== 'boolean') {
      if (isStr) throw new PyException('TypeError', 'string indices must be integers');
      throw new PyException('TypeError', `list indices must be integers or slices, not ${pyTypeName(key)}`);
    }
    const items = isStr ? codePointArray(obj) : obj;
    return items[resolveIndex(items.length, key, isStr ? 'string' : 'list')]!;
  }
  throw new PyException('TypeError', `'${pyTypeName(obj)}' object is not subscriptable`);
}

/** `len(v)`. */
export function pyLen(v: PyValue): number {
  if (typeof v === 'string') return codePointArray(v).length;
  if (Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  throw new PyException('TypeError', `object of type '${pyTypeName(v)}' has no len()`);
}

/** Iterate like a Python `for x in v`. */
export function pyIter(v: PyValue): PyValue[] {
  if (typeof v === 'string') return codePointArray(v);
  if (Array.isArray(v)) return v;
  if (v instanceof Map) return [...v.keys()];
  throw new PyException('TypeError', `'${pyTypeName(v)}' object is not iterable`);
}

export type CmpOp = '<' | '<=' | '>' | '>=';

function numCompare(a: PyNum, b: PyNum, op: CmpOp): boolean {
  const x = typeof a === 'boolean' ? (a ? 1n : 0n) : a;
  const y = typeof b === 'boolean' ? (b ? 1n : 0n) : b;
  // JS compares bigint with number exactly (and NaN is unordered), like Python's int/float comparison.
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
  }
}

function strCompare(a: string, b: string): number {
  const x = codePointArray(a);
  const y = codePointArray(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const p = x[i]!.codePointAt(0)!;
    const q = y[i]!.codePointAt(0)!;
    if (p !== q) return p < q ? -1 : 1;
  }
  return x.length - y.length;
}

function applyOrder(c: number, op: CmpOp): boolean {
  switch (op) {
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
  }
}

/**
 * `a == b` as `PyObject_RichCompareBool` inside containers: numbers compare across int/float/bool; the
 * NaN constant of one `json.loads` call is a single object, so identity makes NaN equal to NaN there.
 */
export function pyEqualInContainer(a: PyValue, b: PyValue): boolean {
  if (isPyNum(a) && isPyNum(b)) {
    if (typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b)) return true;
    const x = typeof a === 'boolean' ? (a ? 1n : 0n) : a;
    const y = typeof b === 'boolean' ? (b ? 1n : 0n) : b;
    return x == y;
  }
  if (a === null || b === null) return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => pyEqualInContainer(x, b[i]!));
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, x] of a) if (!b.has(k) || !pyEqualInContainer(x, b.get(k)!)) return false;
    return true;
  }
  return false;
}

/** `a <op> b` for the comparison operators, raising Python's TypeError for unorderable types. */
export function pyCompare(a: PyValue, op: CmpOp, b: PyValue): boolean {
  if (isPyNum(a) && isPyNum(b)) return numCompare(a, b, op);
  if (typeof a === 'string' && typeof b === 'string') return applyOrder(strCompare(a, b), op);
  if (Array.isArray(a) && Array.isArray(b)) {
    let i = 0;
    const n = Math.min(a.length, b.length);
    while (i < n && pyEqualInContainer(a[i]!, b[i]!)) i++;
    if (i >= a.length || i >= b.length) return applyOrder(a.length - b.length, op);
    return pyCompare(a[i]!, op, b[i]!);
  }
  throw new PyException(
    'TypeError',
    `'${op}' not supported between instances of '${pyTypeName(a)}' and '${pyTypeName(b)}'`,
  );
}

/** `max(v)` over an iterable (`item > current` decides, as in CPython's min_max). */
export function pyMax(v: PyValue): PyValue {
  const items = pyIter(v);
  if (items.length === 0) throw new PyException('ValueError', 'max() arg is an empty sequence');
  let best = items[0]!;
  for (let i = 1; i < items.length; i++) {
    const item = items[i]!;
    if (pyCompare(item, '>', best)) best = item;
  }
  return best;
}

/** `v - 1` (int stays exact; bool counts as int; float stays float). */
export function pyMinusOne(v: PyValue): bigint | number {
  if (typeof v === 'bigint') return v - 1n;
  if (typeof v === 'boolean') return v ? 0n : -1n;
  if (typeof v === 'number') return v - 1;
  throw new PyException('TypeError', `unsupported operand type(s) for -: '${pyTypeName(v)}' and 'int'`);
}

/** `float(v)`. */
export function pyToFloat(v: PyValue): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') {
    const n = Number(v);
    if (!Number.isFinite(n)) throw new PyException('OverflowError', 'int too large to convert to float');
    return n;
  }
  if (typeof v === 'string') {
    try {
      return pyFloat(v);
    } catch (e) {
      throw new PyException('ValueError', (e as Error).message);
    }
  }
  throw new PyException('TypeError', `float() argument must be a string or a real number, not '${pyTypeName(v)}'`);
}

/** `int(v)` as VT's `int(parameters['target_image'])` applies it (returns null where Python raises). */
export function pyIntOrNull(v: PyValue): bigint | null {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : null;
  if (typeof v === 'string') {
    // int(str): surrounding whitespace, optional sign, digits (any Unicode Nd) with single underscores.
    const m = /^\s*([+-]?\p{Nd}(?:_?\p{Nd})*)\s*$/u.exec(v);
    if (!m) return null;
    const ascii = Array.from(m[1]!.replace(/_/g, ''))
      .map((ch) => (ch === '+' || ch === '-' ? ch : String(decimalValue(ch))))
      .join('');
    return BigInt(ascii);
  }
  return null;
}

/** A Python number as a JS double (ints rounded), for sizes and trace output. */
export function pyNumToDouble(v: PyNum): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return typeof v === 'bigint' ? Number(v) : v;
}

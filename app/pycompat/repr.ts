/**
 * Python values as `json.loads` builds them, their `repr()`/`str()`, and Python exceptions as values.
 *
 * The Pixel Reasoner reference feeds parsed JSON straight into Python code, so an `int` and a `float`
 * behave differently (`images[1.0]` raises, `images[1]` does not) and error texts print Python reprs.
 * `PyValue` keeps that distinction: a JSON integer is a `bigint` (exact, like Python's `int`), a JSON
 * number with a fraction or exponent is a `number` (a Python `float`), an object is a `Map` (insertion
 * order, last duplicate wins, like `dict`).
 */
import { pyFloatRepr } from './float';
import { pyStrRepr } from './str';

/** A Python value built by `json.loads`: None, bool, int (bigint), float (number), str, list, dict. */
export type PyValue = null | boolean | bigint | number | string | PyValue[] | PyDict;
/** A Python `dict` with str keys (JSON objects only have str keys). */
export type PyDict = Map<string, PyValue>;

/**
 * A Python exception as a value: `pyType` is the class name (`KeyError`, `TypeError`…), `message`
 * is exactly `str(exception)` as CPython 3.10 prints it.
 */
export class PyException extends Error {
  readonly pyType: string;
  constructor(pyType: string, message: string) {
    super(message);
    this.pyType = pyType;
    this.name = pyType;
  }
}

/** `{type, message}` of any thrown value that carries a Python exception type (`pyType`). */
export function asPyError(e: unknown): { type: string; message: string } | null {
  if (e && typeof e === 'object' && 'pyType' in e && typeof (e as { pyType: unknown }).pyType === 'string') {
    return { type: (e as { pyType: string }).pyType, message: (e as unknown as Error).message };
  }
  return null;
}

export function isPyDict(v: PyValue): v is PyDict {
  return v instanceof Map;
}

/** `type(v).__name__`. */
export function pyTypeName(v: PyValue): string {
  if (v === null) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

/** `repr(v)`. */
export function pyRepr(v: PyValue): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return pyFloatRepr(v);
  if (typeof v === 'string') return pyStrRepr(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  const parts: string[] = [];
  for (const [k, x] of v) parts.push(`${pyStrRepr(k)}: ${pyRepr(x)}`);
  return `{${parts.join(', ')}}`;
}

/** `str(v)` (also what an f-string `{v}` prints): a str is itself, everything else is its repr. */
export function pyStr(v: PyValue): string {
  return typeof v === 'string' ? v : pyRepr(v);
}

/** `str(KeyError(key))`: the repr of the key. */
export function keyErrorMessage(key: PyValue): string {
  return pyRepr(key);
}

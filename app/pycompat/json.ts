/**
 * Python's `json` module, byte for byte where the reference depends on it:
 * - `pyJsonLoads` = `json.loads(str)` with the C scanner of CPython 3.10: the same accepted language
 *   (NaN/Infinity/-Infinity, no trailing commas, strict control characters), ints kept exact and apart
 *   from floats, duplicate keys last-wins in first position, and the exact `JSONDecodeError` texts
 *   `msg: line L column C (char N)` with N counted in code points.
 * - `pyJsonDumps` = `json.dumps(obj, ensure_ascii=…)` with the default `', '` / `': '` separators.
 * - `toPlainJson` turns a parsed value into plain JSON data (ints as numbers, non-finite floats as the
 *   strings "NaN"/"Infinity"/"-Infinity", the convention of the golden vectors).
 */
import { pyFloatRepr } from './float';
import { PyException, type PyDict, type PyValue } from './repr';

/** Python's `json.JSONDecodeError` (a `ValueError` subclass). */
export class PyJSONDecodeError extends PyException {
  readonly msg: string;
  /** Position in code points. */
  readonly pos: number;
  readonly lineno: number;
  readonly colno: number;
  constructor(msg: string, doc: number[], pos: number) {
    let lineno = 1;
    let lastNl = -1;
    for (let i = 0; i < pos && i < doc.length; i++) {
      if (doc[i] === 0x0a) {
        lineno++;
        lastNl = i;
      }
    }
    const colno = pos - lastNl;
    super('JSONDecodeError', `${msg}: line ${lineno} column ${colno} (char ${pos})`);
    this.msg = msg;
    this.pos = pos;
    this.lineno = lineno;
    this.colno = colno;
  }
}

/** CPython 3.10.7+ refuses int literals longer than this (`sys.get_int_max_str_digits()`). */
const INT_MAX_STR_DIGITS = 4300;
/** Deepest container nesting CPython 3.10 decodes from a shallow call stack. */
const MAX_NESTING = 994;

class StopIteration {
  constructor(readonly value: number) {}
}

const isWs = (c: number | undefined): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

function fromCodePoints(cps: number[], start: number, end: number): string {
  let out = '';
  for (let k = start; k < end; k += 4096) out += String.fromCodePoint(...cps.slice(k, Math.min(end, k + 4096)));
  return out;
}

function hexVal(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** Parser state over the code points of the document. */
class Scanner {
  readonly len: number;
  depth = 0;
  constructor(readonly s: number[]) {
    this.len = s.length;
  }

  err(msg: string, pos: number): never {
    throw new PyJSONDecodeError(msg, this.s, pos);
  }

  /** `scan_once_unicode`: returns [value, nextIndex] or throws StopIteration(idx). */
  scanOnce(idx: number): [PyValue, number] {
    const s = this.s;
    const len = this.len;
    if (idx >= len) throw new StopIteration(idx);
    const c = s[idx]!;
    const matches = (word: string): boolean => this.matchesAt(idx, word);
    switch (c) {
      case 0x22: // "
        return this.scanString(idx + 1);
      case 0x7b: // {
        return this.nested('object', () => this.parseObject(idx + 1));
      case 0x5b: // [
        return this.nested('array', () => this.parseArray(idx + 1));
      case 0x6e: // n
        if (matches('null')) return [null, idx + 4];
        break;
      case 0x74: // t
        if (matches('true')) return [true, idx + 4];
        break;
      case 0x66: // f
        if (matches('false')) return [false, idx + 5];
        break;
      case 0x4e: // N
        if (matches('NaN')) return [NaN, idx + 3];
        break;
      case 0x49: // I
        if (matches('Infinity')) return [Infinity, idx + 8];
        break;
      case 0x2d: // -
        if (matches('-Infinity')) return [-Infinity, idx + 9];
        break;
      default:
        break;
    }
    return this.matchNumber(idx);
  }

  matchesAt(idx: number, word: string): boolean {
    if (idx + word.length - 1 >= this.len) return false;
    for (let k = 0; k < word.length; k++) if (this.s[idx + k] !== word.charCodeAt(k)) return false;
    return true;
  }

  nested<T>(kind: 'array' | 'object', f: () => T): T {
    // CPython's C scanner calls Py_EnterRecursiveCall per container; with the default limit of 1000 a
    // top-level json.loads fails past ~994 levels (measured on 3.10.13; the exact depth depends on the
    // caller's stack, so this is approximate by a few levels).
    if (++this.depth > MAX_NESTING) {
      this.depth--;
      throw new PyException('RecursionError', `maximum recursion depth exceeded while decoding a JSON ${kind} from a unicode string`);
    }
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  matchNumber(start: number): [PyValue, number] {
    const s = this.s;
    const endIdx = this.len - 1;
    let idx = start;
    if (s[idx] === 0x2d) {
      idx++;
      if (idx > endIdx) throw new StopIteration(start);
    }
    const c0 = s[idx]!;
    if (c0 >= 0x31 && c0 <= 0x39) {
      idx++;
      while (idx <= endIdx && isDigit(s[idx])) idx++;
    } else if (c0 === 0x30) {
      idx++;
    } else {
      throw new StopIteration(start);
    }
    let isFloat = false;
    if (idx < endIdx && s[idx] === 0x2e && isDigit(s[idx + 1])) {
      isFloat = true;
      idx += 2;
      while (idx <= endIdx && isDigit(s[idx])) idx++;
    }
    if (idx < endIdx && (s[idx] === 0x65 || s[idx] === 0x45)) {
      const eStart = idx;
      idx++;
      if (idx < endIdx && (s[idx] === 0x2d || s[idx] === 0x2b)) idx++;
      while (idx <= endIdx && isDigit(s[idx])) idx++;
      if (isDigit(s[idx - 1])) isFloat = true;
      else idx = eStart;
    }
    const text = fromCodePoints(s, start, idx);
    if (isFloat) return [Number(text), idx];
    const digits = text.startsWith('-') ? text.length - 1 : text.length;
    if (digits > INT_MAX_STR_DIGITS) {
      throw new PyException(
        'ValueError',
        `Exceeds the limit (${INT_MAX_STR_DIGITS}) for integer string conversion: value has ${digits} digits; use sys.set_int_max_str_digits() to increase the limit`,
      );
    }
    return [BigInt(text), idx];
  }

  /** `scanstring_unicode(s, end, strict=True)`; `end` is the index after the opening quote. */
  scanString(end: number): [string, number] {
    const s = this.s;
    const len = this.len;
    const begin = end - 1;
    const chunks: number[] = [];
    for (;;) {
      let c = 0;
      let next = end;
      for (; next < len; next++) {
        c = s[next]!;
        if (c === 0x22 || c === 0x5c) break;
        if (c <= 0x1f) this.err('Invalid control character at', next);
      }
      if (!(next < len && (c === 0x22 || c === 0x5c))) this.err('Unterminated string starting at', begin);
      for (let k = end; k < next; k++) chunks.push(s[k]!);
      next++;
      if (c === 0x22) {
        end = next;
        break;
      }
      if (next === len) this.err('Unterminated string starting at', begin);
      c = s[next]!;
      if (c !== 0x75) {
        end = next + 1;
        let out: number;
        switch (c) {
          case 0x22:
          case 0x5c:
          case 0x2f:
            out = c;
            break;
          case 0x62:
            out = 0x08;
            break;
          case 0x66:
            out = 0x0c;
            break;
          case 0x6e:
            out = 0x0a;
            break;
          case 0x72:
            out = 0x0d;
            break;
          case 0x74:
            out = 0x09;
            break;
          default:
            this.err('Invalid \\escape', end - 2);
        }
        chunks.push(out);
      } else {
        let u = 0;
        next++;
        end = next + 4;
        if (end >= len) this.err('Invalid \\uXXXX escape', next - 1);
        for (; next < end; next++) {
          const h = hexVal(s[next]);
          if (h < 0) this.err('Invalid \\uXXXX escape', end - 5);
          u = (u << 4) | h;
        }
        if (u >= 0xd800 && u <= 0xdbff && end + 6 < len && s[next] === 0x5c && s[next + 1] === 0x75) {
          next += 2;
          let u2 = 0;
          end += 6;
          for (; next < end; next++) {
            const h = hexVal(s[next]);
            if (h < 0) this.err('Invalid \\uXXXX escape', end - 5);
            u2 = (u2 << 4) | h;
          }
          if (u2 >= 0xdc00 && u2 <= 0xdfff) u = 0x10000 + ((u - 0xd800) << 10) + (u2 - 0xdc00);
          else end -= 6;
        }
        chunks.push(u);
      }
    }
    let out = '';
    for (let k = 0; k < chunks.length; k += 4096) out += String.fromCodePoint(...chunks.slice(k, k + 4096));
    return [out, end];
  }

  parseObject(idx: number): [PyDict, number] {
    const s = this.s;
    const endIdx = this.len - 1;
    const obj: PyDict = new Map();
    while (idx <= endIdx && isWs(s[idx])) idx++;
    if (idx > endIdx || s[idx] !== 0x7d) {
      for (;;) {
        if (idx > endIdx || s[idx] !== 0x22) this.err('Expecting property name enclosed in double quotes', idx);
        const [key, afterKey] = this.scanString(idx + 1);
        idx = afterKey;
        while (idx <= endIdx && isWs(s[idx])) idx++;
        if (idx > endIdx || s[idx] !== 0x3a) this.err("Expecting ':' delimiter", idx);
        idx++;
        while (idx <= endIdx && isWs(s[idx])) idx++;
        const [val, afterVal] = this.scanOnce(idx);
        obj.set(key, val);
        idx = afterVal;
        while (idx <= endIdx && isWs(s[idx])) idx++;
        if (idx <= endIdx && s[idx] === 0x7d) break;
        if (idx > endIdx || s[idx] !== 0x2c) this.err("Expecting ',' delimiter", idx);
        idx++;
        while (idx <= endIdx && isWs(s[idx])) idx++;
      }
    }
    return [obj, idx + 1];
  }

  parseArray(idx: number): [PyValue[], number] {
    const s = this.s;
    const endIdx = this.len - 1;
    const arr: PyValue[] = [];
    while (idx <= endIdx && isWs(s[idx])) idx++;
    if (idx > endIdx || s[idx] !== 0x5d) {
      for (;;) {
        const [val, afterVal] = this.scanOnce(idx);
        arr.push(val);
        idx = afterVal;
        while (idx <= endIdx && isWs(s[idx])) idx++;
        if (idx <= endIdx && s[idx] === 0x5d) break;
        if (idx > endIdx || s[idx] !== 0x2c) this.err("Expecting ',' delimiter", idx);
        idx++;
        while (idx <= endIdx && isWs(s[idx])) idx++;
      }
    }
    return [arr, idx + 1];
  }
}

/** Code points of a JS string (a lone surrogate counts as one, as in a Python str). */
export function toCodePoints(text: string): number[] {
  const out: number[] = [];
  for (const ch of text) out.push(ch.codePointAt(0)!);
  return out;
}

/**
 * `json.loads(text)` for a str, CPython 3.10. Throws {@link PyJSONDecodeError} (or a `PyException`
 * ValueError for an over-long int literal).
 */
export function pyJsonLoads(text: string): PyValue {
  const cps = toCodePoints(text);
  if (cps[0] === 0xfeff) throw new PyJSONDecodeError('Unexpected UTF-8 BOM (decode using utf-8-sig)', cps, 0);
  const sc = new Scanner(cps);
  let idx = 0;
  while (idx < cps.length && isWs(cps[idx])) idx++;
  let value: PyValue;
  let end: number;
  try {
    [value, end] = sc.scanOnce(idx);
  } catch (e) {
    if (e instanceof StopIteration) throw new PyJSONDecodeError('Expecting value', cps, e.value);
    throw e;
  }
  while (end < cps.length && isWs(cps[end])) end++;
  if (end !== cps.length) throw new PyJSONDecodeError('Extra data', cps, end);
  return value;
}

// A StopIteration inside a container surfaces as "Expecting value" at the inner position (both the C
// scanner and the pure-Python one report it that way), which the top-level catch above already does
// because the inner StopIteration carries the inner index.

function escapeJsonString(s: string, ensureAscii: boolean): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (cp < 0x20) out += '\\u' + cp.toString(16).padStart(4, '0');
    else if (ensureAscii && cp > 0x7e) {
      if (cp > 0xffff) {
        const v = cp - 0x10000;
        const hi = 0xd800 + (v >> 10);
        const lo = 0xdc00 + (v & 0x3ff);
        out += '\\u' + hi.toString(16).padStart(4, '0') + '\\u' + lo.toString(16).padStart(4, '0');
      } else out += '\\u' + cp.toString(16).padStart(4, '0');
    } else out += ch;
  }
  return out + '"';
}

export interface PyJsonDumpsOptions {
  /** Python default: true. The reference prompts use false. */
  ensureAscii?: boolean;
  /** Python default (no indent): [', ', ': ']. */
  separators?: [string, string];
  /**
   * Write every JS number as a Python float (`1.0`): set it for `PyValue`s, where ints are bigints.
   * Default false: integral JS numbers are written as ints (plain JS data such as tool schemas).
   */
  floatNumbers?: boolean;
}

/**
 * `json.dumps(value, ensure_ascii=…, separators=…)`. Accepts `PyValue`s and plain JS data (objects in
 * insertion order; a JS number that is an integer is written as an int, otherwise as a float repr).
 */
export function pyJsonDumps(value: unknown, opts: PyJsonDumpsOptions = {}): string {
  const ensureAscii = opts.ensureAscii ?? true;
  const [itemSep, keySep] = opts.separators ?? [', ', ': '];
  const enc = (v: unknown): string => {
    if (v === null || v === undefined) return 'null';
    if (v === true) return 'true';
    if (v === false) return 'false';
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'number') {
      if (Number.isNaN(v)) return 'NaN';
      if (v === Infinity) return 'Infinity';
      if (v === -Infinity) return '-Infinity';
      return !opts.floatNumbers && Number.isInteger(v) && !Object.is(v, -0) && Math.abs(v) < 2 ** 53 ? String(v) : pyFloatRepr(v);
    }
    if (typeof v === 'string') return escapeJsonString(v, ensureAscii);
    if (Array.isArray(v)) return `[${v.map(enc).join(itemSep)}]`;
    if (v instanceof Map) {
      const parts: string[] = [];
      for (const [k, x] of v) parts.push(`${escapeJsonString(String(k), ensureAscii)}${keySep}${enc(x)}`);
      return `{${parts.join(itemSep)}}`;
    }
    if (typeof v === 'object') {
      const parts = Object.entries(v as Record<string, unknown>).map(
        ([k, x]) => `${escapeJsonString(k, ensureAscii)}${keySep}${enc(x)}`,
      );
      return `{${parts.join(itemSep)}}`;
    }
    throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
  };
  return enc(value);
}

/** A plain-JSON number for a Python number: ints as doubles, non-finite floats as strings. */
export function plainNumber(v: number | bigint | boolean): number | string {
  if (typeof v === 'boolean') return v ? 1 : 0;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'Infinity';
  if (n === -Infinity) return '-Infinity';
  return n;
}

/** Plain JSON data for a parsed value (int/float distinction dropped; non-finite floats as strings). */
export function toPlainJson(v: PyValue): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'number') return plainNumber(v);
  if (Array.isArray(v)) return v.map(toPlainJson);
  const out: Record<string, unknown> = {};
  for (const [k, x] of v) {
    // defineProperty keeps a key like "__proto__" an own data property, as JSON.parse does.
    Object.defineProperty(out, k, { value: toPlainJson(x), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * A `PyValue` for plain JSON data (e.g. arguments edited by a person): integral numbers become ints,
 * other numbers floats. Use the parsed value when the original text is available; this loses `1.0`.
 */
export function fromPlainJson(v: unknown): PyValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean' || typeof v === 'string' || typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(fromPlainJson);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [String(k), fromPlainJson(x)]));
  if (typeof v === 'object') {
    return new Map(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, fromPlainJson(x)]));
  }
  return String(v);
}

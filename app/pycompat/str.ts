/**
 * Python 3.10 `str` semantics on Unicode code points.
 *
 * Reference evaluators (lmms-eval, VLMEvalKit, thinking-in-space, Pixel Reasoner) run on CPython, whose
 * strings are sequences of code points and whose `strip()/split()/isspace()/re \s` use a wider whitespace
 * set than JavaScript's `\s`. Scores must match the reference bit for bit, so every string step a scorer
 * takes goes through these helpers instead of the JS built-ins.
 *
 * Known gap: case mapping and character classes come from the ICU tables of the running Node (Unicode 15)
 * while Python 3.10 uses Unicode 13.0; code points assigned after 13.0 may classify differently.
 */

/**
 * Every code point for which CPython's `str.isspace()` is true (bidi class WS/B/S or category Zs).
 * This is also the set `str.strip()`, `str.split()` and `re`'s `\s` (str patterns) use.
 * Unlike JS `\s`: includes U+001C..U+001F and U+0085; excludes U+FEFF.
 */
export const PY_WHITESPACE_CHARS =
  '\t\n\u000b\u000c\r\u001c\u001d\u001e\u001f \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

/** Regex source of one Python whitespace character, for use inside `new RegExp(..., 'u')`. */
export const PY_WS = '[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';

/**
 * Regex source of one Python `re` word character (str pattern): `str.isalnum()` or `_`.
 * Approximated by Unicode letters and numbers (Python: categories L*, plus chars with a numeric value).
 */
export const PY_WORD = '[\\p{L}\\p{N}_]';
/** Python `\b` (Unicode-aware) as a JS regex source; requires the `u` flag. */
export const PY_WORD_BOUNDARY = `(?:(?<=${PY_WORD})(?!${PY_WORD})|(?<!${PY_WORD})(?=${PY_WORD}))`;
/** Python `\d` (str pattern: any Unicode decimal digit, category Nd); requires the `u` flag. */
export const PY_DIGIT = '\\p{Nd}';

const WS_SET = new Set(Array.from(PY_WHITESPACE_CHARS));

/** `ch.isspace()` for one code point. */
export function isSpace(ch: string): boolean {
  return WS_SET.has(ch);
}

/** The code points of `s` (lone surrogates stay single elements, as in a Python str from JSON). */
export function codePoints(s: string): string[] {
  return Array.from(s);
}

/** `len(s)`: the number of code points. */
export function pyLen(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** `s.lower()`: full Unicode lower-casing ('İ' → 'i̇', final sigma handled). */
export function pyLower(s: string): string {
  return s.toLowerCase();
}

/** `s.upper()`: full Unicode upper-casing ('ß' → 'SS', 'ﬁ' → 'FI'). */
export function pyUpper(s: string): string {
  return s.toUpperCase();
}

function charSetOf(chars: string | undefined): (ch: string) => boolean {
  if (chars === undefined) return isSpace;
  const set = new Set(Array.from(chars));
  return (ch) => set.has(ch);
}

/** `s.strip(chars=None)`. */
export function pyStrip(s: string, chars?: string): string {
  return pyRstrip(pyLstrip(s, chars), chars);
}

/** `s.lstrip(chars=None)`. */
export function pyLstrip(s: string, chars?: string): string {
  const inSet = charSetOf(chars);
  const cps = Array.from(s);
  let i = 0;
  while (i < cps.length && inSet(cps[i]!)) i++;
  return cps.slice(i).join('');
}

/** `s.rstrip(chars=None)`. */
export function pyRstrip(s: string, chars?: string): string {
  const inSet = charSetOf(chars);
  const cps = Array.from(s);
  let j = cps.length;
  while (j > 0 && inSet(cps[j - 1]!)) j--;
  return cps.slice(0, j).join('');
}

/**
 * `s.split(sep=None, maxsplit=-1)`.
 * Without `sep`: split on runs of Python whitespace, dropping empty strings.
 * With `sep`: plain split on the separator, keeping empties (`''.split(',') == ['']`).
 */
export function pySplit(s: string, sep?: string, maxsplit = -1): string[] {
  if (sep !== undefined) {
    if (sep === '') throw new PyValueError('empty separator');
    const parts = s.split(sep);
    if (maxsplit < 0 || parts.length <= maxsplit + 1) return parts;
    return [...parts.slice(0, maxsplit), parts.slice(maxsplit).join(sep)];
  }
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  const cps = Array.from(s);
  for (let i = 0; i < cps.length; i++) {
    const ch = cps[i]!;
    if (isSpace(ch)) {
      if (inWord) {
        out.push(cur);
        cur = '';
        inWord = false;
        if (maxsplit >= 0 && out.length === maxsplit) {
          // The rest (with leading whitespace removed) is one last element.
          const rest = pyLstrip(cps.slice(i).join(''));
          if (rest !== '') out.push(rest);
          return out;
        }
      }
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

/** `s[start:end]` with Python slice semantics on code points (negative indices count from the end). */
export function pySlice(s: string, start?: number, end?: number): string {
  const cps = Array.from(s);
  const n = cps.length;
  const norm = (v: number | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    if (v < 0) return Math.max(0, n + v);
    return Math.min(n, v);
  };
  const a = norm(start, 0);
  const b = norm(end, n);
  return b <= a ? '' : cps.slice(a, b).join('');
}

/** `s.count(sub)`: non-overlapping occurrences (Python counts `len(s)+1` for an empty `sub`). */
export function pyCount(s: string, sub: string): number {
  if (sub === '') return pyLen(s) + 1;
  let n = 0;
  let i = s.indexOf(sub);
  while (i !== -1) {
    n++;
    i = s.indexOf(sub, i + sub.length);
  }
  return n;
}

/** Levenshtein distance between `a` and `b`, counted on code points (lmms-eval / VLMEvalKit `levenshtein_distance`). */
export function levenshtein(a: string, b: string): number {
  let s1 = Array.from(a);
  let s2 = Array.from(b);
  if (s1.length > s2.length) [s1, s2] = [s2, s1];
  let distances: number[] = Array.from({ length: s1.length + 1 }, (_, i) => i);
  for (let i2 = 0; i2 < s2.length; i2++) {
    const c2 = s2[i2];
    const next: number[] = [i2 + 1];
    for (let i1 = 0; i1 < s1.length; i1++) {
      if (s1[i1] === c2) next.push(distances[i1]!);
      else next.push(1 + Math.min(distances[i1]!, distances[i1 + 1]!, next[next.length - 1]!));
    }
    distances = next;
  }
  return distances[distances.length - 1]!;
}

/** A Python-style `ValueError`, carrying the exact CPython message. */
export class PyValueError extends Error {
  readonly pyType = 'ValueError';
  constructor(message: string) {
    super(message);
    this.name = 'ValueError';
  }
}

const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** `str.isprintable()` for one code point (space is printable; other separators and controls are not). */
export function isPrintable(ch: string): boolean {
  return ch === ' ' || !NON_PRINTABLE.test(ch);
}

/** `repr(s)` for a str, exactly as CPython 3.10 writes it (quote choice and escapes). */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += '\\' + ch;
    else if (ch === '\t') out += '\\t';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (cp < 0x20 || cp === 0x7f) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (cp < 0x7f) out += ch;
    else if (isPrintable(ch)) out += ch;
    else if (cp <= 0xff) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (cp <= 0xffff) out += '\\u' + cp.toString(16).padStart(4, '0');
    else out += '\\U' + cp.toString(16).padStart(8, '0');
  }
  return out + quote;
}

const ND = /^\p{Nd}$/u;

/** `unicodedata.decimal(ch)` for one code point, or -1 (Nd digits come in aligned runs of ten). */
export function decimalValue(ch: string): number {
  const cp = ch.codePointAt(0)!;
  if (cp >= 0x30 && cp <= 0x39) return cp - 0x30;
  if (!ND.test(ch)) return -1;
  let start = cp;
  while (ND.test(String.fromCodePoint(start - 1))) start--;
  return (cp - start) % 10;
}

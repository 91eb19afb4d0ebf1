/**
 * A small Python tokenizer for colouring model-written code in step cards: comments, strings (prefixes,
 * triple quotes, escapes; an unclosed one runs to the end), numbers, keywords, builtins, and names
 * that are called. Everything else is plain text. The token texts always concatenate back to the input.
 */
export type PyTokenKind = 'kw' | 'builtin' | 'str' | 'com' | 'num' | 'fn' | 'op' | 'text';
export interface PyToken {
  kind: PyTokenKind;
  text: string;
}

const KEYWORDS = new Set('False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case'.split(' '));
const BUILTINS = new Set('print len range int float str list dict set tuple abs min max sum sorted enumerate zip map filter open round isinstance type super any all bool bytes'.split(' '));

const TOKEN = new RegExp(
  [
    '(?<com>#[^\\n]*)',
    // strings: optional prefix, triple or single quotes; an unclosed string runs to the end of the line (or text)
    `(?<str>(?:[rRbBuUfF]{1,2})?(?:"""[\\s\\S]*?(?:"""|$)|'''[\\s\\S]*?(?:'''|$)|"(?:[^"\\\\\\n]|\\\\.)*(?:"|$)|'(?:[^'\\\\\\n]|\\\\.)*(?:'|$)))`,
    '(?<num>\\b(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\\d[\\d_]*\\.?[\\d_]*|\\.\\d[\\d_]*)(?:[eE][+-]?\\d+)?[jJ]?)\\b)',
    '(?<name>[A-Za-z_][A-Za-z0-9_]*)',
    '(?<op>[-+*/%=<>!&|^~@:,.;()\\[\\]{}]+)',
  ].join('|'),
  'gm',
);

export function tokenizePython(src: string): PyToken[] {
  const out: PyToken[] = [];
  let last = 0;
  const push = (kind: PyTokenKind, text: string) => {
    if (!text) return;
    const prev = out[out.length - 1];
    if (prev && prev.kind === kind && kind === 'text') prev.text += text;
    else out.push({ kind, text });
  };
  for (const m of src.matchAll(TOKEN)) {
    const i = m.index;
    if (i > last) push('text', src.slice(last, i));
    const g = m.groups!;
    if (g.com !== undefined) push('com', m[0]);
    else if (g.str !== undefined) push('str', m[0]);
    else if (g.num !== undefined) push('num', m[0]);
    else if (g.name !== undefined) {
      const w = m[0];
      const called = /^\s*\(/.test(src.slice(i + w.length));
      push(KEYWORDS.has(w) ? 'kw' : BUILTINS.has(w) ? 'builtin' : called ? 'fn' : 'text', w);
    } else push('op', m[0]);
    last = i + m[0].length;
  }
  if (last < src.length) push('text', src.slice(last));
  return out;
}

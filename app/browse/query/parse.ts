/**
 * The sample query language.
 *
 *   query    := or?                      (empty query = every sample)
 *   or       := and ( 'or' and )*
 *   and      := not ( 'and' not )*
 *   not      := 'not' not | primary
 *   primary  := '(' or ')' | field op value | boolField
 *   op       := = | == | != | < | <= | > | >= | ~ (contains) | !~ (does not contain)
 *   value    := "quoted" | 'quoted' | bare-word     (bare words: no spaces or ( ) = ! < > ~ " ')
 *
 * Keywords are case-insensitive; `&&`, `||` and `!` are accepted for and/or/not. Text comparisons are
 * case-insensitive. A missing value (no category, no latency) fails every comparison, and `!=`/`!~`
 * are exactly `not (=)`/`not (~)`. See fields.ts for the field list.
 */
import { FIELDS, resolveField, suggestField, editDistance, type QueryField } from './fields';

export type CmpOp = '=' | '!=' | '<' | '<=' | '>' | '>=' | '~' | '!~';

export type QueryNode =
  | { kind: 'all' }
  | { kind: 'and' | 'or'; left: QueryNode; right: QueryNode }
  | { kind: 'not'; expr: QueryNode }
  | { kind: 'cmp'; field: QueryField; op: CmpOp; value: string | number | boolean; column: number };

/** A query the parser rejected; `column` is 1-based, `length` the width of the offending text. */
export class QueryError extends Error {
  constructor(
    readonly reason: string,
    readonly query: string,
    readonly column: number,
    readonly length = 1,
  ) {
    super(`${reason} (column ${column})`);
    this.name = 'QueryError';
  }
  /** The message with the query and a caret line under the offending text. */
  pretty(): string {
    return `${this.message}\n  ${this.query}\n  ${' '.repeat(Math.max(0, this.column - 1))}${'^'.repeat(Math.max(1, this.length))}`;
  }
}

type TokKind = 'lparen' | 'rparen' | 'op' | 'string' | 'word' | 'and' | 'or' | 'not' | 'eof';
interface Token {
  kind: TokKind;
  text: string;
  /** Unquoted value for strings and words. */
  value: string;
  column: number;
  length: number;
}

const OPS: readonly string[] = ['==', '!=', '<=', '>=', '!~', '=', '<', '>', '~'];
const WORD_STOP = /[\s()=!<>~"']/;

function tokenize(q: string): Token[] {
  const toks: Token[] = [];
  let i = 0;
  while (i < q.length) {
    const ch = q[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const col = i + 1;
    if (ch === '(' || ch === ')') {
      toks.push({ kind: ch === '(' ? 'lparen' : 'rparen', text: ch, value: ch, column: col, length: 1 });
      i++;
      continue;
    }
    if (ch === '"' || ch === "'") {
      let j = i + 1;
      let val = '';
      let closed = false;
      while (j < q.length) {
        const c = q[j]!;
        if (c === '\\' && j + 1 < q.length) {
          val += q[j + 1]!;
          j += 2;
          continue;
        }
        if (c === ch) {
          closed = true;
          j++;
          break;
        }
        val += c;
        j++;
      }
      if (!closed) throw new QueryError(`unterminated string: add the closing ${ch}`, q, col, q.length - i);
      toks.push({ kind: 'string', text: q.slice(i, j), value: val, column: col, length: j - i });
      i = j;
      continue;
    }
    const op = OPS.find((o) => q.startsWith(o, i));
    if (op) {
      toks.push({ kind: 'op', text: op, value: op === '==' ? '=' : op, column: col, length: op.length });
      i += op.length;
      continue;
    }
    if (ch === '!') {
      toks.push({ kind: 'not', text: '!', value: '!', column: col, length: 1 });
      i++;
      continue;
    }
    let j = i;
    while (j < q.length && !WORD_STOP.test(q[j]!)) j++;
    const word = q.slice(i, j);
    const lw = word.toLowerCase();
    const kind: TokKind = lw === 'and' || word === '&&' ? 'and' : lw === 'or' || word === '||' ? 'or' : lw === 'not' ? 'not' : 'word';
    toks.push({ kind, text: word, value: word, column: col, length: word.length });
    i = j;
  }
  toks.push({ kind: 'eof', text: '', value: '', column: q.length + 1, length: 1 });
  return toks;
}

const TRUE_WORDS = ['true', 'yes', '1'];
const FALSE_WORDS = ['false', 'no', '0'];

/** Parse a query into an AST; throws QueryError with the column of the problem. */
export function parseQuery(query: string): QueryNode {
  const toks = tokenize(query);
  let pos = 0;
  const peek = (): Token => toks[pos]!;
  const next = (): Token => toks[pos++]!;
  const err = (msg: string, t: Token): QueryError => new QueryError(msg, query, t.column, t.kind === 'eof' ? 1 : t.length);
  const describe = (t: Token): string => (t.kind === 'eof' ? 'the end of the query' : `'${t.text}'`);

  if (peek().kind === 'eof') return { kind: 'all' };

  const parseOr = (): QueryNode => {
    let left = parseAnd();
    while (peek().kind === 'or') {
      next();
      left = { kind: 'or', left, right: parseAnd() };
    }
    return left;
  };
  const parseAnd = (): QueryNode => {
    let left = parseNot();
    for (;;) {
      const t = peek();
      if (t.kind === 'and') {
        next();
        left = { kind: 'and', left, right: parseNot() };
      } else if (t.kind === 'word' || t.kind === 'lparen' || t.kind === 'not' || t.kind === 'string') {
        const prev = toks[pos - 1];
        const startsCondition = toks[pos + 1]?.kind === 'op';
        const hint = t.kind === 'word' && !startsCondition && prev && (prev.kind === 'word' || prev.kind === 'string') ? ' (put a value that contains spaces in quotes)' : '';
        throw err(`expected 'and' or 'or' before ${describe(t)}${hint}`, t);
      } else if (t.kind === 'op') {
        throw err(`unexpected operator '${t.text}': a condition has one operator (field op value)`, t);
      } else return left;
    }
  };
  const parseNot = (): QueryNode => {
    if (peek().kind === 'not') {
      next();
      return { kind: 'not', expr: parseNot() };
    }
    return parsePrimary();
  };
  const parsePrimary = (): QueryNode => {
    const t = next();
    if (t.kind === 'lparen') {
      if (peek().kind === 'rparen') throw err(`empty parentheses`, peek());
      const inner = parseOr();
      const close = peek();
      if (close.kind !== 'rparen') {
        if (close.kind === 'eof') throw err(`missing ')' to close this '('`, t);
        throw err(`expected ')' but found ${describe(close)}`, close);
      }
      next();
      return inner;
    }
    if (t.kind === 'rparen') throw err(`unexpected ')': there is no '(' to close`, t);
    if (t.kind === 'eof') throw err(`the query ends where a condition was expected (field op value)`, t);
    if (t.kind === 'and' || t.kind === 'or') throw err(`'${t.text}' needs a condition before it`, t);
    if (t.kind === 'op') throw err(`expected a field name before '${t.text}'`, t);
    if (t.kind === 'string') throw err(`expected a field name, found the text ${t.text}; use field ~ ${t.text} to search a field`, t);
    const field = resolveField(t.value);
    if (!field) {
      const s = suggestField(t.value);
      throw err(`unknown field '${t.value}'${s ? ` — did you mean '${s}'?` : ''}; fields: ${Object.keys(FIELDS).join(', ')}`, t);
    }
    const spec = FIELDS[field];
    const opTok = peek();
    if (opTok.kind !== 'op') {
      if (spec.type === 'bool') return { kind: 'cmp', field, op: '=', value: true, column: t.column };
      throw err(`expected an operator (=, !=, <, <=, >, >=, ~, !~) after '${t.text}', found ${describe(opTok)}`, opTok);
    }
    next();
    const op = opTok.value as CmpOp;
    const v = next();
    if (v.kind !== 'word' && v.kind !== 'string') {
      if (v.kind === 'and' || v.kind === 'or' || v.kind === 'not') throw err(`expected a value after '${opTok.text}', found the keyword '${v.text}' (quote it if you mean the word)`, v);
      throw err(`expected a value after '${opTok.text}', found ${describe(v)}`, v);
    }
    return { kind: 'cmp', field, op, value: typedValue(field, op, v, opTok), column: t.column };
  };

  const typedValue = (field: QueryField, op: CmpOp, v: Token, opTok: Token): string | number | boolean => {
    const spec = FIELDS[field];
    const contains = op === '~' || op === '!~';
    const ordered = op === '<' || op === '<=' || op === '>' || op === '>=';
    switch (spec.type) {
      case 'number': {
        if (contains) throw err(`'${opTok.text}' (contains) applies to text fields; '${field}' is a number — use =, !=, <, <=, >, >=`, opTok);
        const n = parseNumber(v.value, field);
        if (n === undefined) throw err(`'${field}' needs a number, got '${v.value}'`, v);
        return n;
      }
      case 'bool': {
        if (contains || ordered) throw err(`'${field}' is true or false; use = or !=, not '${opTok.text}'`, opTok);
        const lv = v.value.toLowerCase();
        if (TRUE_WORDS.includes(lv)) return true;
        if (FALSE_WORDS.includes(lv)) return false;
        throw err(`'${field}' is true or false, got '${v.value}'`, v);
      }
      case 'string':
      case 'enum': {
        if (ordered) throw err(`'${opTok.text}' compares numbers; '${field}' is text — use =, !=, ~ or !~`, opTok);
        if (spec.type === 'enum' && !contains) {
          const lv = v.value.toLowerCase();
          const values = spec.values ?? [];
          if (!values.includes(lv)) {
            const near = values.reduce<[string, number]>((b, x) => {
              const d = editDistance(lv, x);
              return d < b[1] ? [x, d] : b;
            }, ['', Infinity]);
            throw err(`unknown ${field} value '${v.value}'${near[1] <= 2 ? ` — did you mean '${near[0]}'?` : ''}; one of ${values.join(', ')}`, v);
          }
          return lv;
        }
        return v.value;
      }
      case 'labels': {
        if (ordered) {
          const n = parseNumber(v.value, field);
          if (n === undefined) throw err(`'${opTok.text}' on '${field}' compares the number of labels; got '${v.value}', expected a number`, v);
          return n;
        }
        if (!contains && /^\d+$/.test(v.value) && v.kind === 'word') return Number(v.value);
        return v.value;
      }
    }
  };

  const ast = parseOr();
  const rest = peek();
  if (rest.kind === 'rparen') throw err(`unexpected ')': there is no '(' to close`, rest);
  if (rest.kind !== 'eof') throw err(`unexpected ${describe(rest)}`, rest);
  return ast;
}

/** Numbers, with `s`/`ms` suffixes for latency (`latency > 2s`). */
function parseNumber(s: string, field: QueryField): number | undefined {
  const m = /^([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)(ms|s)?$/i.exec(s.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  if (!Number.isFinite(n)) return undefined;
  const unit = m[2]?.toLowerCase();
  if (unit && field !== 'latency') return undefined;
  return unit === 's' ? n * 1000 : n;
}

/** The canonical text of an AST (for display and round-trip tests). */
export function formatQuery(node: QueryNode): string {
  const fmt = (n: QueryNode, parent: 'or' | 'and' | 'not' | 'top'): string => {
    switch (n.kind) {
      case 'all':
        return '';
      case 'cmp': {
        const v = typeof n.value === 'string' ? (/^[^\s()=!<>~"']+$/.test(n.value) && !/^(and|or|not|&&|\|\|)$/i.test(n.value) && !(/^\d+$/.test(n.value) && n.field === 'label') ? n.value : quote(n.value)) : String(n.value);
        return `${n.field} ${n.op} ${v}`;
      }
      case 'not':
        return `not ${fmt(n.expr, 'not')}`;
      case 'and': {
        const s = `${fmt(n.left, 'and')} and ${fmt(n.right, 'and')}`;
        return parent === 'not' ? `(${s})` : s;
      }
      case 'or': {
        const s = `${fmt(n.left, 'or')} or ${fmt(n.right, 'or')}`;
        return parent === 'and' || parent === 'not' ? `(${s})` : s;
      }
    }
  };
  return fmt(node, 'top');
}

function quote(s: string): string {
  return `"${s.replace(/[\\"]/g, '\\$&')}"`;
}

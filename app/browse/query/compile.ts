/**
 * Turning a parsed query into a predicate: over columns (SampleIndex, fast: text equality becomes a
 * lookup in a per-dictionary mask) or over plain row objects (matchRow, for small lists and tests).
 * Both follow the same rules; a property test checks they agree.
 */
import type { NumberField, QueryField, StringField } from './fields';
import { parseQuery, type QueryNode } from './parse';

/** Columnar access the compiled predicate reads. Missing values: code < 0, NaN, or -1 for booleans. */
export interface QuerySource {
  readonly size: number;
  /** Dictionary-encoded text column. */
  dict(field: StringField): { codes: ArrayLike<number>; values: readonly string[]; lower?: readonly string[] };
  num(field: NumberField): ArrayLike<number>;
  /** 1 true, 0 false, -1 missing. */
  bool(field: 'correct' | 'disagree'): ArrayLike<number>;
  /** The row's current labels. */
  labels(row: number): readonly string[] | undefined;
}

/** A plain row for matchRow. */
export interface QueryRow {
  run?: string;
  qid?: string;
  bench?: string;
  category?: string;
  stop?: string;
  correct?: boolean;
  disagree?: boolean;
  score?: number;
  calls?: number;
  tool_errors?: number;
  latency?: number;
  labels?: readonly string[];
}

export interface CompiledQuery {
  text: string;
  ast: QueryNode;
  /** Fields the query reads. */
  fields: QueryField[];
  /** A row-id predicate over `source`. Bind again after the source grows (dictionaries change). */
  bind(source: QuerySource): (row: number) => boolean;
  /** Test one plain row. */
  matches(row: QueryRow): boolean;
}

/** Parse + compile; throws QueryError on a bad query. */
export function compileQuery(text: string): CompiledQuery {
  const ast = parseQuery(text);
  const fields = new Set<QueryField>();
  const walk = (n: QueryNode): void => {
    if (n.kind === 'cmp') fields.add(n.field);
    else if (n.kind === 'not') walk(n.expr);
    else if (n.kind === 'and' || n.kind === 'or') {
      walk(n.left);
      walk(n.right);
    }
  };
  walk(ast);
  return { text, ast, fields: [...fields], bind: (s) => bindNode(ast, s), matches: (r) => matchRow(ast, r) };
}

type Pred = (i: number) => boolean;

function bindNode(n: QueryNode, src: QuerySource): Pred {
  switch (n.kind) {
    case 'all':
      return () => true;
    case 'and': {
      const a = bindNode(n.left, src);
      const b = bindNode(n.right, src);
      return (i) => a(i) && b(i);
    }
    case 'or': {
      const a = bindNode(n.left, src);
      const b = bindNode(n.right, src);
      return (i) => a(i) || b(i);
    }
    case 'not': {
      const a = bindNode(n.expr, src);
      return (i) => !a(i);
    }
    case 'cmp':
      return bindCmp(n, src);
  }
}

function bindCmp(n: Extract<QueryNode, { kind: 'cmp' }>, src: QuerySource): Pred {
  const { field, op, value } = n;
  const negate = op === '!=' || op === '!~';
  let p: Pred;
  switch (field) {
    case 'bench':
    case 'category':
    case 'stop':
    case 'qid':
    case 'run': {
      const { codes, values, lower } = src.dict(field);
      const want = String(value).toLowerCase();
      const contains = op === '~' || op === '!~';
      // One string test per distinct value, then a lookup per row.
      const mask = new Uint8Array(values.length);
      for (let c = 0; c < values.length; c++) {
        const v = lower ? lower[c]! : values[c]!.toLowerCase();
        mask[c] = (contains ? v.includes(want) : v === want) ? 1 : 0;
      }
      p = (i) => {
        const c = codes[i]!;
        return c >= 0 && mask[c] === 1;
      };
      break;
    }
    case 'correct':
    case 'disagree': {
      const col = src.bool(field);
      const want = value === true ? 1 : 0;
      p = (i) => col[i] === want;
      break;
    }
    case 'score':
    case 'calls':
    case 'tool_errors':
    case 'latency': {
      const col = src.num(field);
      const v = value as number;
      p = numPred(op, v, (i) => col[i]!);
      break;
    }
    case 'label': {
      if (typeof value === 'number') {
        p = numPred(op, value, (i) => src.labels(i)?.length ?? 0);
        break;
      }
      p = labelPred(op, value as string, (i) => src.labels(i));
      break;
    }
  }
  return negate ? (i) => !p(i) : p;
}

/** Numeric comparison where NaN (missing) fails everything; `!=` is built as not(=) by the caller. */
function numPred(op: string, v: number, get: (i: number) => number): Pred {
  switch (op) {
    case '<':
      return (i) => get(i) < v;
    case '<=':
      return (i) => get(i) <= v;
    case '>':
      return (i) => get(i) > v;
    case '>=':
      return (i) => get(i) >= v;
    case '!=':
      return (i) => get(i) === v; // negated by the caller
    default:
      return (i) => get(i) === v;
  }
}

function labelPred(op: string, value: string, get: (i: number) => readonly string[] | undefined): Pred {
  const want = value.toLowerCase();
  if (op === '~' || op === '!~') return (i) => (get(i) ?? []).some((l) => l.toLowerCase().includes(want));
  if (want === 'none') return (i) => (get(i)?.length ?? 0) === 0;
  if (want === 'any') return (i) => (get(i)?.length ?? 0) > 0;
  return (i) => (get(i) ?? []).some((l) => l.toLowerCase() === want);
}

/** Evaluate an AST against one plain row (same semantics as the columnar predicate). */
export function matchRow(n: QueryNode, r: QueryRow): boolean {
  switch (n.kind) {
    case 'all':
      return true;
    case 'and':
      return matchRow(n.left, r) && matchRow(n.right, r);
    case 'or':
      return matchRow(n.left, r) || matchRow(n.right, r);
    case 'not':
      return !matchRow(n.expr, r);
    case 'cmp': {
      const { field, op, value } = n;
      if (field === 'label' && typeof value === 'number') {
        return cmpNum(op, r.labels?.length ?? 0, value);
      }
      const negate = op === '!=' || op === '!~';
      let res: boolean;
      if (field === 'label') {
        res = labelPred(op, value as string, () => r.labels)(0);
      } else if (field === 'correct' || field === 'disagree') {
        res = r[field] !== undefined && r[field] === value;
      } else if (field === 'score' || field === 'calls' || field === 'tool_errors' || field === 'latency') {
        const x = r[field];
        res = x !== undefined && cmpNum(op === '!=' ? '=' : op, x, value as number);
      } else {
        const x = r[field];
        const want = String(value).toLowerCase();
        res = x !== undefined && (op === '~' || op === '!~' ? x.toLowerCase().includes(want) : x.toLowerCase() === want);
      }
      return negate ? !res : res;
    }
  }
}

function cmpNum(op: string, x: number, v: number): boolean {
  switch (op) {
    case '<':
      return x < v;
    case '<=':
      return x <= v;
    case '>':
      return x > v;
    case '>=':
      return x >= v;
    case '!=':
      return x !== v;
    default:
      return x === v;
  }
}

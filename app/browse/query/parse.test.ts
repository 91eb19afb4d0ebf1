import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileQuery, formatQuery, matchRow, parseQuery, QueryError, type QueryNode } from './index';

function errorOf(q: string): QueryError {
  try {
    parseQuery(q);
  } catch (e) {
    if (e instanceof QueryError) return e;
    throw e;
  }
  throw new Error(`expected '${q}' to fail`);
}

describe('parseQuery', () => {
  it('parses the documented examples', () => {
    expect(formatQuery(parseQuery('correct = false and calls > 1 and bench = vstar'))).toBe('correct = false and calls > 1 and bench = vstar');
    expect(parseQuery('label = wrong_region')).toEqual({ kind: 'cmp', field: 'label', op: '=', value: 'wrong_region', column: 1 });
    expect(formatQuery(parseQuery('stop != answer or tool_errors >= 1'))).toBe('stop != answer or tool_errors >= 1');
    expect(parseQuery('category ~ "color"')).toMatchObject({ field: 'category', op: '~', value: 'color' });
  });

  it('binds and tighter than or, not tighter than and; parentheses override', () => {
    expect(formatQuery(parseQuery('a_is = x or calls = 1 and correct'.replace('a_is', 'bench')))).toBe('bench = x or calls = 1 and correct = true');
    const ast = parseQuery('bench = x or calls = 1 and correct');
    expect(ast.kind).toBe('or');
    expect(ast.kind === 'or' && ast.right.kind).toBe('and');
    const p = parseQuery('(bench = x or calls = 1) and correct');
    expect(p.kind).toBe('and');
    const n = parseQuery('not correct and calls = 0');
    expect(n.kind).toBe('and');
    expect(formatQuery(parseQuery('not (correct or calls = 0)'))).toBe('not (correct = true or calls = 0)');
  });

  it('accepts quoted and bare values, keyword case, == and symbolic and/or/not', () => {
    expect(parseQuery("qid = 'vstar 12'")).toMatchObject({ value: 'vstar 12' });
    expect(parseQuery('qid = "say \\"hi\\""')).toMatchObject({ value: 'say "hi"' });
    expect(formatQuery(parseQuery('bench == vstar AND NOT correct'))).toBe('bench = vstar and not correct = true');
    expect(formatQuery(parseQuery('bench = a && !correct || calls=2'))).toBe('bench = a and not correct = true or calls = 2');
    expect(parseQuery('stop = ANSWER')).toMatchObject({ value: 'answer' });
    expect(parseQuery('latency > 2s')).toMatchObject({ value: 2000 });
    expect(parseQuery('latency > 1500ms')).toMatchObject({ value: 1500 });
    expect(parseQuery('labels >= 2')).toMatchObject({ field: 'label', op: '>=', value: 2 });
    expect(parseQuery('stop_reason = max_calls')).toMatchObject({ field: 'stop', value: 'max_calls' });
    expect(parseQuery('   ')).toEqual({ kind: 'all' });
  });

  const cases: Array<[string, number, RegExp]> = [
    ['bnch = vstar', 1, /unknown field 'bnch' — did you mean 'bench'\?/],
    ['calls > many', 9, /'calls' needs a number, got 'many'/],
    ['calls', 6, /expected an operator .* after 'calls', found the end of the query/],
    ['bench =', 8, /expected a value after '=', found the end of the query/],
    ['bench = vstar calls > 1', 15, /expected 'and' or 'or' before 'calls' \(column/],
    ['(correct and calls > 1', 1, /missing '\)' to close this '\('/],
    ['qid = a b', 9, /expected 'and' or 'or' before 'b' \(put a value that contains spaces in quotes\)/],
    ['correct)', 8, /unexpected '\)'/],
    ['category ~ "col', 12, /unterminated string/],
    ['bench < 3', 7, /'<' compares numbers; 'bench' is text/],
    ['calls ~ 3', 7, /applies to text fields; 'calls' is a number/],
    ['correct = maybe', 11, /'correct' is true or false, got 'maybe'/],
    ['stop = anser', 8, /unknown stop value 'anser' — did you mean 'answer'\?/],
    ['correct and', 12, /the query ends where a condition was expected/],
    ['and correct', 1, /'and' needs a condition before it/],
    ['bench = and', 9, /found the keyword 'and'/],
    ['()', 2, /empty parentheses/],
    ['calls > 1s', 9, /'calls' needs a number/],
    ['= 3', 1, /expected a field name before '='/],
    ['calls = = 3', 9, /expected a value after '='/],
  ];
  it.each(cases)('%s → column %i', (q, col, re) => {
    const e = errorOf(q);
    expect(e.column).toBe(col);
    expect(e.message).toMatch(re);
    expect(e.message).toContain(`(column ${col})`);
  });

  it('pretty() puts a caret under the problem', () => {
    const e = errorOf('correct = false and calls > many');
    expect(e.column).toBe(29);
    expect(e.pretty().split('\n')).toEqual([e.message, '  correct = false and calls > many', `  ${' '.repeat(28)}^^^^`]);
  });

  it('format → parse round-trips random queries', () => {
    const value = fc.oneof(fc.constantFrom('vstar', 'a b', 'x"y', 'and', 'back\\slash', '12', 'é'), fc.string({ minLength: 1, maxLength: 5 }));
    const leaf: fc.Arbitrary<QueryNode> = fc.oneof(
      fc.record({ kind: fc.constant('cmp' as const), field: fc.constantFrom('bench' as const, 'category' as const, 'qid' as const, 'run' as const), op: fc.constantFrom('=' as const, '!=' as const, '~' as const, '!~' as const), value, column: fc.constant(0) }),
      fc.record({ kind: fc.constant('cmp' as const), field: fc.constantFrom('calls' as const, 'score' as const, 'latency' as const, 'tool_errors' as const), op: fc.constantFrom('=' as const, '!=' as const, '<' as const, '<=' as const, '>' as const, '>=' as const), value: fc.integer({ min: 0, max: 9 }), column: fc.constant(0) }),
      fc.record({ kind: fc.constant('cmp' as const), field: fc.constant('correct' as const), op: fc.constantFrom('=' as const, '!=' as const), value: fc.boolean(), column: fc.constant(0) }),
      fc.record({ kind: fc.constant('cmp' as const), field: fc.constant('label' as const), op: fc.constantFrom('=' as const, '!=' as const), value: fc.constantFrom('wrong_region', 'none', 'any'), column: fc.constant(0) }),
    );
    const tree = fc.letrec<{ node: QueryNode }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.record({ kind: fc.constantFrom('and' as const, 'or' as const), left: tie('node'), right: tie('node') }),
        fc.record({ kind: fc.constant('not' as const), expr: tie('node') }),
      ),
    })).node;
    const rows = Array.from({ length: 40 }, (_, i) => ({
      bench: ['vstar', 'a b', 'x"y', 'and'][i % 4]!,
      qid: String(i),
      run: 'r',
      calls: i % 5,
      score: i % 2,
      latency: i % 7 === 0 ? undefined : i * 3,
      tool_errors: i % 3,
      correct: i % 2 === 0,
      labels: i % 3 === 0 ? ['wrong_region'] : [],
      ...(i % 6 === 0 ? {} : { category: ['é', '12', 'back\\slash'][i % 3]! }),
    }));
    fc.assert(
      fc.property(tree, (ast) => {
        const text = formatQuery(ast);
        const q = compileQuery(text);
        // Same meaning on every row (associativity may regroup, so compare behaviour, then text).
        for (const r of rows) expect(q.matches(r)).toBe(matchRow(ast, r));
        expect(formatQuery(q.ast)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * The golden-vector runner: load a vectors JSON (an array of `{suite, name, input, expected, note?}`),
 * run every case through its suite, compare with exact deep equality (IEEE doubles by `===`; non-finite
 * doubles are the strings "NaN"/"Infinity"/"-Infinity"), and report `N passed, M failed[, K skipped]`.
 * A case whose suite is unknown fails; a case is skipped only when listed in `KNOWN_UNSUPPORTED`.
 */
import { readFileSync } from 'node:fs';
import { scorerSuites } from '../bench/scorers/vectorSuites';
import { protocolSuites } from './protocolSuites';
import { pyvisionSuites } from './pyvisionSuites';

export interface VectorCase {
  suite: string;
  name: string;
  input: unknown;
  expected: unknown;
  note?: string;
}

/** `meta.name` is the case name, for the few suites whose README ties a field to it (`judgeprompt_*`). */
export type SuiteFn = (input: unknown, meta?: { name: string }) => unknown;

/** Every suite the runner knows: the protocol and PyVision suites here plus the scorer suites of `app/bench`. */
export function suiteRegistry(): Record<string, SuiteFn> {
  return { ...scorerSuites, ...protocolSuites, ...pyvisionSuites };
}

/**
 * Cases we knowingly do not support, by `suite/name`, with the reason printed above the result line.
 * Empty: int-vs-float cases are supported (the call JSON is read with a Python-compatible parser).
 */
export const KNOWN_UNSUPPORTED: Record<string, string> = {};

export interface Difference {
  path: string;
  expected: unknown;
  actual: unknown;
}

export interface CaseResult {
  suite: string;
  name: string;
  status: 'passed' | 'failed' | 'skipped';
  differences?: Difference[];
  /** A thrown error (bad input, unknown suite, crash). */
  error?: string;
  reason?: string;
}

export interface RunSummary {
  passed: number;
  failed: number;
  skipped: number;
  results: CaseResult[];
}

/** Plain JSON for comparison: bigint → number, non-finite → strings, Map → object, undefined dropped. */
export function toComparable(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (v === Infinity) return 'Infinity';
    if (v === -Infinity) return '-Infinity';
    return v;
  }
  if (Array.isArray(v)) return v.map(toComparable);
  if (v instanceof Map) return toComparable(Object.fromEntries(v));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      Object.defineProperty(out, k, { value: toComparable(x), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return v;
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** Exact deep comparison; returns every differing path (`$` = the root). */
export function deepDiff(expected: unknown, actual: unknown, path = '$', out: Difference[] = []): Difference[] {
  const ke = kind(expected);
  const ka = kind(actual);
  if (ke !== ka) {
    out.push({ path, expected, actual });
    return out;
  }
  if (ke === 'array') {
    const e = expected as unknown[];
    const a = actual as unknown[];
    if (e.length !== a.length) {
      out.push({ path: `${path}.length`, expected: e.length, actual: a.length });
    }
    for (let i = 0; i < Math.min(e.length, a.length); i++) deepDiff(e[i], a[i], `${path}[${i}]`, out);
    return out;
  }
  if (ke === 'object') {
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const keys = new Set([...Object.keys(e), ...Object.keys(a)]);
    for (const k of keys) {
      const p = /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`;
      if (!Object.hasOwn(a, k)) out.push({ path: p, expected: e[k], actual: '<missing>' });
      else if (!Object.hasOwn(e, k)) out.push({ path: p, expected: '<absent>', actual: a[k] });
      else deepDiff(e[k], a[k], p, out);
    }
    return out;
  }
  if (expected !== actual) out.push({ path, expected, actual });
  return out;
}

/** Parse and check the vectors file shape; throws an error naming the file and the bad entry. */
export function parseVectors(text: string, source = 'vectors'): VectorCase[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(data)) throw new Error(`${source}: expected a JSON array of cases, got ${kind(data)}`);
  return data.map((c, i) => {
    if (c === null || typeof c !== 'object' || Array.isArray(c)) throw new Error(`${source}: case #${i} is not an object`);
    const o = c as Record<string, unknown>;
    if (typeof o.suite !== 'string') throw new Error(`${source}: case #${i} has no string "suite"`);
    if (typeof o.name !== 'string') throw new Error(`${source}: case #${i} (${o.suite}) has no string "name"`);
    if (!('expected' in o)) throw new Error(`${source}: case #${i} (${o.suite}/${o.name}) has no "expected"`);
    return { suite: o.suite, name: o.name, input: o.input, expected: o.expected, note: typeof o.note === 'string' ? o.note : undefined };
  });
}

export function loadVectors(file: string): VectorCase[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read vectors file ${file}: ${(e as Error).message}`);
  }
  return parseVectors(text, file);
}

export interface RunOptions {
  /** Only run cases of this suite. */
  suite?: string;
  suites?: Record<string, SuiteFn>;
  skip?: Record<string, string>;
}

export function runVectors(cases: readonly VectorCase[], opts: RunOptions = {}): RunSummary {
  const suites = opts.suites ?? suiteRegistry();
  const skip = opts.skip ?? KNOWN_UNSUPPORTED;
  const results: CaseResult[] = [];
  for (const c of cases) {
    if (opts.suite && c.suite !== opts.suite) continue;
    const id = `${c.suite}/${c.name}`;
    if (skip[id] !== undefined) {
      results.push({ suite: c.suite, name: c.name, status: 'skipped', reason: skip[id] });
      continue;
    }
    const fn = suites[c.suite];
    if (!fn) {
      results.push({ suite: c.suite, name: c.name, status: 'failed', error: `unknown suite "${c.suite}" (known: ${Object.keys(suites).sort().join(', ')})` });
      continue;
    }
    let actual: unknown;
    try {
      actual = toComparable(fn(c.input, { name: c.name }));
    } catch (e) {
      results.push({ suite: c.suite, name: c.name, status: 'failed', error: `threw ${(e as Error)?.stack ?? String(e)}` });
      continue;
    }
    const differences = deepDiff(c.expected, actual);
    results.push({ suite: c.suite, name: c.name, status: differences.length ? 'failed' : 'passed', ...(differences.length ? { differences } : {}) });
  }
  const count = (s: CaseResult['status']): number => results.filter((r) => r.status === s).length;
  return { passed: count('passed'), failed: count('failed'), skipped: count('skipped'), results };
}

const show = (v: unknown): string => (typeof v === 'string' && (v === '<missing>' || v === '<absent>') ? v : JSON.stringify(v));

/**
 * The report: failures (case, path, expected vs actual; the first `maxFailures` unless verbose), the
 * skipped cases with reasons, and last the line `N passed, M failed[, K skipped]`.
 */
export function formatReport(summary: RunSummary, opts: { verbose?: boolean; maxFailures?: number } = {}): string {
  const lines: string[] = [];
  const failed = summary.results.filter((r) => r.status === 'failed');
  const limit = opts.verbose ? Infinity : opts.maxFailures ?? 20;
  for (const r of failed.slice(0, limit)) {
    lines.push(`FAIL ${r.suite}/${r.name}`);
    if (r.error) lines.push(`  ${r.error.split('\n').slice(0, opts.verbose ? 20 : 3).join('\n  ')}`);
    const diffs = r.differences ?? [];
    for (const d of diffs.slice(0, opts.verbose ? diffs.length : 5)) {
      lines.push(`  ${d.path}: expected ${show(d.expected)}, actual ${show(d.actual)}`);
    }
    if (!opts.verbose && diffs.length > 5) lines.push(`  … ${diffs.length - 5} more differences`);
  }
  if (failed.length > limit) lines.push(`… ${failed.length - limit} more failed cases (use --verbose)`);
  if (opts.verbose) for (const r of summary.results.filter((x) => x.status === 'passed')) lines.push(`ok   ${r.suite}/${r.name}`);
  for (const r of summary.results.filter((x) => x.status === 'skipped')) lines.push(`SKIP ${r.suite}/${r.name}: ${r.reason}`);
  let last = `${summary.passed} passed, ${summary.failed} failed`;
  if (summary.skipped > 0) last += `, ${summary.skipped} skipped`;
  lines.push(last);
  return lines.join('\n');
}

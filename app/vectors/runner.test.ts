import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { deepDiff, formatReport, loadVectors, parseVectors, runVectors, suiteRegistry, type VectorCase } from './runner';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PUBLIC = path.join(root, 'tests/fixtures/vectors/public.json');
const PYVISION = path.join(root, 'tests/fixtures/vectors/pyvision-public.json');

describe('golden vectors: public.json through the runner', () => {
  const cases = loadVectors(PUBLIC);

  it('passes all 327 public cases, every protocol suite included', () => {
    const summary = runVectors(cases);
    const failed = summary.results.filter((r) => r.status === 'failed');
    expect(failed.map((r) => `${r.suite}/${r.name}`)).toEqual([]);
    expect(summary).toMatchObject({ passed: 327, failed: 0, skipped: 0 });
    const bySuite = (s: string) => summary.results.filter((r) => r.suite === s && r.status === 'passed').length;
    expect([bySuite('smart_resize'), bySuite('crop'), bySuite('select_frames'), bySuite('toolcall')]).toEqual([92, 70, 14, 38]);
    expect(formatReport(summary).split('\n').at(-1)).toBe('327 passed, 0 failed');
  });

  it('detects a changed expected value and names the case and path', () => {
    const tampered: VectorCase[] = structuredClone(cases.filter((c) => c.suite === 'crop').slice(0, 3));
    (tampered[1]!.expected as { cropBox?: number[] }).cropBox = [0, 0, 0, 0];
    const summary = runVectors(tampered);
    expect(summary.failed).toBe(1);
    const report = formatReport(summary);
    expect(report).toContain(`FAIL crop/${tampered[1]!.name}`);
    expect(report).toMatch(/\$\.cropBox\[\d\]: expected 0, actual \d+/);
    expect(report.split('\n').at(-1)).toBe('2 passed, 1 failed');
  });

  it('fails unknown suites and lists knowingly skipped cases above the result line', () => {
    const summary = runVectors(
      [
        { suite: 'no_such_suite', name: 'x', input: {}, expected: {} },
        { suite: 'smart_resize', name: 'skipme', input: {}, expected: {} },
      ],
      { skip: { 'smart_resize/skipme': 'not supported on purpose (test)' } },
    );
    expect(summary).toMatchObject({ passed: 0, failed: 1, skipped: 1 });
    const lines = formatReport(summary).split('\n');
    expect(lines.at(-1)).toBe('0 passed, 1 failed, 1 skipped');
    expect(lines.at(-2)).toBe('SKIP smart_resize/skipme: not supported on purpose (test)');
    expect(lines.join('\n')).toContain('unknown suite "no_such_suite"');
  });

  it('registers the protocol and scorer suites', () => {
    expect(Object.keys(suiteRegistry())).toEqual(expect.arrayContaining(['smart_resize', 'crop', 'select_frames', 'toolcall', 'anls', 'mra', 'tallyqa', 'mc_vstar', 'mc_vsi', 'pr_boxed', 'pyvision_code', 'pyvision_obs', 'pyvision_answer', 'pyvision_prompt', 'pyvision_mra']));
  });

  it('compares doubles exactly and types strictly', () => {
    expect(deepDiff({ a: [0.1 + 0.2] }, { a: [0.3] })).toEqual([{ path: '$.a[0]', expected: 0.30000000000000004, actual: 0.3 }]);
    expect(deepDiff({ a: 1 }, { a: '1' })).toHaveLength(1);
    expect(deepDiff({ a: 1 }, { a: 1, b: 2 })).toEqual([{ path: '$.b', expected: '<absent>', actual: 2 }]);
  });

  it('rejects a malformed vectors file with a message naming it', () => {
    expect(() => parseVectors('{"suite": 1}', 'bad.json')).toThrow('bad.json: expected a JSON array of cases, got object');
    expect(() => parseVectors('[{"suite": "crop"}]', 'bad.json')).toThrow('bad.json: case #0 (crop) has no string "name"');
  });
});

describe('golden vectors: pyvision-public.json through the runner', () => {
  const cases = loadVectors(PYVISION);

  it('passes all 172 PyVision cases, per suite', () => {
    const summary = runVectors(cases);
    expect(summary.results.filter((r) => r.status === 'failed').map((r) => `${r.suite}/${r.name}`)).toEqual([]);
    expect(summary).toMatchObject({ passed: 172, failed: 0, skipped: 0 });
    const bySuite = (s: string) => summary.results.filter((r) => r.suite === s && r.status === 'passed').length;
    expect([bySuite('pyvision_code'), bySuite('pyvision_obs'), bySuite('pyvision_answer'), bySuite('pyvision_prompt'), bySuite('pyvision_mra')]).toEqual([83, 44, 23, 9, 13]);
  });

  it('fails a changed observation and names the path', () => {
    const tampered: VectorCase[] = structuredClone(cases.filter((c) => c.name === 'img_five_start4_pvrl'));
    (tampered[0]!.expected as { nextImageIndex: number }).nextImageIndex = 6;
    const summary = runVectors(tampered);
    expect(summary.failed).toBe(1);
    expect(formatReport(summary)).toContain('$.nextImageIndex: expected 6, actual 9');
  });

  it('passes the case name to suites that need it (judgeprompt_* record the judge prompt)', () => {
    const jp = cases.find((c) => c.name === 'judgeprompt_vsi')!;
    const renamed = { ...structuredClone(jp), name: 'renamed' };
    const summary = runVectors([jp, renamed]);
    expect(summary.results.map((r) => r.status)).toEqual(['passed', 'failed']);
    expect(summary.results[1]!.differences![0]!.path).toBe('$.judgePrompt');
  });
});

describe('loupe vectors (CLI)', () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'main/cli/run.ts'), 'vectors', ...args], { cwd: root, encoding: 'utf8' });

  it('exits 0 and prints the result line last when all pass', () => {
    const r = cli(PUBLIC, '--suite', 'toolcall');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('38 passed, 0 failed');
  });

  it('runs the PyVision file: 172 passed', () => {
    const r = cli(PYVISION);
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('172 passed, 0 failed');
  });

  it('exits 1 when a case fails', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'loupe-vectors-'));
    const file = path.join(dir, 'one.json');
    writeFileSync(file, JSON.stringify([{ suite: 'smart_resize', name: 'wrong', input: { height: 480, width: 640, factor: 28, minPixels: 3136, maxPixels: 1568000 }, expected: { height: 480, width: 640 } }]));
    const r = cli(file);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('FAIL smart_resize/wrong');
    expect(r.stdout).toContain('$.height: expected 480, actual 476');
    expect(r.stdout.trim().split('\n').at(-1)).toBe('0 passed, 1 failed');
  });
});

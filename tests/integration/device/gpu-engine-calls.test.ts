/**
 * scripts/device/gpu-engine-calls.sh runs each device call's step from the tools folder that call 1 unpacked
 * (tools.tar.xz: the scripts and models' Python as they were when the packs were made). Each call also brings a fresh
 * copy of the repository, and where that copy's scripts or Python differ the script refreshes the tools folder from it
 * and runs the refreshed copy, so a step never runs stale code. Here: a repository copy and a tools folder in temp
 * folders (LOUPE_WT, LOUPE_R), the `status` step (the only one that needs no GPU).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-gpu-calls-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('gpu-engine-calls.sh', () => {
  it("refreshes the tools folder from the call's repository copy and runs the refreshed script", () => {
    const repo = path.join(tmp, 'repo');
    const wt = path.join(tmp, 'wt');
    const r = path.join(tmp, 'r');
    mkdirSync(path.join(repo, 'models'), { recursive: true });
    mkdirSync(r);
    cpSync(path.join(ROOT, 'scripts/device'), path.join(repo, 'scripts/device'), { recursive: true });
    writeFileSync(path.join(repo, 'models/probe.py'), 'print("new")\n');
    // the tools folder as call 1 left it: an older script whose status step says so, an older Python file
    cpSync(path.join(repo, 'scripts'), path.join(wt, 'scripts'), { recursive: true });
    mkdirSync(path.join(wt, 'models'));
    writeFileSync(path.join(wt, 'models/probe.py'), 'print("old")\n');
    const stale = path.join(wt, 'scripts/device/gpu-engine-calls.sh');
    writeFileSync(stale, readFileSync(stale, 'utf8').replace('status)\n', 'status)\n  echo STALE-SCRIPT\n'));
    writeFileSync(path.join(r, 'job.log'), 'job line\n');
    const env = { ...process.env, LOUPE_WT: wt, LOUPE_R: r, OUT: path.join(tmp, 'out') };
    const run = () => spawnSync('bash', [path.join(wt, 'scripts/device/gpu-engine-calls.sh'), 'status'], { cwd: repo, encoding: 'utf8', env });

    const first = run();
    expect(first.stderr).toContain(`gpu-engine-calls: 2 file(s) in ${wt} refreshed from this call's repository copy`);
    expect(first.stdout).not.toContain('STALE-SCRIPT');
    expect(first.stdout).toContain('job line');
    expect(readFileSync(path.join(wt, 'models/probe.py'), 'utf8')).toBe('print("new")\n');
    expect(readFileSync(stale, 'utf8')).toBe(readFileSync(path.join(repo, 'scripts/device/gpu-engine-calls.sh'), 'utf8'));

    // the next call with the same copy: nothing to refresh, the step runs
    const second = run();
    expect(second.stderr).not.toContain('refreshed');
    expect(second.stdout).toContain('job line');
  });

  it("gqa-first's variants: node environment and onnxruntime session options per line, the defaults intact", () => {
    const r = path.join(tmp, 'r-plan');
    mkdirSync(r, { recursive: true });
    const plan = (variants?: string) =>
      spawnSync('bash', [path.join(ROOT, 'scripts/device/gpu-engine-calls.sh'), 'gqa-plan'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, LOUPE_CALLS_FRESH: '1', LOUPE_WT: path.join(tmp, 'wt-plan'), LOUPE_R: r, OUT: path.join(tmp, 'out-plan'), VARIANTS: variants ?? '' },
      }).stdout.split('\n').filter((l) => l.startsWith('env ['));
    // the defaults: none, cuDNN's attention off, XQA on, both off (the attention routes onnxruntime picks per shape)
    expect(plan()).toEqual([
      'env [] session []',
      'env [ORT_ENABLE_CUDNN_FLASH_ATTENTION=0] session []',
      'env [ORT_ENABLE_XQA=1] session []',
      'env [ORT_ENABLE_XQA=0 ORT_ENABLE_CUDNN_FLASH_ATTENTION=0] session []',
    ]);
    // a "}" in a line once cut its JSON in two
    expect(plan('A=1 B=2 {"x": {"y": 1}}\n\n{"graphOptimizationLevel": "basic"}')).toEqual([
      'env [A=1 B=2] session [{"x": {"y": 1}}]',
      'env [] session []',
      'env [] session [{"graphOptimizationLevel": "basic"}]',
    ]);
  });
});

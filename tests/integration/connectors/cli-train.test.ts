/** `loupe train`: in-process through commander (fast), plus one real child process for stdin handling. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { register } from '../../../main/cli/commands/train';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-cli-train-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function run(args: string[]): Promise<{ out: string; err: string; code: number }> {
  const program = new Command().exitOverride();
  register(program);
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((c: string | Uint8Array) => ((out += String(c)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((c: string | Uint8Array) => ((err += String(c)), true));
  process.exitCode = 0;
  try {
    await program.parseAsync(['node', 'loupe', 'train', ...args]);
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { out, err, code };
}

describe('loupe train', () => {
  it('render names a missing required parameter; render prints env and script; metrics parses a log file', async () => {
    const bad = await run(['render', 'pixel-reasoner-curiosity-rl', '--set', 'trainver=/d/t.parquet']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('pixel-reasoner-curiosity-rl: testver: is required');
    const ok = await run(['render', 'deepeyes-grpo', '--set', 'worldSize=4', '--set', 'judgeHost=judge-node']);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('# env LLM_AS_A_JUDGE_BASE=http://judge-node:18901/v1');
    expect(ok.out).toContain('bash examples/agent/final_merged_v1v8_thinklite.sh');
    const log = path.join(tmp, 'log.txt');
    writeFileSync(log, 'noise\nstep:1 - loss:0.5 - acc:np.float64(0.25)\nstep:2 - loss:0.25 - acc:np.float64(0.5)\n');
    expect((await run(['metrics', log])).out.trim().split('\n')).toEqual(['acc\t2\t0.5', 'loss\t2\t0.25']);
    writeFileSync(log, 'nothing here\n');
    const none = await run(['metrics', log]);
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/no metric lines found/);
  });

  it('render refuses a judge host that is shell text and a misspelled parameter, naming the valid ones', async () => {
    const canary = path.join(tmp, 'cli-canary');
    const hostile = await run(['render', 'deepeyes-grpo', '--set', `judgeHost=$(touch ${canary})`]);
    expect(hostile.code).toBe(1);
    expect(hostile.err).toContain('deepeyes-grpo: judgeHost: a host name or IP address');
    expect(hostile.out).toBe('');
    const typo = await run(['render', 'deepeyes-grpo', '--set', 'judgeHots=judge-node']);
    expect(typo.code).toBe(1);
    expect(typo.err).toContain('unknown parameter "judgeHots"; valid: repoDir, size, worldSize, judgeModel, judgeHost, judgePort');
    // A hostile free-text value is accepted, and the rendered script carries it single-quoted.
    const model = await run(['render', 'ms-swift-grpo-vsibench', '--set', 'dataset=d.jsonl', '--set', `model=$(touch ${canary})`]);
    expect(model.code).toBe(0);
    expect(model.out).toContain(`--model '$(touch ${canary})'`);
    const r = spawnSync('bash', ['-n'], { input: model.out, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(existsSync(canary)).toBe(false);
  });

  it('submit --local --follow runs the loupe-tiny driver and reports its failure on a missing base model', async () => {
    vi.stubEnv('LOUPE_REPO', path.resolve(__dirname, '../../..'));
    const r = await run(['submit', 'loupe-tiny-finetune', '--local', path.join(tmp, 'jobs'), '--set', `baseModel=${path.join(tmp, 'no-model')}`, '--follow', '--secrets', path.join(tmp, 's0.json'), '--key-file', path.join(tmp, 'k0')]);
    vi.unstubAllEnvs();
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^local-\d+-[0-9a-f]{8}\n/);
    expect(r.out).toContain(`loupe-tiny: base model folder ${path.join(tmp, 'no-model')} does not exist`);
    expect(r.err).toMatch(/terminal: failed/);
    const unknown = await run(['status', 'local-0000000000000-00000000', '--local', path.join(tmp, 'jobs')]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no job record .* \[not-found\]/);
  });

  it('secret set reads stdin (real child process) and stores it encrypted', () => {
    const args = ['--secrets', path.join(tmp, 's.json'), '--key-file', path.join(tmp, 'k')];
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', "import('./main/cli/commands/train.ts').then(async (m) => { const { Command } = await import('commander'); const p = new Command(); m.register(p); await p.parseAsync(process.argv.slice(0, 1).concat(['x', 'train', 'secret', 'set', 'ray/prod', ...process.argv.slice(1)])); })", '--', ...args], {
      encoding: 'utf8',
      input: 'tok-very-secret-123\n',
      cwd: path.resolve(__dirname, '../../..'),
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('stored ray/prod\n');
    expect(readFileSync(path.join(tmp, 's.json'), 'utf8')).not.toContain('tok-very-secret-123');
  });
});

/**
 * A local job that prints its own secret: output.log (the stored log, read again after a restart) holds `***`
 * where the secret and its base64 were, the rest of the output, and the job's own exit code. Real bash jobs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalConnector } from './local';
import type { JobStatus } from './types';
import { setTimeout as sleep } from 'node:timers/promises';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-localredact-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function finish(c: LocalConnector, id: string): Promise<JobStatus> {
  for (let i = 0; i < 200; i++) {
    const st = await c.status(id);
    if (st.state !== 'running') return st;
    await sleep(50);
  }
  throw new Error('job did not end');
}

describe('local jobs: known secrets are redacted in output.log', () => {
  const c = new LocalConnector({ root: path.join(tmp, 'jobs') });
  // Glob and pattern characters, quotes, a dollar sign and a backslash: all must match literally.
  const secret = `hf_*?[a]'"$HOME\\x-${Date.now()}`;
  const multi = 'ssh-key-line-one-AAAA\nssh-key-line-two-BBBB';

  it('the value, its base64 and each line of a multi-line value become ***; exit code and other output stay', async () => {
    const script = [
      'echo "token=$HF_TOKEN"',
      'printf "%s" "$HF_TOKEN" | base64 -w0; echo',
      'echo "key: $SSH_KEY"',
      'echo "no filter variables here: ${loupe_forms[*]-}"',
      'printf "last line without newline %s" "$HF_TOKEN"',
      'exit 7',
    ].join('\n');
    const { id, logPath } = await c.submit({ name: 'leaky', script, secretEnv: { HF_TOKEN: secret, SSH_KEY: multi } });
    const st = await finish(c, id);
    expect(st.exitCode).toBe(7);
    const log = readFileSync(logPath as string, 'utf8');
    expect(log).not.toContain(secret);
    expect(log).not.toContain(Buffer.from(secret).toString('base64'));
    expect(log).not.toContain('ssh-key-line-one-AAAA');
    expect(log).not.toContain('ssh-key-line-two-BBBB');
    expect(log).toContain('token=***\n');
    expect(log).toContain('no filter variables here: \n');
    expect(log).toContain('last line without newline ***');
  });

  it('a job without secrets is not filtered (partial lines reach the log as written)', async () => {
    const { id, logPath } = await c.submit({ name: 'plain', script: 'printf "no newline"' });
    expect((await finish(c, id)).exitCode).toBe(0);
    expect(readFileSync(logPath as string, 'utf8')).toBe('no newline');
  });
});

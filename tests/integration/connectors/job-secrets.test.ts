/**
 * Job secrets against the REAL services from ci/services-up.sh (and the local connector): each job prints only the
 * sha256 of $LOUPE_TEST_SECRET. Checks: the hash matches; the value is in no script Slurm stores (slurmctld's
 * state copy, slurmd's spool copy), in nothing the connector sent as a command or script, in the job log, and in
 * no file of a workspace the core used (job records, connector settings, secret store).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalConnector } from '../../../app/connectors/local';
import { SlurmSshConnector } from '../../../app/connectors/slurm';
import { SlurmRestConnector, scontrolTokenProvider } from '../../../app/connectors/slurmRest';
import { SshSession, type ExecResult } from '../../../app/connectors/ssh';
import { isTerminal, type Connector, type JobStatus } from '../../../app/connectors/types';
import { createCore, type Core } from '../../../main/core';
import { SERVICES, loadServicesEnv, type ServicesEnv } from './servicesEnv';
import { describeIf, skipUnless } from '../../support/requirements';
import { setTimeout as sleep } from 'node:timers/promises';

const env = loadServicesEnv();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-jobsecrets-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A value with the characters that break naive quoting: quotes, $, backslash, spaces, a newline, a trailing newline. */
function newSecret(): string {
  return `s3cr'et "$HOME" \\ ${randomBytes(12).toString('hex')}\nline two\n`;
}
const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const forms = (s: string): string[] => [s, s.trim(), randomLine(s), Buffer.from(s).toString('base64')];
/** The hex part alone: enough to spot any leak of the value, however it was quoted. */
function randomLine(s: string): string {
  return /[0-9a-f]{24}/.exec(s)?.[0] ?? s;
}
function expectClean(text: string, secret: string, what: string): void {
  for (const f of forms(secret)) expect(text.includes(f), `${what} contains the secret`).toBe(false);
}

/** The job: prove it has the value by its hash, optionally wait for a go-file first (to inspect its spool while it runs). */
function hashScript(goFile?: string): string {
  return [
    ...(goFile ? [`while [ ! -e ${goFile} ]; do sleep 0.1; done`] : []),
    'printf "SECRET_SHA256=%s\\n" "$(printf %s "$LOUPE_TEST_SECRET" | sha256sum | cut -d" " -f1)"',
    'printf "SECRET_LEN=%s\\n" "${#LOUPE_TEST_SECRET}"',
  ].join('\n');
}

async function waitEnd(c: Connector, id: string): Promise<{ status: JobStatus; log: string }> {
  let log = '';
  const r = await c.follow(id, { pollMs: 200, onText: (t) => (log += t) }).done;
  return { status: r.status, log };
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (check()) return;
    await sleep(100);
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Every file under `dir` (recursively) as text, for leak checks. */
function allFiles(dir: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...allFiles(p));
    else if (st.isFile()) out.push([p, readFileSync(p, 'latin1')]);
  }
  return out;
}

function slurmConfValue(conf: string, key: string): string {
  const m = new RegExp(`^${key}=(\\S+)`, 'm').exec(readFileSync(conf, 'utf8'));
  if (!m) throw new Error(`${conf} has no ${key}`);
  return (m[1] as string).replace('%n', os.hostname().split('.')[0] as string);
}

/** Where Slurm 22.05 keeps a batch job's script: slurmctld's state copy and slurmd's spool copy (while it runs). */
function slurmScriptCopies(e: ServicesEnv, id: string): { state: string; environment: string; spool: string } {
  const state = slurmConfValue(e.slurmConf, 'StateSaveLocation');
  const spool = slurmConfValue(e.slurmConf, 'SlurmdSpoolDir');
  const jobDir = path.join(state, `hash.${Number(id) % 10}`, `job.${id}`);
  return { state: path.join(jobDir, 'script'), environment: path.join(jobDir, 'environment'), spool: path.join(spool, `job${id.padStart(5, '0')}`, 'slurm_script') };
}

describe('job secrets: local connector (real processes)', () => {
  it('the secret reaches the job environment only: hash matches; script.sh, job.json and the log lack it', async () => {
    const secret = newSecret();
    const root = path.join(tmp, 'local');
    const c = new LocalConnector({ root });
    const { id } = await c.submit({ name: 'secret-local', script: hashScript(), secretEnv: { LOUPE_TEST_SECRET: secret } });
    const { status, log } = await waitEnd(c, id);
    expect(status.state).toBe('succeeded');
    expect(log).toContain(`SECRET_SHA256=${sha(secret)}`);
    for (const [p, text] of allFiles(root)) expectClean(text, secret, p);
  });

  it('refuses a secret that is also a plain variable, and a reserved name', async () => {
    const c = new LocalConnector({ root: path.join(tmp, 'local2') });
    await expect(c.submit({ name: 'x', script: 'true', env: { A_KEY: '1' }, secretEnv: { A_KEY: 'abcd' } })).rejects.toThrow(/both a plain and a secret/);
    await expect(c.submit({ name: 'x', script: 'true', secretEnv: { PATH: 'abcd' } })).rejects.toThrow(/PATH cannot carry a secret/);
  });
});

describeIf(!!env, SERVICES, 'job secrets: Slurm over SSH (real slurm + sshd)', () => {
  const e = env as ServicesEnv;
  /** A real session that also records every command and stdin it sends. */
  class RecordingSession extends SshSession {
    sent: string[] = [];
    override exec(command: string, options: { stdin?: string | Buffer; timeoutMs?: number } = {}): Promise<ExecResult> {
      this.sent.push(command, options.stdin === undefined ? '' : String(options.stdin));
      return super.exec(command, options);
    }
  }
  const session = new RecordingSession({ host: e.sshHost, port: e.sshPort, username: e.sshUser, privateKey: readFileSync(e.sshKey, 'utf8'), knownHosts: readFileSync(e.knownHosts, 'utf8') });
  const slurm = new SlurmSshConnector({ ssh: session, remoteDir: `${e.jobsDir}/secrets-ssh`, slurmConf: e.slurmConf, partition: e.partition });
  afterAll(() => slurm.close());

  it('hash matches; the value is in no command, no script (sent, slurmctld state, slurmd spool) and not in the log', async () => {
    const secret = newSecret();
    const go = `${e.jobsDir}/go-ssh-${randomBytes(4).toString('hex')}`; // the job user must see it
    const { id, logPath } = await slurm.submit({ name: 'secret-ssh', script: hashScript(go), env: { PLAIN_VAR: 'visible' }, secretEnv: { LOUPE_TEST_SECRET: secret } });
    const copies = slurmScriptCopies(e, id);
    await waitFor(() => existsSync(copies.spool), `slurmd's spool copy ${copies.spool}`);
    const stored = readFileSync(copies.state, 'latin1');
    expect(stored).toContain('PLAIN_VAR'); // it is the right file
    expectClean(stored, secret, copies.state);
    expectClean(readFileSync(copies.spool, 'latin1'), secret, copies.spool);
    // Slurm keeps a job's environment beside the script: root-only (0600 in a 0700 hash dir), documented limitation.
    expect(statSync(copies.environment).mode & 0o077).toBe(0);
    expect(statSync(path.dirname(copies.environment)).mode & 0o077).toBe(0);
    writeFileSync(go, '');
    const { status, log } = await waitEnd(slurm, id);
    expect(status.state).toBe('succeeded');
    expect(log).toContain(`SECRET_SHA256=${sha(secret)}`);
    expect(log).toContain(`SECRET_LEN=${secret.length}`);
    expectClean(readFileSync(logPath as string, 'latin1'), secret, 'the job log');
    const commands = session.sent.filter((_, i) => i % 2 === 0).join('\n');
    expectClean(commands, secret, 'an SSH command line');
    const scriptSent = session.sent[1]?.split('\n').slice(1).join('\n') ?? ''; // after the one base64 line
    expect(scriptSent).toContain('#SBATCH --job-name=secret-ssh');
    expectClean(scriptSent, secret, 'the uploaded script');
  });

  it('a job that prints its secret leaves *** in the Slurm output file, and its exit code stays', async () => {
    const secret = `leaky-${randomBytes(12).toString('hex')}`;
    const script = ['printf "leak=%s\\n" "$LOUPE_TEST_SECRET"', 'printf "%s" "$LOUPE_TEST_SECRET" | base64', 'echo after', 'exit 3'].join('\n');
    const { id, logPath } = await slurm.submit({ name: 'secret-leak', script, secretEnv: { LOUPE_TEST_SECRET: secret } });
    const { status, log } = await waitEnd(slurm, id);
    expect(status.state).toBe('failed');
    expect(status.exitCode).toBe(3);
    const stored = readFileSync(logPath as string, 'latin1');
    expect(stored, log).toContain('leak=***\n');
    expect(stored).toContain('after\n');
    expectClean(stored, secret, 'the Slurm output file');
  });

  it('a refused submission says why without the value', async () => {
    const secret = newSecret();
    const bad = new SlurmSshConnector({ ssh: session, remoteDir: `${e.jobsDir}/secrets-ssh`, slurmConf: e.slurmConf, partition: 'no-such-partition' });
    const err = await bad.submit({ name: 'secret-bad', script: 'true', secretEnv: { LOUPE_TEST_SECRET: secret } }).then(() => null, (x: Error) => x);
    expect(err?.message).toMatch(/sbatch refused the job.*partition/i);
    expectClean(err?.message ?? '', secret, 'the error');
  });
});

describeIf(!!env, SERVICES, 'job secrets: slurmrestd (real)', () => {
  const e = env as ServicesEnv;
  const rest = new SlurmRestConnector({
    baseUrl: e.restUrl,
    user: e.restUser,
    token: scontrolTokenProvider({ username: e.restUser, lifespanS: 600, slurmConf: e.slurmConf }),
    outputDir: e.jobsDir,
    partition: e.partition,
  });

  it('hash matches; the value is in neither the stored script nor the log', async () => {
    const secret = newSecret();
    const go = `${e.jobsDir}/go-rest-${randomBytes(4).toString('hex')}`; // jobs run as slurmrestd's user
    const { id, logPath } = await rest.submit({ name: 'secret-rest', script: hashScript(go), secretEnv: { LOUPE_TEST_SECRET: secret } });
    const copies = slurmScriptCopies(e, id);
    await waitFor(() => existsSync(copies.spool), `slurmd's spool copy ${copies.spool}`);
    expect(readFileSync(copies.state, 'latin1')).toContain('SECRET_SHA256');
    expectClean(readFileSync(copies.state, 'latin1'), secret, copies.state);
    expectClean(readFileSync(copies.spool, 'latin1'), secret, copies.spool);
    writeFileSync(go, '');
    const { status, log } = await waitEnd(rest, id);
    expect(status.state).toBe('succeeded');
    expect(log).toContain(`SECRET_SHA256=${sha(secret)}`);
    expectClean(readFileSync(logPath as string, 'latin1'), secret, 'the job log');
  });
});

describe('job secrets through the core (training:submit with secretEnv)', () => {
  const cores: Core[] = [];
  afterAll(async () => {
    for (const c of cores) await c.dispose();
  });

  async function runThroughCore(connector: string, setup: (core: Core) => Promise<void>): Promise<void> {
    const ws = mkdtempSync(path.join(tmp, `ws-${connector}-`));
    const core = await createCore({ workspace: ws, transport: 'browser' });
    cores.push(core);
    const call = async <T>(m: string, p: unknown): Promise<T> => {
      const r = (await core.dispatch(m, p)) as { ok: boolean; result?: T; error?: { message: string } };
      if (!r.ok) throw new Error(r.error?.message ?? 'error');
      return r.result as T;
    };
    await setup(core);
    const secret = newSecret();
    const list = await call<{ secretStore?: { kind: string; label: string } }>('training:secretSet', { name: 'test/secret', value: secret });
    expect(list.secretStore).toMatchObject({ kind: 'encrypted-file', label: 'encrypted file (browser mode)' });
    const missing = await call('training:submit', { templateId: 'custom-script', params: { script: 'true' }, connector, name: 'nope', secretEnv: { LOUPE_TEST_SECRET: 'no/such' } }).then(() => null, (x: Error) => x);
    expect(missing?.message).toMatch(/not in the secret store: LOUPE_TEST_SECRET ← "no\/such"/);
    const job = await call<{ key: string; secretEnv?: Record<string, string> }>('training:submit', {
      templateId: 'custom-script',
      params: { script: hashScript() },
      connector,
      name: 'secret-core',
      secretEnv: { LOUPE_TEST_SECRET: 'test/secret' },
    });
    expect(job.secretEnv).toEqual({ LOUPE_TEST_SECRET: 'test/secret' });
    let snap: { job: { state: string }; log: string } = { job: { state: 'pending' }, log: '' };
    for (let i = 0; i < 300 && !isTerminal(snap.job.state as JobStatus['state']); i++) {
      snap = await call('training:open', { key: job.key });
      if (!isTerminal(snap.job.state as JobStatus['state'])) await sleep(200);
    }
    expect(snap.job.state).toBe('succeeded');
    for (let i = 0; i < 50 && !snap.log.includes('SECRET_SHA256='); i++) snap = await call('training:open', { key: job.key });
    expect(snap.log).toContain(`SECRET_SHA256=${sha(secret)}`);
    for (const [p, text] of allFiles(ws)) expectClean(text, secret, p);
  }

  it('local: the job gets the value; no workspace file (records, store, job folder) holds it', async () => {
    await runThroughCore('local', async () => undefined);
  });

  it('slurm-ssh: the same through a saved connector whose key is in the store', async (ctx) => {
    skipUnless(ctx, !!env, SERVICES);
    const e = env as ServicesEnv;
    await runThroughCore('ci-ssh', async (core) => {
      const set = await core.dispatch('training:secretSet', { name: 'ssh/ci', value: readFileSync(e.sshKey, 'utf8') });
      expect(set.ok).toBe(true);
      const saved = await core.dispatch('training:connectorSave', {
        config: { kind: 'slurm-ssh', name: 'ci-ssh', host: e.sshHost, port: e.sshPort, user: e.sshUser, keySecret: 'ssh/ci', knownHosts: readFileSync(e.knownHosts, 'utf8'), remoteDir: `${e.jobsDir}/secrets-core`, slurmConf: e.slurmConf, partition: e.partition },
      });
      expect(saved.ok).toBe(true);
    });
  });
});

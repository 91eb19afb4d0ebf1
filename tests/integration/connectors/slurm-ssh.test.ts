/**
 * Slurm over SSH against the REAL services from ci/services-up.sh (slurmctld+slurmd 22.05, OpenSSH sshd).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { utils as sshUtils } from 'ssh2';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createConnector } from '../../../app/connectors';
import { EncryptedFileSecretStore } from '../../../app/connectors/secrets';
import { SshSession } from '../../../app/connectors/ssh';
import { SlurmSshConnector } from '../../../app/connectors/slurm';
import { MetricSeries, MetricStreamParser } from '../../../app/training/metrics';
import { templateToJobSpec } from '../../../app/training/jobSpec';
import { buildTemplate } from '../../../app/training/templates';
import { SERVICES, loadServicesEnv, verlMetricsScript, type ServicesEnv } from './servicesEnv';
import { describeIf } from '../../support/requirements';
import { startProxy } from '../../support/tcpProxy';

const env = loadServicesEnv();

function sshOpts(e: ServicesEnv, over: Partial<{ port: number; privateKey: string; knownHosts: string; readyTimeoutMs: number }> = {}) {
  return {
    host: e.sshHost,
    port: over.port ?? e.sshPort,
    username: e.sshUser,
    privateKey: over.privateKey ?? readFileSync(e.sshKey, 'utf8'),
    knownHosts: over.knownHosts ?? readFileSync(e.knownHosts, 'utf8'),
    readyTimeoutMs: over.readyTimeoutMs ?? 10_000,
  };
}

/** The connector both real-Slurm suites use: the CI cluster through the CI sshd. */
function ciSlurm(e: ServicesEnv): SlurmSshConnector {
  return new SlurmSshConnector({ ssh: sshOpts(e), remoteDir: `${e.jobsDir}/ssh`, slurmConf: e.slurmConf, partition: e.partition });
}

describeIf(!!env, SERVICES, 'slurm over ssh (real slurm + sshd)', () => {
  const e = env as ServicesEnv;
  let slurm: SlurmSshConnector;
  beforeAll(() => {
    slurm = ciSlurm(e);
  });
  afterAll(async () => {
    await slurm?.close();
  });

  it('probes sinfo', async () => {
    expect(await slurm.probe()).toMatch(/slurm(-wlm)? \d+\.\d+[\s\S]*debug\*? up/);
  });

  it('submits a job printing verl metrics, follows its log to the end and parses every step', async () => {
    const steps = 6;
    const { id, logPath } = await slurm.submit({ name: 'loupe-metrics', script: verlMetricsScript(steps), env: { LOUPE_TEST: 'x y' } });
    expect(id).toMatch(/^\d+$/);
    expect(logPath).toBe(`${e.jobsDir}/ssh/loupe-${id}.out`);
    const parser = new MetricStreamParser('verl-console');
    const series = new MetricSeries(0.5);
    const states: string[] = [];
    let text = '';
    const res = await slurm.follow(id, {
      pollMs: 300,
      onText: (t) => {
        text += t;
        series.addAll(parser.push(t));
      },
      onStatus: (s) => states.push(s.state),
    }).done;
    series.addAll(parser.end());
    expect(res.reason).toBe('terminal');
    expect(res.status.state).toBe('succeeded');
    expect(res.status.rawState).toBe('COMPLETED');
    expect(res.status.exitCode).toBe(0);
    expect(states.at(-1)).toBe('succeeded');
    expect(text).toContain('training finished');
    const score = series.get('critic/score/mean');
    expect(score.steps).toEqual([1, 2, 3, 4, 5, 6]);
    score.values.forEach((v, i) => expect(v).toBeCloseTo(0.2 + 0.05 * (i + 1), 6));
    expect(series.latest('actor/grad_norm')?.value).toBe(Number.POSITIVE_INFINITY);
    expect(series.get('actor/pg_loss').values[2]).toBeCloseTo(-0.003, 9);
    // Every line exactly once, byte-for-byte what the file holds.
    const again = await slurm.logs(id, 0);
    expect(again.data.toString('utf8')).toBe(text);
    expect(res.offset).toBe(again.nextOffset);
    // Reading from an offset returns exactly the rest.
    const tail = await slurm.logs(id, 10);
    expect(tail.data.toString('utf8')).toBe(text.slice(10));
  });

  it('cancels a running job: state CANCELLED and the banner in the log', async () => {
    // Slurm signals the step's processes one by one: when `sleep` gets SIGTERM before the shell, a plain
    // `sleep 120; echo never` goes on to print "never". The loop ends only when the shell itself is killed.
    const { id } = await slurm.submit({ name: 'loupe-cancel', script: 'echo started\nwhile :; do sleep 1; done\necho never' });
    let cancelled: Promise<void> | null = null;
    const f = slurm.follow(id, {
      pollMs: 250,
      onText: (t) => {
        if (t.includes('started') && !cancelled) cancelled = slurm.cancel(id);
      },
    });
    const res = await f.done;
    expect(cancelled).not.toBeNull();
    await expect(cancelled).resolves.toBeUndefined();
    expect(res.status.state).toBe('cancelled');
    expect(res.status.rawState).toMatch(/^CANCELLED/);
    const log = (await slurm.logs(id)).data.toString('utf8');
    expect(log).not.toContain('never');
    expect(log).toMatch(/CANCELLED AT/);
  });

  it('a job id the cluster does not know: unknown with a reason; follow ends as vanished instead of hanging', async () => {
    const st = await slurm.status('987654');
    expect(st.state).toBe('unknown');
    expect(st.message).toMatch(/neither squeue\/scontrol nor the completion log/);
    const res = await slurm.follow('987654', { pollMs: 50, unknownLimit: 2 }).done;
    expect(res.reason).toBe('vanished');
    expect(res.status.state).toBe('unknown');
    await expect(slurm.cancel('987654')).rejects.toMatchObject({ code: 'not-found' });
    await expect(slurm.status('12; rm -rf /')).rejects.toMatchObject({ code: 'invalid' });
  });

  it('keeps following across a dropped SSH connection without losing or repeating lines', async () => {
    const proxy = await startProxy(e.sshPort);
    const viaProxy = new SlurmSshConnector({
      ssh: new SshSession({ ...sshOpts(e, { port: proxy.port }), knownHosts: readFileSync(e.knownHosts, 'utf8').replace(`[${e.sshHost}]:${e.sshPort}`, `[${e.sshHost}]:${proxy.port}`) }),
      remoteDir: `${e.jobsDir}/ssh`,
      slurmConf: e.slurmConf,
    });
    try {
      const n = 40;
      const { id } = await viaProxy.submit({ name: 'loupe-drop', script: `for i in $(seq 1 ${n}); do echo "line $i of ${n}"; sleep 0.1; done` });
      let text = '';
      const warnings: string[] = [];
      let cuts = 0;
      const res = await viaProxy.follow(id, {
        pollMs: 200,
        onText: (t) => {
          text += t;
          // Cut the link twice while lines are still coming.
          if ((cuts === 0 && text.includes('line 5 of')) || (cuts === 1 && text.includes('line 20 of'))) {
            cuts += 1;
            proxy.cut();
          }
        },
        onWarning: (w) => warnings.push(w),
      }).done;
      expect(res.reason).toBe('terminal');
      expect(cuts).toBe(2);
      expect(viaProxy.ssh.connects).toBeGreaterThanOrEqual(2);
      const got = text.trimEnd().split('\n');
      expect(got).toEqual(Array.from({ length: n }, (_, i) => `line ${i + 1} of ${n}`));
      // A cut during a command surfaces as a warning and a retry, not as an error.
      for (const w of warnings) expect(w).toMatch(/connection|dropped|reset|closed/i);
    } finally {
      await viaProxy.close();
      await proxy.close();
    }
  });
});

describeIf(!!env, SERVICES, 'hostile job parameters against real sbatch', () => {
  const e = env as ServicesEnv;
  let slurm: SlurmSshConnector;
  beforeAll(() => {
    slurm = ciSlurm(e);
  });
  afterAll(async () => {
    await slurm?.close();
  });

  it('a template whose parameters hold $(), backticks, quotes and #SBATCH lines runs them as data, never as code', async () => {
    const canary = `${e.jobsDir}/canary-${process.pid}-${Date.now()}`;
    const payload = `$(touch ${canary})\`touch ${canary}\`';touch ${canary};'"\n#SBATCH --wrap=touch ${canary}\ntouch ${canary}`;
    // verl-tool with hostile model / train files / data folder: the trainer is not installed, so the job fails
    // at python; what matters is that nothing of the payload ran on the way.
    const out = buildTemplate('verl-tool-pixel-reasoner-grpo', {
      model: payload.replace(/\n/g, ' '),
      trainFiles: [payload.replace(/\n/g, ' ')],
      dataPrep: { enabled: false, localDir: payload.replace(/\n/g, ' ') },
      nGpusPerNode: 2,
    });
    const spec = templateToJobSpec(out, { name: 'loupe-hostile', kind: 'slurm-ssh', extraEnv: { HOSTILE: payload } });
    spec.script = `printf 'HOSTILE=%s\\n' "$HOSTILE"\n${spec.script}`;
    delete spec.resources; // one CPU node: the test cluster has no GPUs
    const { id } = await slurm.submit(spec);
    let log = '';
    const res = await slurm.follow(id, { pollMs: 200, onText: (t) => (log += t) }).done;
    expect(res.reason).toBe('terminal');
    expect(existsSync(canary), `the payload ran:\n${log}`).toBe(false);
    expect(log).toContain(`HOSTILE=$(touch ${canary})`);
    // A refused header value never reaches sbatch.
    await expect(slurm.submit({ name: 'x', script: 'true', resources: { partition: `${e.partition}\n#SBATCH --wrap=touch ${canary}` } })).rejects.toMatchObject({ code: 'invalid' });
    await expect(slurm.submit({ name: 'x', script: 'true', cwd: `/tmp\ntouch ${canary}` })).rejects.toMatchObject({ code: 'invalid' });
    expect(existsSync(canary)).toBe(false);
  });
});

describeIf(!!env, SERVICES, 'ssh faults (real sshd)', () => {
  const e = env as ServicesEnv;
  it('a connection built from settings + the encrypted secret store works; a missing secret is named', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-conn-'));
    try {
      const secrets = new EncryptedFileSecretStore({ file: path.join(dir, 's.json'), keyFile: path.join(dir, 'k') });
      await secrets.set('ssh/ci', readFileSync(e.sshKey, 'utf8'));
      const settings = { kind: 'slurm-ssh', name: 'ci', host: e.sshHost, port: e.sshPort, user: e.sshUser, keySecret: 'ssh/ci', knownHosts: readFileSync(e.knownHosts, 'utf8'), remoteDir: `${e.jobsDir}/ssh`, slurmConf: e.slurmConf };
      const c = await createConnector(settings, secrets);
      expect(await c.probe()).toMatch(/debug/);
      await c.close();
      await expect(createConnector({ ...settings, keySecret: 'ssh/other' }, secrets)).rejects.toMatchObject({ code: 'auth', message: expect.stringMatching(/secret "ssh\/other" is not in the secret store/) });
      await expect(createConnector({ ...settings, remoteDir: 'relative' }, secrets)).rejects.toMatchObject({ code: 'invalid', message: expect.stringMatching(/remoteDir: remote job folder must be an absolute path/) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('unreachable port → unreachable, quickly', async () => {
    const srv = net.createServer();
    const port = await new Promise<number>((r) => srv.listen(0, '127.0.0.1', () => r((srv.address() as net.AddressInfo).port)));
    await new Promise<void>((r) => srv.close(() => r())); // now nothing listens there
    const s = new SshSession(sshOpts(e, { port, knownHosts: `[127.0.0.1]:${port} ssh-ed25519 AAAA` }));
    await expect(s.exec('true')).rejects.toMatchObject({ code: 'unreachable', message: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('a server that never speaks SSH → timeout after readyTimeout', async () => {
    const held: net.Socket[] = [];
    const srv = net.createServer((c) => held.push(c));
    const port = await new Promise<number>((r) => srv.listen(0, '127.0.0.1', () => r((srv.address() as net.AddressInfo).port)));
    try {
      const s = new SshSession(sshOpts(e, { port, readyTimeoutMs: 800, knownHosts: `[127.0.0.1]:${port} ssh-ed25519 AAAA` }));
      await expect(s.exec('true')).rejects.toMatchObject({ code: 'timeout' });
    } finally {
      held.forEach((c) => c.destroy());
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it('wrong key → auth error naming the problem', async () => {
    const other = sshUtils.generateKeyPairSync('ed25519');
    const s = new SshSession(sshOpts(e, { privateKey: other.private }));
    await expect(s.exec('true')).rejects.toMatchObject({ code: 'auth', message: expect.stringMatching(/rejected the key/) });
  });

  it('host key not matching known_hosts → refused (host-key)', async () => {
    const other = sshUtils.generateKeyPairSync('ed25519');
    const fake = `[${e.sshHost}]:${e.sshPort} ${other.public.split(' ').slice(0, 2).join(' ')}`;
    const s = new SshSession(sshOpts(e, { knownHosts: fake }));
    await expect(s.exec('true')).rejects.toMatchObject({ code: 'host-key', message: expect.stringMatching(/does NOT match/) });
    const none = new SshSession(sshOpts(e, { knownHosts: '[other-host]:22 ssh-ed25519 AAAA' }));
    await expect(none.exec('true')).rejects.toMatchObject({ code: 'host-key', message: expect.stringMatching(/no known_hosts entry/) });
  });
});

/**
 * The served-engine launcher against real things: `loupe serve-model` started as a child process here, and as a job
 * on the REAL local Slurm (ci/services-up.sh) reached through the REAL sshd with an ssh2 port forward. A rollout
 * (`loupe eval`, the same core as the app) runs through the tunnel. Killing the job, the tunnel or the server gives
 * an error state that says which, in bounded time, and requests fail instead of hanging.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SlurmSshConnector } from '../../../app/connectors/slurm';
import { ServedEngineLauncher, type ServedEngine } from '../../../app/engines/served/launcher';
import { describeIf } from '../../support/requirements';
import { SERVICES, loadServicesEnv, type ServicesEnv } from '../connectors/servicesEnv';
import { lastJson, makeSynth, readRecords, REPO, runCli, TINY_MODEL } from '../sweeps/helpers';
import { ciSlurm, startProxy, waitFor } from './helpers';

const env = loadServicesEnv();
const LOUPE_TINY = path.join(REPO, 'models', 'loupe-tiny', 'model');
const LOUPE_BIN = path.join(REPO, 'bin', 'loupe.mjs');
const READY_MS = 240_000;

const ask = async (e: ServedEngine) => e.engine({ timeoutMs: 20_000, maxRetries: 0 }).generate({ messages: [{ role: 'user', content: [{ type: 'text', text: 'Where is the cat?' }] }], maxTokens: 4, temperature: 0, topP: 1, topK: -1, stop: [] });

describe('served engine, started here', () => {
  const launcher = new ServedEngineLauncher({ loupeBin: LOUPE_BIN });
  afterAll(() => launcher.stopAll());

  it('starts loupe serve-model, answers, and a killed server is an error state, not a hang', async () => {
    const states: string[] = [];
    const e = launcher.start({ backend: 'loupe', modelDir: TINY_MODEL }, { kind: 'local' }, { healthEveryMs: 500 });
    e.onState((s) => states.push(s.status));
    const st = await e.ready;
    expect(st.status).toBe('ready');
    expect(st.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(e.log.some((l) => l.includes('serve-model') && l.includes(TINY_MODEL))).toBe(true);
    expect(e.log.join('\n')).not.toContain(e.apiKey!); // the key is in the child's environment only
    const r = await ask(e);
    expect(r.completionTokens).toBeGreaterThan(0);

    process.kill(st.pid!, 'SIGKILL'); // the server we started dies
    await waitFor('error state', () => e.state().status === 'error', 20_000);
    expect(e.state().message).toMatch(/server process exited \(signal SIGKILL\)/);
    await expect(ask(e)).rejects.toThrow(/is error/);
    await launcher.stop(e.id);
    expect(e.state().status).toBe('error'); // stop keeps the reason it failed
  }, READY_MS);

  it('transformers serve on a folder whose preprocessor bounds differ from the dialect’s is refused before it starts', async () => {
    const e = launcher.start({ backend: 'transformers', modelDir: TINY_MODEL }, { kind: 'local' });
    await expect(e.ready).rejects.toThrow(/preprocessor_config\.json: preprocessor_config\.json has min_pixels\/max_pixels .* the dialect wants 200704\/6272000/);
    expect(e.state().pid).toBeUndefined(); // nothing was spawned
  });

  it('a folder that is not a model fails with the server’s own words and leaves no process', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-notamodel-'));
    try {
      const e = launcher.start({ backend: 'loupe', modelDir: dir }, { kind: 'local' }, { readyTimeoutMs: 120_000 });
      await expect(e.ready).rejects.toThrow(/server process exited \(code 1\)/);
      expect(e.state().status).toBe('error');
      const pid = e.state().pid!;
      expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, READY_MS);
});

describeIf(!!env, SERVICES, 'served engine as a Slurm job through an SSH tunnel (real slurm + sshd)', () => {
  const e = env as ServicesEnv;
  let slurm: SlurmSshConnector;
  let launcher: ServedEngineLauncher;
  let tmp: string;
  beforeAll(() => {
    slurm = ciSlurm(e, `${e.jobsDir}/served`);
    launcher = new ServedEngineLauncher({ loupeBin: LOUPE_BIN });
    tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-served-'));
  });
  afterAll(async () => {
    await launcher?.stopAll();
    await slurm?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const startOnSlurm = (connector: SlurmSshConnector, modelDir = TINY_MODEL, dtype?: string) =>
    launcher.start({ backend: 'loupe', modelDir, ...(dtype ? { dtype } : {}) }, { kind: 'slurm', connector, cwd: REPO, resources: { cpus: 1 } }, { healthEveryMs: 500, readyTimeoutMs: READY_MS });

  it('loupe-tiny as a job: a rollout runs through the tunnel; unloading cancels the job', async () => {
    const served = startOnSlurm(slurm, LOUPE_TINY, 'q8');
    const st = await served.ready;
    expect(st.jobId).toMatch(/^\d+$/);
    expect(st.node).toBeTruthy();
    expect(st.message ?? '').toBe('');
    expect((await slurm.status(st.jobId!)).state).toBe('running');

    // The same core as the app: `loupe eval` against the tunnel's URL, as any OpenAI-compatible server.
    const { data } = await makeSynth(tmp, 2);
    const res = await runCli(['eval', '--model', `${st.baseURL}#${served.spec.modelName}`, '--bench', 'loupe-synth', '--data', data, '--limit', '2', '--max-tokens', '24', '--workspace', path.join(tmp, 'ws'), '--run', 'via-tunnel', '--json'], { env: { LOUPE_API_KEY: served.apiKey! } });
    expect(res.code, res.stderr).toBe(0);
    const out = lastJson(res.stdout);
    expect(out.n).toBe(2);
    const recs = await readRecords(path.join(tmp, 'ws', 'runs', 'via-tunnel', 'samples.jsonl'));
    expect(recs).toHaveLength(2);
    for (const r of recs) expect(r.stop_reason).not.toBe('engine_error');

    await launcher.stop(served.id);
    expect(served.state().status).toBe('stopped');
    await waitFor('the job to be cancelled', async () => (await slurm.status(st.jobId!)).state === 'cancelled', 30_000);
  }, 2 * READY_MS);

  it('a job cancelled on the cluster: the engine says so and requests fail fast', async () => {
    const served = startOnSlurm(slurm);
    const st = await served.ready;
    const held = served.engine({ timeoutMs: 10_000, maxRetries: 1, retryBaseMs: 100 }); // a client taken while it was up
    execFileSync('scancel', [st.jobId!], { env: { ...process.env, SLURM_CONF: e.slurmConf } });
    const took = await waitFor('error state', () => served.state().status === 'error', 30_000);
    expect(served.state().message).toMatch(new RegExp(`Slurm job ${st.jobId} ended \\(CANCELLED`));
    await expect(ask(served)).rejects.toThrow(/is error/);
    expect(took).toBeLessThan(30_000);
    const t0 = Date.now();
    await expect(held.generate({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], maxTokens: 4, temperature: 0, topP: 1, topK: -1, stop: [] })).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(30_000);
    await launcher.stop(served.id);
  }, 2 * READY_MS);

  it('a dead tunnel (the SSH link is gone): error state naming the tunnel, and unloading says the job could not be cancelled', async () => {
    const proxy = await startProxy(e.sshPort);
    const viaProxy = ciSlurm(e, `${e.jobsDir}/served`, { port: proxy.port });
    try {
      const served = startOnSlurm(viaProxy);
      const st = await served.ready;
      await proxy.kill();
      await waitFor('error state', () => served.state().status === 'error', 60_000);
      expect(served.state().message).toMatch(/stopped answering .*tunnel: .*cannot reach the SSH server|Slurm job|lost track/);
      await launcher.stop(served.id);
      expect(served.state().message).toMatch(new RegExp(`could not cancel Slurm job ${st.jobId}`));
      // The job is still there; cancel it through a working link (what the app does once the link is back).
      await slurm.cancel(st.jobId!);
    } finally {
      await viaProxy.close();
    }
  }, 2 * READY_MS);

  it('the server process killed on the node: the job ends and the engine says so', async () => {
    const served = startOnSlurm(slurm);
    const st = await served.ready;
    // The one process serving this port (started by this test through Slurm), by its id.
    const pids = spawnSync('pgrep', ['-f', `serve-model .* --port ${served.spec.port} `], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number);
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await waitFor('error state', () => served.state().status === 'error', 60_000);
    expect(served.state().message).toMatch(new RegExp(`Slurm job ${st.jobId} ended|stopped answering`));
    await launcher.stop(served.id);
  }, 2 * READY_MS);
});

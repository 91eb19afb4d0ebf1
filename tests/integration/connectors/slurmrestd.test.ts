/**
 * slurmrestd (openapi/v0.0.38, JWT) against the REAL daemon from ci/services-up.sh. Tokens are minted with
 * `scontrol token` exactly as a user would; logs are read from the shared filesystem.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SlurmRestConnector, scontrolTokenProvider } from '../../../app/connectors/slurmRest';
import { MetricSeries, MetricStreamParser } from '../../../app/training/metrics';
import { SERVICES, loadServicesEnv, verlMetricsScript, type ServicesEnv } from './servicesEnv';
import { describeIf } from '../../support/requirements';
import { setTimeout as sleep } from 'node:timers/promises';

const env = loadServicesEnv();

describeIf(!!env, SERVICES, 'slurmrestd (real)', () => {
  const e = env as ServicesEnv;
  const tokens: string[] = [];
  let rest: SlurmRestConnector;
  beforeAll(() => {
    const mint = scontrolTokenProvider({ username: e.restUser, lifespanS: 600, slurmConf: e.slurmConf });
    rest = new SlurmRestConnector({
      baseUrl: e.restUrl,
      user: e.restUser,
      token: async (refresh) => {
        const t = await mint(refresh);
        tokens.push(t);
        return t;
      },
      outputDir: e.jobsDir,
      partition: e.partition,
    });
  });
  afterAll(async () => {
    await rest?.close();
  });

  it('probes the OpenAPI plugin version and pings', async () => {
    expect(await rest.apiVersion()).toBe('v0.0.38');
    expect(await rest.probe()).toMatch(/^slurmrestd v0\.0\.38, Slurm 22\.05/);
  });

  it('submits, follows to COMPLETED and parses verl metrics from the output file', async () => {
    const { id, logPath } = await rest.submit({ name: 'loupe-rest-metrics', script: verlMetricsScript(4, 0.1), env: { LOUPE_X: '1' } });
    expect(logPath).toBe(`${e.jobsDir}/loupe-${id}.out`);
    const parser = new MetricStreamParser();
    const series = new MetricSeries();
    let text = '';
    const res = await rest.follow(id, { pollMs: 300, onText: (t) => ((text += t), series.addAll(parser.push(t))) }).done;
    expect(res.status).toMatchObject({ state: 'succeeded', rawState: 'COMPLETED', exitCode: 0 });
    expect(res.status.endedAt).toBeGreaterThanOrEqual(res.status.startedAt ?? Infinity);
    expect(series.get('critic/score/mean').steps).toEqual([1, 2, 3, 4]);
    expect(text).toContain('training finished');
    const listed = await rest.list();
    expect(listed.find((j) => j.id === id)?.state).toBe('succeeded');
  });

  it('cancels a running job → CANCELLED', async () => {
    const { id } = await rest.submit({ name: 'loupe-rest-cancel', script: 'echo up\nsleep 120' });
    for (let i = 0; i < 80 && (await rest.status(id)).state !== 'running'; i++) await sleep(250);
    await rest.cancel(id);
    const res = await rest.follow(id, { pollMs: 250 }).done;
    expect(res.status.state).toBe('cancelled');
    expect(res.status.rawState).toBe('CANCELLED');
  });

  it('a job that vanished (unknown id) is unknown with a reason', async () => {
    const st = await rest.status('987655');
    expect(st.state).toBe('unknown');
    expect(st.message).toMatch(/does not know job 987655/);
  });

  it('a bad token → clear auth error (22.05 answers 500 for it); the token never appears in the message', async () => {
    const bad = 'eyJhbGciOiJIUzI1NiJ9.bm90LWEtdG9rZW4.c2lnbmF0dXJl';
    const r = new SlurmRestConnector({ baseUrl: e.restUrl, user: e.restUser, token: async () => bad, outputDir: e.jobsDir, apiVersion: 'v0.0.38' });
    const err = await r.status('1').catch((x: unknown) => x as Error & { code?: string });
    expect(err).toMatchObject({ code: 'auth', message: expect.stringMatching(/rejected the JWT/) });
    expect(String(err.message)).not.toContain(bad);
    for (const t of tokens) expect(String(err.message)).not.toContain(t);
  });

  it('unreachable slurmrestd → unreachable', async () => {
    const r = new SlurmRestConnector({ baseUrl: 'http://127.0.0.1:1', user: 'x', token: async () => 't', outputDir: '/tmp' });
    await expect(r.probe()).rejects.toMatchObject({ code: 'unreachable' });
  });
});

/**
 * Ray Jobs connector: contract tests replaying the transcript recorded from a real Ray 2.58 head
 * (tests/fixtures/ray-jobs-2.58/). Requests the client sends are compared with the recorded ones.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { RayConnector } from '../../../app/connectors/ray';
import { buildZip, rayPackageName } from '../../../app/connectors/zip';
import { cleanLogLine, MetricSeries, MetricStreamParser } from '../../../app/training/metrics';
import { entry, startRayReplay } from './rayReplay';

type Replay = Awaited<ReturnType<typeof startRayReplay>>;
let replay: Replay | null = null;
afterEach(async () => {
  await replay?.close();
  replay = null;
});

const submitFull = entry('submit_full');
const fullBody = submitFull.request.body as {
  entrypoint: string;
  submission_id: string;
  runtime_env: { env_vars: Record<string, string> };
  metadata: Record<string, string>;
  entrypoint_num_cpus: number;
};
const finalLog = (entry('logs_succeeded').response?.body as { logs: string }).logs;

function specFromRecorded() {
  return {
    name: 'verl-grpo-demo',
    script: fullBody.entrypoint,
    submissionId: fullBody.submission_id,
    env: fullBody.runtime_env.env_vars,
    metadata: fullBody.metadata,
    resources: { cpus: fullBody.entrypoint_num_cpus },
  };
}

describe('ray connector vs recorded Ray 2.58 (no auth)', () => {
  it('probe reads /api/version', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    expect(await ray.probe()).toBe('Ray 2.58.0 (Jobs API 4)');
    expect(await ray.authenticationMode()).toBe('disabled');
  });

  it('submit sends exactly the recorded body to /api/jobs/ with no browser headers; follow over the tail WebSocket yields the whole log once; verl metrics parse', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    const { id } = await ray.submit(specFromRecorded());
    expect(id).toBe('verl-grpo-demo-001');
    const sent = replay.received.find((r) => r.method === 'POST');
    expect(sent?.path).toBe('/api/jobs/');
    expect(JSON.parse(sent?.body.toString('utf8') ?? '')).toEqual(fullBody);
    expect(Object.keys(sent?.headers ?? {}).filter((h) => /^(origin|referer|user-agent|sec-fetch-)/.test(h))).toEqual([]);

    const states: string[] = [];
    let text = '';
    const res = await ray.follow(id, { pollMs: 60, onText: (t) => (text += t), onStatus: (s) => states.push(s.rawState) }).done;
    expect(res.reason).toBe('terminal');
    expect(res.status).toMatchObject({ state: 'succeeded', rawState: 'SUCCEEDED', exitCode: 0 });
    expect(states[0]).toBe('PENDING');
    expect(states.at(-1)).toBe('SUCCEEDED');
    expect(replay.wsOpened).toBe(1);
    // While the job ran, bytes came from the WebSocket: REST /logs is first read only after SUCCEEDED was seen.
    const firstLogs = replay.received.findIndex((r) => r.path.endsWith('/logs'));
    const succeededAt = replay.received.findIndex((r) => r.served === 'get_succeeded');
    expect(succeededAt).toBeGreaterThan(0);
    expect(firstLogs === -1 || firstLogs > succeededAt).toBe(true);
    expect(text).toBe(finalLog);
    expect(res.offset).toBe(Buffer.byteLength(finalLog));

    const series = new MetricSeries(0);
    const parser = new MetricStreamParser('verl-console');
    series.addAll(parser.push(text));
    expect(series.get('critic/score/mean').values).toEqual([0.25, 0.3125, 0.34375, 0.40625, 0.453125]);
    expect(series.get('response_length/mean').values).toEqual([312.0, 318.5, 325.25, 331.75, 340.125]);
    expect(series.get('actor/grad_norm').values[2]).toBe(Number.POSITIVE_INFINITY);
    expect(series.get('val-core/openai/gsm8k/reward/mean@1').steps).toEqual([0]);
    expect(series.get('actor/entropy').values[0]).toBeCloseTo(0.609, 9);
  });

  it('the same in poll mode, and a tail WebSocket that dies mid-stream falls back to REST without losing or repeating bytes', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const poll = new RayConnector({ baseUrl: replay.url, followMode: 'poll' });
    const { id } = await poll.submit(specFromRecorded());
    let a = '';
    const r1 = await poll.follow(id, { pollMs: 20, onText: (t) => (a += t) }).done;
    expect(r1.status.state).toBe('succeeded');
    expect(a).toBe(finalLog);
    await replay.close();

    replay = await startRayReplay({ head: 'no-auth', dropWsAfterFrames: 3 });
    const ws = new RayConnector({ baseUrl: replay.url });
    await ws.submit(specFromRecorded());
    let b = '';
    const r2 = await ws.follow(id, { pollMs: 40, onText: (t) => (b += t) }).done;
    expect(r2.status.state).toBe('succeeded');
    expect(b).toBe(finalLog);
  });

  it('a failing job: FAILED → failed, exit code 1, error type in the message', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    const rec = entry('submit_failing').request.body as { entrypoint: string; submission_id: string; metadata: Record<string, string> };
    const { id } = await ray.submit({ name: 'fail', script: rec.entrypoint, submissionId: rec.submission_id, metadata: rec.metadata });
    const st = await ray.status(id);
    expect(st).toMatchObject({ state: 'failed', rawState: 'FAILED', exitCode: 1 });
    expect(st.message).toMatch(/^JOB_ENTRYPOINT_COMMAND_ERROR: Job entrypoint command failed with exit code 1/);
    const log = (await ray.logs(id)).data.toString('utf8');
    expect(log).toContain('RuntimeError: simulated trainer crash: CUDA out of memory');
    await expect(ray.cancel(id)).resolves.toBeUndefined(); // stop on a terminal job: {"stopped": false}, not an error
  });

  it('stop → STOPPED maps to cancelled; delete of a live job is a conflict; delete of a finished one removes it', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    const rec = entry('submit_long_no_submission_id').request.body as { entrypoint: string };
    const { id } = await ray.submit({ name: 'long', script: rec.entrypoint });
    expect(id).toMatch(/^raysubmit_[A-Za-z0-9]{16}$/);
    expect((await ray.status(id)).state).toBe('running');
    await expect(ray.delete(id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/still running/) });
    await ray.cancel(id);
    let st = await ray.status(id);
    for (let i = 0; i < 5 && st.state !== 'cancelled'; i++) st = await ray.status(id);
    expect(st).toMatchObject({ state: 'cancelled', rawState: 'STOPPED', exitCode: null });
    const log = (await ray.logs(id)).data.toString('utf8');
    expect(log.split('\n').filter((l) => /step:\d+ - /.test(cleanLogLine(l))).length).toBeGreaterThan(2);
  });

  it('duplicate submission id → conflict; unknown id → unknown status and not-found errors', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    await ray.submit(specFromRecorded());
    const dup = await ray.submit({ name: 'dup', script: 'echo dup', submissionId: 'verl-grpo-demo-001' }).catch((e: unknown) => e);
    expect(dup).toMatchObject({ code: 'conflict', message: expect.stringMatching(/already exists/) });
    const st = await ray.status('no-such-job');
    expect(st).toMatchObject({ state: 'unknown', rawState: 'not-found' });
    expect(st.message).toMatch(/Job no-such-job does not exist/);
    await expect(ray.logs('no-such-job')).rejects.toMatchObject({ code: 'not-found' });
    await expect(ray.cancel('no-such-job')).rejects.toMatchObject({ code: 'not-found' });
    await expect(ray.delete('no-such-job')).rejects.toMatchObject({ code: 'not-found' });
  });

  it('list returns SUBMISSION jobs only', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    const recorded = entry('list_empty');
    expect(recorded.response?.body).toEqual([]);
    expect(await ray.list()).toEqual([]);
    // The next recorded listing holds SUBMISSION and DRIVER jobs; only submissions come back, keyed on submission_id.
    const all = entry('list_all').response?.body as Array<{ type: string; submission_id: string; status: string }>;
    const listed = await ray.list();
    const subs = all.filter((j) => j.type === 'SUBMISSION');
    expect(all.length).toBeGreaterThan(subs.length);
    expect(listed.map((j) => j.id).sort()).toEqual(subs.map((j) => j.submission_id).sort());
    expect(listed.find((j) => j.id === 'verl-grpo-demo-fail')?.state).toBe('failed');
  });

  it('working_dir upload: a deterministic zip byte-identical to the recorded one; GET then PUT, and no PUT when present', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    const recorded = Buffer.from((entry('package_upload').request.body as { base64: string }).base64, 'base64');
    const zip = buildZip([{ name: 'train.py', data: Buffer.from('print("step:1 - critic/score/mean:0.25")\n'), mode: 0o600 }], { compress: false });
    expect(zip.equals(recorded)).toBe(true);
    expect(rayPackageName(zip)).toBe('_ray_pkg_0673751627ff0689df8702dcdd6ee99b.zip');
    expect(await ray.uploadPackage(zip)).toBe('gcs://_ray_pkg_0673751627ff0689df8702dcdd6ee99b.zip');
    const put = replay.received.filter((r) => r.method === 'PUT');
    expect(put).toHaveLength(1);
    expect(createHash('md5').update(put[0]?.body ?? Buffer.alloc(0)).digest('hex')).toBe('0673751627ff0689df8702dcdd6ee99b');
    await ray.uploadPackage(zip);
    expect(replay.received.filter((r) => r.method === 'PUT')).toHaveLength(1);
  });

  it('a client offering permessage-deflate gets zero frames (why the connector turns it off)', async () => {
    replay = await startRayReplay({ head: 'no-auth' });
    const ray = new RayConnector({ baseUrl: replay.url });
    await ray.submit(specFromRecorded());
    const frames: string[] = [];
    const code = await new Promise<number>((resolve) => {
      const ws = new WebSocket(ray.tailUrl('verl-grpo-demo-001')); // ws default: perMessageDeflate on
      ws.on('message', (d) => frames.push(String(d)));
      ws.on('close', (c) => resolve(c));
    });
    expect(code).toBe(1000);
    expect(frames).toEqual([]);
  });

  it('unreachable dashboard → unreachable error', async () => {
    const ray = new RayConnector({ baseUrl: 'http://127.0.0.1:1' });
    await expect(ray.probe()).rejects.toMatchObject({ code: 'unreachable' });
  });
});

describe('ray connector vs recorded Ray 2.58 (token auth)', () => {
  const token = `tok-${randomBytes(12).toString('hex')}`;

  it('no token → 401 explained; wrong token → 403 explained; auth mode is public', async () => {
    replay = await startRayReplay({ head: 'token-auth', token });
    const none = new RayConnector({ baseUrl: replay.url });
    expect(await none.authenticationMode()).toBe('token');
    await expect(none.probe()).rejects.toMatchObject({ code: 'auth', message: expect.stringMatching(/requires a token.*HTTP 401: Unauthorized: Missing authentication token/) });
    const wrong = new RayConnector({ baseUrl: replay.url, token: 'not-the-token' });
    await expect(wrong.submit({ name: 'x', script: 'echo x' })).rejects.toMatchObject({ code: 'auth', message: expect.stringMatching(/rejected the token \(HTTP 403: Forbidden: Invalid authentication token\)/) });
    const noTokenFollow = await none.follow('verl-grpo-token-001', { pollMs: 20 }).done;
    expect(noTokenFollow.reason).toBe('error');
    expect(noTokenFollow.error?.code).toBe('auth');
  });

  it('with the token: submit, WebSocket follow, delete; the token appears in no log line, job text or error', async () => {
    replay = await startRayReplay({ head: 'token-auth', token });
    const debug: string[] = [];
    const ray = new RayConnector({ baseUrl: replay.url, token, log: (l) => debug.push(l) });
    expect(await ray.probe()).toBe('Ray 2.58.0 (Jobs API 4)');
    const rec = entry('auth/submit_right_token').request.body as typeof fullBody;
    const { id } = await ray.submit({ name: 't', script: rec.entrypoint, submissionId: rec.submission_id, env: rec.runtime_env?.env_vars, metadata: rec.metadata, resources: { cpus: rec.entrypoint_num_cpus } });
    expect(id).toBe('verl-grpo-token-001');
    const ws = replay.received.find((r) => r.method === 'WS');
    expect(ws).toBeUndefined();
    let text = '';
    const res = await ray.follow(id, { pollMs: 40, onText: (t) => (text += t) }).done;
    expect(res.status.state).toBe('succeeded');
    expect(replay.received.find((r) => r.method === 'WS')?.headers.authorization).toBe(`Bearer ${token}`);
    expect(text).toBe((entry('auth/logs_right_token').response?.body as { logs: string }).logs);
    await ray.delete(id);
    const err = await new RayConnector({ baseUrl: replay.url, token: `${token}x` }).probe().catch((e: Error) => e.message);
    expect(debug.length).toBeGreaterThan(3);
    const everything = [...debug, text, String(err), JSON.stringify(res)].join('\n');
    expect(everything).not.toContain(token);
  });
});

/** Local connector: real bash process groups, real files. */
import { mkdtempSync, rmSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { followIterator } from '../../../app/connectors/follow';
import { LocalConnector, pidAlive as alive } from '../../../app/connectors/local';
import { MetricSeries, MetricStreamParser } from '../../../app/training/metrics';
import { verlMetricsScript } from './servicesEnv';
import { setTimeout as sleep } from 'node:timers/promises';

const root = mkdtempSync(path.join(os.tmpdir(), 'loupe-local-jobs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const local = new LocalConnector({ root, killGraceS: 2 });

describe('local connector', () => {
  it('runs a script, follows its log as an async iterator, parses metrics, records exit 0', async () => {
    const { id, logPath } = await local.submit({ name: 'tiny', script: verlMetricsScript(5, 0.05), env: { EXTRA: 'v' } });
    expect(logPath).toBe(path.join(root, id, 'output.log'));
    const it = followIterator((h) => local.follow(id, { ...h, pollMs: 50 }));
    const parser = new MetricStreamParser();
    const series = new MetricSeries();
    let text = '';
    for await (const chunk of it) {
      text += chunk;
      series.addAll(parser.push(chunk));
    }
    const res = await it.result;
    expect(res.status).toMatchObject({ state: 'succeeded', rawState: 'exited(0)', exitCode: 0 });
    expect(series.get('critic/score/mean').steps).toEqual([1, 2, 3, 4, 5]);
    expect(text).toBe(await fs.readFile(logPath as string, 'utf8'));
    expect((await local.list()).map((j) => j.id)).toContain(id);
  });

  it('a failing script → failed with its exit code and a message pointing at the log', async () => {
    const { id } = await local.submit({ name: 'bad', script: 'echo oops >&2\nexit 3' });
    const res = await local.follow(id, { pollMs: 30 }).done;
    expect(res.status).toMatchObject({ state: 'failed', exitCode: 3 });
    expect(res.status.message).toMatch(/exited with code 3/);
    expect((await local.logs(id)).data.toString()).toBe('oops\n');
  });

  it('cancel kills the whole process group (including a background child) → cancelled', async () => {
    const { id } = await local.submit({ name: 'sleeper', script: 'sleep 300 &\necho "child $!"\nwait' });
    let childPid = 0;
    for (let i = 0; i < 100 && !childPid; i++) {
      const m = /child (\d+)/.exec((await local.logs(id)).data.toString());
      if (m) childPid = Number(m[1]);
      else await sleep(30);
    }
    expect(childPid).toBeGreaterThan(0);
    expect(alive(childPid)).toBe(true);
    expect((await local.status(id)).state).toBe('running');
    await local.cancel(id);
    const st = await local.status(id);
    expect(st.state).toBe('cancelled');
    for (let i = 0; i < 50 && alive(childPid); i++) await sleep(20);
    expect(alive(childPid)).toBe(false);
  });

  it('dispose stops following without waiting for the job; a partial last line waits for its newline', async () => {
    const { id } = await local.submit({ name: 'partial', script: 'printf "a\\nb"; sleep 0.6; printf "c\\n"; sleep 30' });
    const chunks: string[] = [];
    const f = local.follow(id, { pollMs: 30, onText: (t) => chunks.push(t) });
    for (let i = 0; i < 200 && chunks.join('') !== 'a\nbc\n'; i++) await sleep(20);
    f.dispose();
    const res = await f.done;
    expect(res.reason).toBe('disposed');
    expect(chunks).toEqual(['a\n', 'bc\n']);
    expect(res.offset).toBe(5);
    await local.cancel(id);
  });

  it('bad input: unknown id, bad name, missing cwd → clear errors', async () => {
    await expect(local.status('local-0000000000000-deadbeef')).rejects.toMatchObject({ code: 'not-found' });
    await expect(local.status('../etc')).rejects.toMatchObject({ code: 'not-found' });
    await expect(local.submit({ name: 'has space', script: 'true' })).rejects.toMatchObject({ code: 'invalid' });
    await expect(local.submit({ name: 'ok', script: 'true', cwd: path.join(root, 'nope') })).rejects.toMatchObject({ code: 'invalid', message: expect.stringMatching(/does not exist/) });
  });
});

describe('monitorJob', () => {
  it('streams metric points while the job runs and keeps the series', async () => {
    const { monitorJob } = await import('../../../app/training/monitor');
    const { id } = await local.submit({ name: 'mon', script: 'for s in 1 2 3; do echo "{\\"step\\": $s, \\"data\\": {\\"reward\\": 0.$s}}"; sleep 0.05; done' });
    const batches: number[][] = [];
    const m = monitorJob(local, id, { format: 'verl-jsonl', pollMs: 30, smoothing: 0, onPoints: (p) => batches.push(p.map((x) => x.step)) });
    const res = await m.done;
    expect(res.status.state).toBe('succeeded');
    expect(batches.flat()).toEqual([1, 2, 3]);
    expect(m.series.get('reward').values).toEqual([0.1, 0.2, 0.3]);
  });
});

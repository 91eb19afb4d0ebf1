/**
 * A Ray Jobs head for sweeps, built from the transcript recorded from a real Ray 2.58 head
 * (tests/fixtures/ray-jobs-2.58/): every answer is a recorded response body (submit_full, get_pending, get_running,
 * get_succeeded, get_failed, get_right_after_stop, get_stopped, stop_running_job, stop_again, logs_*, get_unknown),
 * with only the submission id, entrypoint, metadata and log text put in. What the recording cannot hold is a job
 * running a sweep's OWN entrypoint, so this head runs each submitted entrypoint for real with bash on this machine (as
 * a Ray worker runs it: `bash -c`, stdout and stderr into the job's log), which is what makes a merged run possible
 * in a test. `startRayReplay` (rayReplay.ts) stays the strict replay of recorded ids; this one is its companion for
 * jobs the recording could not know.
 *
 * Jobs stay PENDING until `release()` (or at once with `hold: false`), RUNNING while bash runs, then SUCCEEDED or
 * FAILED by its exit code. A stop while running answers `{"stopped": true}`, kills the process group, answers RUNNING
 * once (as recorded right after a stop) and STOPPED after that.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadTranscript, type TranscriptEntry } from './rayReplay';

type State = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'STOPPED';

interface Job {
  sid: string;
  entrypoint: string;
  metadata: Record<string, string> | null;
  state: State;
  log: string;
  proc: ChildProcess | null;
  /** After a stop, the next GET answers RUNNING once, as the recorded head did. */
  justStopped: boolean;
}

export interface RayShardHead {
  url: string;
  /** Every request, in order (method, path, parsed JSON body). */
  received: Array<{ method: string; path: string; body: unknown }>;
  jobs: Map<string, Job>;
  /** Let PENDING jobs start. */
  release(): void;
  close(): Promise<void>;
}

export async function startRayShardHead(o: { cwd: string; hold?: boolean; env?: NodeJS.ProcessEnv }): Promise<RayShardHead> {
  const byName = new Map<string, TranscriptEntry>(loadTranscript().filter((e) => e.head === 'no-auth').map((e) => [e.name, e]));
  const rec = (name: string): TranscriptEntry => {
    const e = byName.get(name);
    if (!e?.response) throw new Error(`no recorded answer ${name}`);
    return e;
  };
  const jobs = new Map<string, Job>();
  const received: RayShardHead['received'] = [];
  let released = o.hold === false;

  const startJob = (j: Job): void => {
    if (j.state !== 'PENDING') return;
    j.state = 'RUNNING';
    const p = spawn('bash', ['-c', j.entrypoint], { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    j.proc = p;
    p.stdout.on('data', (d: Buffer) => (j.log += d.toString('utf8')));
    p.stderr.on('data', (d: Buffer) => (j.log += d.toString('utf8')));
    p.on('close', (code) => {
      j.proc = null;
      if (j.state === 'RUNNING') j.state = code === 0 ? 'SUCCEEDED' : 'FAILED';
    });
  };

  const jobBody = (j: Job): unknown => {
    const name = { PENDING: 'get_pending', RUNNING: 'get_running', SUCCEEDED: 'get_succeeded', FAILED: 'get_failed', STOPPED: 'get_stopped' }[j.state];
    let e = rec(name);
    if (j.justStopped) {
      j.justStopped = false;
      e = rec('get_right_after_stop');
    }
    return { ...(e.response!.body as Record<string, unknown>), submission_id: j.sid, entrypoint: j.entrypoint, metadata: j.metadata };
  };

  const send = (res: http.ServerResponse, e: TranscriptEntry, body?: unknown): void => {
    const r = e.response!;
    const ct = r.headers['content-type'];
    const b = body !== undefined ? body : r.body;
    res.writeHead(r.status, ct ? { 'Content-Type': ct } : {});
    res.end(ct?.startsWith('application/json') ? JSON.stringify(b) : String(b ?? ''));
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const p = req.url ?? '/';
      let body: unknown = null;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null;
      } catch {
        return send(res, rec('submit_invalid_json'));
      }
      received.push({ method: req.method ?? '', path: p, body });
      if (req.method === 'POST' && p === '/api/jobs/') {
        const b = (body ?? {}) as { entrypoint?: unknown; submission_id?: unknown; metadata?: unknown };
        if (typeof b.entrypoint !== 'string') return send(res, rec('submit_missing_entrypoint'));
        const sid = typeof b.submission_id === 'string' ? b.submission_id : `raysubmit_${Math.random().toString(36).slice(2, 18)}`;
        if (jobs.has(sid)) return send(res, rec('submit_duplicate_submission_id'));
        const j: Job = { sid, entrypoint: b.entrypoint, metadata: (b.metadata as Record<string, string> | undefined) ?? null, state: 'PENDING', log: '', proc: null, justStopped: false };
        jobs.set(sid, j);
        if (released) startJob(j);
        return send(res, rec('submit_full'), { job_id: sid, submission_id: sid });
      }
      const m = /^\/api\/jobs\/([^/]+)(\/logs|\/stop)?$/.exec(p);
      const j = m ? jobs.get(decodeURIComponent(m[1]!)) : undefined;
      if (!m || !j) {
        const unknown = !m ? undefined : m[2] === '/logs' ? 'logs_unknown' : m[2] === '/stop' ? 'stop_unknown' : 'get_unknown';
        if (unknown && byName.has(unknown)) return send(res, rec(unknown));
        res.writeHead(599, { 'Content-Type': 'text/plain' });
        return res.end(`ray shard head: nothing recorded for ${req.method} ${p}`);
      }
      if (req.method === 'GET' && !m[2]) return send(res, rec('get_running'), jobBody(j));
      if (req.method === 'GET' && m[2] === '/logs') {
        // The recorded log's first line (the runtime env), then the line Ray writes before the entrypoint's output.
        const first = String((rec('logs_succeeded').response!.body as { logs: string }).logs.split('\n')[0]);
        const logs = j.state === 'PENDING' ? '' : `${first}\nRunning entrypoint for job ${j.sid}: ${j.entrypoint}\n${j.log}`;
        return send(res, rec('logs_succeeded'), { logs });
      }
      if (req.method === 'POST' && m[2] === '/stop') {
        if (j.state === 'PENDING' || j.state === 'RUNNING') {
          if (j.proc?.pid) {
            try {
              process.kill(-j.proc.pid, 'SIGTERM');
            } catch {
              /* already gone */
            }
          }
          j.justStopped = j.state === 'RUNNING';
          j.state = 'STOPPED';
          return send(res, rec(j.justStopped ? 'stop_running_job' : 'stop_pending_job'));
        }
        return send(res, rec('stop_again'));
      }
      res.writeHead(599, { 'Content-Type': 'text/plain' });
      res.end(`ray shard head: nothing recorded for ${req.method} ${p}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    jobs,
    release() {
      released = true;
      for (const j of jobs.values()) startJob(j);
    },
    async close() {
      for (const j of jobs.values()) {
        if (j.proc?.pid) {
          try {
            process.kill(-j.proc.pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      }
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

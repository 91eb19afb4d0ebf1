/**
 * Slurm through slurmrestd (JWT). The OpenAPI plugin version is probed from `/openapi/v3` because the schema drifts
 * per release: v0.0.38 (Slurm 22.05, verified live) takes `environment` as an object and `time_limit` as minutes;
 * v0.0.39+ take `environment` as ["K=V"] and `time_limit` as {set,infinite,number}; v0.0.40+ report
 * `job_state` as an array. Only v0.0.38 is exercised against a real server here.
 * slurmrestd has no log endpoint: logs are read through `readLog` (SFTP, a shared filesystem, …).
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { pollFollow } from './follow';
import { httpRequest, type HttpResponse } from './http';
import { checkSecretEnv, specSecretForms } from './jobSecrets';
import { redactError, redactText } from './redact';
import { clusterDirSchema, SlurmPartitionSchema } from '../contract/domains/training';
import { checkSlurmValue, mapSlurmState } from './slurm';
import {
  checkJobName,
  ConnectorError,
  type Connector,
  type FollowHandle,
  type FollowOptions,
  type JobSpec,
  type JobStatus,
  type LogSlice,
  type SubmitResult,
} from './types';

/** Supplies a JWT; `refresh` is true after the server rejected the previous one. */
export type TokenProvider = (refresh: boolean) => Promise<string>;

/** A token minted by `scontrol token username=U lifespan=S`, run through `run` (local shell or SSH). Cached until 80% of its life. */
export function scontrolTokenProvider(opts: {
  username: string;
  lifespanS?: number;
  run?: (command: string) => Promise<{ stdout: string; stderr: string; code: number | null }>;
  slurmConf?: string;
}): TokenProvider {
  const lifespan = opts.lifespanS ?? 3600;
  let cached: { token: string; until: number } | null = null;
  const run =
    opts.run ??
    ((command: string) =>
      new Promise<{ stdout: string; stderr: string; code: number | null }>((resolve) => {
        execFile('sh', ['-c', command], { env: { ...process.env, ...(opts.slurmConf ? { SLURM_CONF: opts.slurmConf } : {}) } }, (e, stdout, stderr) =>
          resolve({ stdout: String(stdout), stderr: String(stderr), code: e ? ((e as { code?: number }).code ?? 1) : 0 }),
        );
      }));
  return async (refresh) => {
    if (!refresh && cached && Date.now() < cached.until) return cached.token;
    if (!/^[a-z_][a-z0-9_.-]*$/i.test(opts.username)) throw new ConnectorError('invalid', 'scontrol token', `bad user name ${JSON.stringify(opts.username)}`);
    const r = await run(`scontrol token username=${opts.username} lifespan=${lifespan}`);
    const m = /SLURM_JWT=(\S+)/.exec(r.stdout);
    if (r.code !== 0 || !m) {
      throw new ConnectorError('auth', 'scontrol token', `could not mint a JWT (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}; is AuthAltTypes=auth/jwt set and slurm-wlm-jwt-plugin installed?`);
    }
    cached = { token: m[1] as string, until: Date.now() + lifespan * 800 };
    return cached.token;
  };
}

export interface SlurmRestOptions {
  /** e.g. http://127.0.0.1:6820 */
  baseUrl: string;
  user: string;
  token: TokenProvider;
  /** Absolute directory (as the job sees it) for output files. */
  outputDir: string;
  partition?: string;
  /** Force a plugin version like `v0.0.38`; default: probe. */
  apiVersion?: string;
  /** PATH etc. for the job (slurmrestd requires a non-empty environment). */
  baseEnv?: Record<string, string>;
  /** Read `path` from `offset`; default: the local filesystem (shared FS). */
  readLog?: (path: string, offset: number, maxBytes: number) => Promise<Buffer | null>;
  timeoutMs?: number;
}

const KNOWN_VERSIONS = ['v0.0.38', 'v0.0.39', 'v0.0.40', 'v0.0.41', 'v0.0.42', 'v0.0.43'];

function versionNumber(v: string): number {
  return Number(v.replace(/^v0\.0\./, ''));
}

async function readLocal(path: string, offset: number, maxBytes: number): Promise<Buffer | null> {
  const fh = await fs.open(path, 'r').catch(() => null);
  if (!fh) return null;
  try {
    const { size } = await fh.stat();
    const n = Math.max(0, Math.min(size - offset, maxBytes));
    const b = Buffer.alloc(n);
    if (n) await fh.read(b, 0, n, offset);
    return b;
  } finally {
    await fh.close();
  }
}

interface RestJob {
  job_id?: number;
  name?: string;
  job_state?: string | string[];
  exit_code?: number | { status?: string | string[]; return_code?: number | { number?: number } };
  submit_time?: number | { number?: number };
  start_time?: number | { number?: number };
  end_time?: number | { number?: number };
  state_reason?: string;
}

function num(v: number | { number?: number } | undefined): number | undefined {
  if (typeof v === 'number') return v;
  return v?.number;
}

function looksLikeJwtRejection(res: HttpResponse): boolean {
  try {
    const errs = res.json<{ errors?: Array<{ error_number?: number; error?: string; description?: string }> }>().errors ?? [];
    return errs.length > 0 && errs.every((e) => e.error_number === -1 && /unspecified error/i.test(e.error ?? ''));
  } catch {
    return /unable to load|authentication|jwt/i.test(res.text());
  }
}

export class SlurmRestConnector implements Connector {
  readonly kind = 'slurmrestd' as const;
  private version: string | null;
  constructor(private readonly o: SlurmRestOptions) {
    checkSlurmValue(clusterDirSchema('outputDir'), o.outputDir, 'outputDir', 'slurmrestd');
    if (o.partition !== undefined) checkSlurmValue(SlurmPartitionSchema, o.partition, 'partition', 'slurmrestd');
    this.version = o.apiVersion ?? null;
  }

  private async call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<HttpResponse> {
    const where = `slurmrestd ${method} ${path}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      const token = await this.o.token(attempt > 0);
      const res = await httpRequest({
        method,
        url: `${this.o.baseUrl.replace(/\/+$/, '')}${path}`,
        headers: {
          'X-SLURM-USER-NAME': this.o.user,
          'X-SLURM-USER-TOKEN': token,
          Accept: 'application/json',
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        timeoutMs: this.o.timeoutMs ?? 30_000,
        where,
      });
      // 22.05 answers a bad/expired JWT with 500 "slurmctld config is unable to load"; 401 when missing.
      // (A bad JWT shows as error_number -1 "Unspecified error" on every endpoint; unknown job ids are 2017.)
      const authFail = res.status === 401 || res.status === 403 || (res.status === 500 && looksLikeJwtRejection(res));
      if (authFail && attempt === 0) continue;
      if (authFail) {
        throw new ConnectorError('auth', where, `slurmrestd rejected the JWT for user ${this.o.user} (HTTP ${res.status}); mint a fresh one with \`scontrol token username=${this.o.user}\``);
      }
      return res;
    }
    throw new ConnectorError('auth', where, 'unreachable');
  }

  private errorsOf(res: HttpResponse): string {
    try {
      const j = res.json<{ errors?: Array<{ error?: string; description?: string; error_code?: number; error_number?: number }> }>();
      return (j.errors ?? []).map((e) => [e.error, e.description].filter(Boolean).join(': ')).join('; ');
    } catch {
      return res.text().slice(0, 300);
    }
  }

  async apiVersion(): Promise<string> {
    if (this.version) return this.version;
    const res = await this.call('GET', '/openapi/v3');
    if (res.status !== 200) throw new ConnectorError('backend', 'slurmrestd probe', `GET /openapi/v3 answered ${res.status}`);
    const paths = Object.keys(res.json<{ paths?: Record<string, unknown> }>().paths ?? {});
    const found = KNOWN_VERSIONS.filter((v) => paths.includes(`/slurm/${v}/ping`) || paths.includes(`/slurm/${v}/ping/`));
    if (!found.length) {
      const any = paths.map((p) => /^\/slurm\/(v[\d.]+)\//.exec(p)?.[1]).filter(Boolean);
      throw new ConnectorError('unsupported', 'slurmrestd probe', `no supported OpenAPI plugin (server offers ${[...new Set(any)].join(', ') || 'none'}; Loupe knows ${KNOWN_VERSIONS.join(', ')}); use the SSH connector`);
    }
    this.version = found.sort((a, b) => versionNumber(b) - versionNumber(a))[0] as string;
    return this.version;
  }

  async probe(): Promise<string> {
    const v = await this.apiVersion();
    const res = await this.call('GET', `/slurm/${v}/ping`);
    if (res.status !== 200) throw new ConnectorError('backend', 'slurmrestd ping', `HTTP ${res.status}: ${this.errorsOf(res)}`);
    const meta = res.json<{ meta?: { Slurm?: { release?: string }; slurm?: { release?: string } } }>().meta;
    return `slurmrestd ${v}, Slurm ${meta?.Slurm?.release ?? meta?.slurm?.release ?? '?'}`;
  }

  logPath(id: string): string {
    return `${this.o.outputDir.replace(/\/+$/, '')}/loupe-${id}.out`;
  }

  /**
   * The submit body for the probed plugin version. `secretEnv` goes into `job.environment` only (the request body,
   * sent to slurmrestd and never logged); the script is the spec's script unchanged.
   */
  submitBody(spec: JobSpec, version: string): Record<string, unknown> {
    const r = spec.resources ?? {};
    checkSecretEnv(spec, 'slurmrestd submit');
    const env = { PATH: '/usr/local/bin:/usr/bin:/bin', ...this.o.baseEnv, ...spec.env, ...spec.secretEnv };
    const v = versionNumber(version);
    const script = spec.script.startsWith('#!') ? spec.script : `#!/bin/bash\n${spec.script}`;
    const job: Record<string, unknown> = {
      name: spec.name,
      current_working_directory: spec.cwd ?? this.o.outputDir,
      standard_output: `${this.o.outputDir.replace(/\/+$/, '')}/loupe-%j.out`,
      standard_error: `${this.o.outputDir.replace(/\/+$/, '')}/loupe-%j.out`,
      environment: v <= 38 ? env : Object.entries(env).map(([k, val]) => `${k}=${val}`),
    };
    const partition = r.partition ?? this.o.partition;
    if (partition) {
      checkSlurmValue(SlurmPartitionSchema, partition, 'partition', 'slurmrestd submit');
      job.partition = partition;
    }
    if (r.timeLimitMin) job.time_limit = v <= 38 ? r.timeLimitMin : { set: true, infinite: false, number: r.timeLimitMin };
    if (r.cpus) job.cpus_per_task = r.cpus;
    if (r.nodes) job.nodes = v <= 38 ? r.nodes : String(r.nodes);
    if (r.memoryMb) job.memory_per_node = v <= 38 ? r.memoryMb : { set: true, infinite: false, number: r.memoryMb };
    if (r.gpus) job[v <= 38 ? 'gres' : 'tres_per_node'] = `gres/gpu:${r.gpus}`;
    return v >= 41 ? { job: { ...job, script } } : { script, job };
  }

  async submit(spec: JobSpec): Promise<SubmitResult> {
    checkJobName(spec.name, 'slurmrestd submit');
    // Refused rather than ignored: a job description without its array would run one task where n were asked, and
    // this connector's status, logs and cancel follow whole jobs, not `<job>_<index>` tasks.
    if (spec.resources?.array !== undefined) {
      throw new ConnectorError('invalid', 'slurmrestd submit', `array jobs (${JSON.stringify(spec.resources.array)}) are not supported through slurmrestd; use a Slurm connector over SSH (slurm-ssh) for "Run on cluster"`);
    }
    const v = await this.apiVersion();
    const hide = specSecretForms(spec);
    const res = await this.call('POST', `/slurm/${v}/job/submit`, this.submitBody(spec, v)).catch((e: unknown) => {
      throw redactError(e, hide);
    });
    let id: number | undefined;
    try {
      id = res.json<{ job_id?: number }>().job_id;
    } catch {
      id = undefined;
    }
    if (res.status !== 200 || typeof id !== 'number') {
      throw new ConnectorError('invalid', 'slurmrestd submit', redactText(`the job was refused (HTTP ${res.status}): ${this.errorsOf(res) || 'no error text'}`, hide));
    }
    return { id: String(id), logPath: this.logPath(String(id)) };
  }

  async status(id: string): Promise<JobStatus> {
    if (!/^\d+$/.test(id)) throw new ConnectorError('invalid', 'slurmrestd status', `${JSON.stringify(id)} is not a Slurm job id`);
    const v = await this.apiVersion();
    const res = await this.call('GET', `/slurm/${v}/job/${id}`);
    let jobs: RestJob[] = [];
    try {
      jobs = res.json<{ jobs?: RestJob[] }>().jobs ?? [];
    } catch {
      jobs = [];
    }
    const j = jobs.find((x) => String(x.job_id) === id) ?? (jobs.length === 1 ? jobs[0] : undefined);
    if (!j) {
      const errs = this.errorsOf(res);
      if (/invalid job id/i.test(errs) || res.status === 404) {
        return { id, state: 'unknown', rawState: 'not-found', message: `slurmrestd does not know job ${id} (${errs || `HTTP ${res.status}`}); finished jobs are dropped after MinJobAge` };
      }
      throw new ConnectorError('backend', `slurmrestd status ${id}`, `HTTP ${res.status}: ${errs}`);
    }
    const raw = Array.isArray(j.job_state) ? j.job_state.join('+') : (j.job_state ?? '');
    const state = mapSlurmState(raw);
    const st: JobStatus = { id, state, rawState: raw };
    if (j.name) st.name = j.name;
    const ec = j.exit_code;
    st.exitCode = state === 'pending' || state === 'running' ? null : typeof ec === 'number' ? ec : (num(ec?.return_code) ?? null);
    const sub = num(j.submit_time);
    const start = num(j.start_time);
    const end = num(j.end_time);
    if (sub) st.submittedAt = sub * 1000;
    if (start && state !== 'pending') st.startedAt = start * 1000;
    if (end && (state === 'succeeded' || state === 'failed' || state === 'cancelled')) st.endedAt = end * 1000;
    if (state === 'failed') st.message = `Slurm state ${raw}, exit code ${st.exitCode}${j.state_reason && j.state_reason !== 'None' ? `, reason ${j.state_reason}` : ''}`;
    return st;
  }

  async logs(id: string, offset = 0): Promise<LogSlice> {
    const max = 4 * 1024 * 1024;
    const data = (await (this.o.readLog ?? readLocal)(this.logPath(id), offset, max)) ?? Buffer.alloc(0);
    return { data, offset, nextOffset: offset + data.length };
  }

  follow(id: string, options?: FollowOptions): FollowHandle {
    return pollFollow(this, id, options);
  }

  async cancel(id: string): Promise<void> {
    if (!/^\d+$/.test(id)) throw new ConnectorError('invalid', 'slurmrestd cancel', `${JSON.stringify(id)} is not a Slurm job id`);
    const v = await this.apiVersion();
    // No ?signal=: with SIGTERM 22.05 records FAILED instead of CANCELLED.
    const res = await this.call('DELETE', `/slurm/${v}/job/${id}`);
    if (res.status !== 200) {
      const errs = this.errorsOf(res);
      throw new ConnectorError(/invalid job id/i.test(errs) ? 'not-found' : 'backend', `slurmrestd cancel ${id}`, `HTTP ${res.status}: ${errs}`);
    }
  }

  async list(): Promise<JobStatus[]> {
    const v = await this.apiVersion();
    const res = await this.call('GET', `/slurm/${v}/jobs`);
    if (res.status !== 200) throw new ConnectorError('backend', 'slurmrestd list', `HTTP ${res.status}: ${this.errorsOf(res)}`);
    return (res.json<{ jobs?: RestJob[] }>().jobs ?? []).map((j) => {
      const raw = Array.isArray(j.job_state) ? j.job_state.join('+') : (j.job_state ?? '');
      return { id: String(j.job_id), name: j.name ?? '', state: mapSlurmState(raw), rawState: raw };
    });
  }

  async close(): Promise<void> {}
}

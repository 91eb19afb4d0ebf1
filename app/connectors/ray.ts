/**
 * Ray Jobs REST client (verified against a recorded Ray 2.58 head, tests/fixtures/ray-jobs-2.58/).
 * - node:http, never global fetch(): the dashboard answers 405 to requests with `sec-fetch-*` headers.
 * - `/api/jobs/` needs its trailing slash; `/api/jobs/{id}` etc. must not have one.
 * - Key on submission_id; job_id stays null for entrypoints that never call ray.init().
 * - Log tail WebSocket with `ws` and perMessageDeflate:false (with deflate the dashboard sends zero frames);
 *   terminate(), not close(), because a PENDING job's socket never answers a close frame.
 * - Token auth (Ray ≥ 2.52): `Authorization: Bearer <token>`; 401 = missing, 403 = wrong.
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { pollFollow, type Pollable } from './follow';
import { httpRequest, summarizeErrorBody, type HttpResponse } from './http';
import { checkSecretEnv, specSecretForms } from './jobSecrets';
import { redactError, redactText } from './redact';
import {
  ConnectorError,
  isTerminal,
  type Connector,
  type FollowHandle,
  type FollowOptions,
  type JobSpec,
  type JobState,
  type JobStatus,
  type LogSlice,
  type SubmitResult,
} from './types';
import { buildZip, collectDir, rayPackageName } from './zip';

export interface RayOptions {
  /** Dashboard address, e.g. http://head:8265 */
  baseUrl: string;
  /** Token for RAY_AUTH_MODE=token clusters (from the SecretStore). */
  token?: string;
  /** Extra headers for proxies (never logged). */
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** 'ws' (default): tail WebSocket for data, REST for state; 'poll': REST only. */
  followMode?: 'ws' | 'poll';
  /** Debug log sink; lines never contain credentials. */
  log?: (line: string) => void;
}

/** JobDetails as returned by GET /api/jobs/{id} (Ray 2.58). */
export interface RayJobDetails {
  type: 'SUBMISSION' | 'DRIVER' | string;
  job_id: string | null;
  submission_id: string | null;
  status: 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED' | string;
  entrypoint?: string;
  message?: string | null;
  error_type?: string | null;
  start_time?: number | null;
  end_time?: number | null;
  metadata?: Record<string, string> | null;
  runtime_env?: Record<string, unknown> | null;
  driver_exit_code?: number | null;
}

export function mapRayState(s: string): JobState {
  switch (s) {
    case 'PENDING':
      return 'pending';
    case 'RUNNING':
      return 'running';
    case 'SUCCEEDED':
      return 'succeeded';
    case 'FAILED':
      return 'failed';
    case 'STOPPED':
      return 'cancelled';
    default:
      return 'unknown';
  }
}

export function rayStatus(d: RayJobDetails): JobStatus {
  const id = d.submission_id ?? d.job_id ?? '';
  const state = mapRayState(d.status);
  const st: JobStatus = { id, state, rawState: d.status, exitCode: d.driver_exit_code ?? null };
  if (d.metadata?.name) st.name = d.metadata.name;
  if (d.start_time) st.startedAt = d.start_time;
  if (d.end_time) st.endedAt = d.end_time;
  if (d.message && (state === 'failed' || state === 'pending' || state === 'cancelled')) {
    st.message = d.error_type ? `${d.error_type}: ${d.message}` : d.message;
  }
  return st;
}

function stripNulls<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

export class RayConnector implements Connector {
  readonly kind = 'ray' as const;
  private readonly base: string;
  constructor(private readonly o: RayOptions) {
    this.base = o.baseUrl.replace(/\/+$/, '');
  }

  private authHeaders(): Record<string, string> {
    return { ...(this.o.headers ?? {}), ...(this.o.token ? { Authorization: `Bearer ${this.o.token}` } : {}) };
  }

  private secrets(): string[] {
    return [this.o.token ?? '', ...Object.values(this.o.headers ?? {})].filter((s) => s.length >= 4);
  }

  private debug(line: string): void {
    this.o.log?.(redactText(line, this.secrets()));
  }

  private async request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: Buffer | string, contentType?: string): Promise<HttpResponse> {
    const where = `ray ${method} ${path}`;
    const t0 = Date.now();
    const res = await httpRequest({
      method,
      url: `${this.base}${path}`,
      headers: { ...this.authHeaders(), ...(contentType ? { 'Content-Type': contentType } : {}) },
      ...(body !== undefined ? { body } : {}),
      timeoutMs: this.o.timeoutMs ?? 30_000,
      where,
    }).catch((e: unknown) => {
      this.debug(`${where} failed: ${e instanceof Error ? e.message : String(e)}`);
      throw e;
    });
    this.debug(`${where} -> ${res.status} (${Date.now() - t0} ms, ${res.body.length} B)`);
    if (res.status >= 400) throw this.httpError(where, res);
    return res;
  }

  private httpError(where: string, res: HttpResponse): ConnectorError {
    const text = redactText(res.text(), this.secrets());
    const summary = summarizeErrorBody(text);
    switch (res.status) {
      case 401:
        return new ConnectorError('auth', where, `the Ray dashboard requires a token (RAY_AUTH_MODE=token) and none was sent; add the cluster token to this connection (HTTP 401: ${summary})`);
      case 403:
        return new ConnectorError('auth', where, `the Ray dashboard rejected the token (HTTP 403: ${summary}); check it matches RAY_AUTH_TOKEN on the head`);
      case 404:
        return new ConnectorError('not-found', where, summary === '404: Not Found' ? 'no such route (wrong address, or not a Ray ≥ 2.x dashboard?)' : summary);
      case 400:
        return new ConnectorError('invalid', where, `Ray refused the request: ${summary}`, text);
      case 405:
        return new ConnectorError(
          'backend',
          where,
          /browser traffic/.test(text) ? `Ray treats this client as a browser (${summary}); requests must not carry Origin/Sec-Fetch-*/Mozilla user agents` : `method not allowed (${summary})`,
        );
      case 500:
        if (/already exists/.test(text)) return new ConnectorError('conflict', where, `a job with this submission id already exists (${summary})`, text);
        if (/non-terminal state/.test(text)) return new ConnectorError('conflict', where, `the job is still running; stop it and wait for a terminal state before deleting (${summary})`, text);
        return new ConnectorError('backend', where, `Ray answered 500: ${summary}`, text);
      default:
        return new ConnectorError('backend', where, `HTTP ${res.status}: ${summary}`, text);
    }
  }

  async probe(): Promise<string> {
    const v = (await this.request('GET', '/api/version')).json<{ ray_version?: string; version?: string }>();
    return `Ray ${v.ray_version ?? '?'} (Jobs API ${v.version ?? '?'})`;
  }

  /** Whether the head wants a token (public endpoint). */
  async authenticationMode(): Promise<string> {
    return (await this.request('GET', '/api/authentication_mode')).json<{ authentication_mode?: string }>().authentication_mode ?? 'unknown';
  }

  /** Zip `dir` deterministically and upload it unless the head already has it; returns the `gcs://` URI. */
  async uploadWorkingDir(dir: string, excludes?: string[]): Promise<string> {
    const zip = buildZip(await collectDir(dir, excludes ?? ['.git/']));
    return this.uploadPackage(zip);
  }

  async uploadPackage(zip: Buffer): Promise<string> {
    if (zip.length > 512 * 1024 * 1024) throw new ConnectorError('invalid', 'ray upload', `working_dir zip is ${zip.length} bytes; Ray 2.58 accepts at most 512 MiB`);
    const name = rayPackageName(zip);
    const path = `/api/packages/gcs/${name}`;
    const exists = await this.request('GET', path).then(
      () => true,
      (e: unknown) => {
        if (e instanceof ConnectorError && e.code === 'not-found') return false;
        throw e;
      },
    );
    if (!exists) await this.request('PUT', path, zip, 'application/octet-stream');
    return `gcs://${name}`;
  }

  /**
   * The JSON body for POST /api/jobs/ (no null keys: older heads reject unknown keys). `secretEnv` joins
   * runtime_env.env_vars, the only channel Ray Jobs has into the job's environment; note that Ray returns
   * runtime_env in GET /api/jobs/{id} to anyone who can reach the dashboard (turn on token auth).
   */
  async submitBody(spec: JobSpec): Promise<Record<string, unknown>> {
    const r = spec.resources ?? {};
    const extra = spec.runtimeEnv ?? {};
    checkSecretEnv(spec, 'ray submit');
    const envVars = { ...((extra.env_vars as Record<string, string> | undefined) ?? {}), ...(spec.env ?? {}), ...(spec.secretEnv ?? {}) };
    const runtimeEnv: Record<string, unknown> = { ...extra };
    if (Object.keys(envVars).length) runtimeEnv.env_vars = envVars;
    else delete runtimeEnv.env_vars;
    if (spec.uploadDir) runtimeEnv.working_dir = await this.uploadWorkingDir(spec.uploadDir, extra.excludes as string[] | undefined);
    return stripNulls({
      entrypoint: spec.script,
      submission_id: spec.submissionId,
      runtime_env: Object.keys(runtimeEnv).length ? runtimeEnv : undefined,
      metadata: spec.metadata,
      entrypoint_num_cpus: r.cpus,
      entrypoint_num_gpus: r.gpus,
      entrypoint_memory: r.memoryMb ? r.memoryMb * 1024 * 1024 : undefined,
    });
  }

  async submit(spec: JobSpec): Promise<SubmitResult> {
    if (!spec.script.trim()) throw new ConnectorError('invalid', 'ray submit', 'the entrypoint is empty');
    const body = await this.submitBody(spec);
    // A 400 answer is a traceback that may quote the request (runtime_env included): mask the job's secrets.
    const hide = specSecretForms(spec);
    const res = await this.request('POST', '/api/jobs/', JSON.stringify(body), 'application/json').catch((e: unknown) => {
      throw redactError(e, hide);
    });
    const j = res.json<{ submission_id?: string; job_id?: string }>();
    const id = j.submission_id ?? j.job_id;
    if (!id) throw new ConnectorError('backend', 'ray submit', `no submission_id in ${res.text().slice(0, 200)}`);
    return { id };
  }

  private enc(id: string): string {
    if (!id || /[/?#]/.test(id)) throw new ConnectorError('invalid', 'ray', `bad job id ${JSON.stringify(id)}`);
    return encodeURIComponent(id);
  }

  async details(id: string): Promise<RayJobDetails> {
    return (await this.request('GET', `/api/jobs/${this.enc(id)}`)).json<RayJobDetails>();
  }

  async status(id: string): Promise<JobStatus> {
    try {
      return rayStatus(await this.details(id));
    } catch (e) {
      if (e instanceof ConnectorError && e.code === 'not-found') {
        return { id, state: 'unknown', rawState: 'not-found', message: `Ray does not know job ${id} (deleted, or another cluster): ${e.message}` };
      }
      throw e;
    }
  }

  async logs(id: string, offset = 0): Promise<LogSlice> {
    const all = Buffer.from((await this.request('GET', `/api/jobs/${this.enc(id)}/logs`)).json<{ logs?: string }>().logs ?? '', 'utf8');
    const data = offset < all.length ? all.subarray(offset) : Buffer.alloc(0);
    return { data, offset, nextOffset: offset + data.length };
  }

  follow(id: string, options: FollowOptions = {}): FollowHandle {
    if ((this.o.followMode ?? 'ws') === 'poll') return pollFollow(this, id, options);
    const tail = new RayTail(this, id, this.tailUrl(id), this.authHeaders(), (l) => this.debug(l));
    const handle = pollFollow(tail, id, options);
    void handle.done.finally(() => tail.stop());
    return { done: handle.done, dispose: () => (tail.stop(), handle.dispose()) };
  }

  tailUrl(id: string): string {
    return `${this.base.replace(/^http/, 'ws')}/api/jobs/${this.enc(id)}/logs/tail`;
  }

  /** Ask Ray to stop the job. Stopping a finished job is not an error. */
  async cancel(id: string): Promise<void> {
    await this.request('POST', `/api/jobs/${this.enc(id)}/stop`);
  }

  /** Delete a terminal job's record (logs on disk stay). */
  async delete(id: string): Promise<void> {
    await this.request('DELETE', `/api/jobs/${this.enc(id)}`);
  }

  async list(): Promise<JobStatus[]> {
    const arr = (await this.request('GET', '/api/jobs/')).json<RayJobDetails[]>();
    if (!Array.isArray(arr)) throw new ConnectorError('backend', 'ray list', 'expected a JSON array from GET /api/jobs/');
    return arr.filter((d) => d.type === 'SUBMISSION').map(rayStatus);
  }

  async close(): Promise<void> {}

  /** Generate a submission id like the SDK (`raysubmit_` + 16 chars) but with the job name visible. */
  static submissionId(name: string): string {
    return `${name}-${randomBytes(6).toString('hex')}`;
  }
}

/**
 * Serves `logs(offset)` from the tail WebSocket while it is open and the job is live; falls back to REST when the
 * socket closes early (deflate, proxies) or once the job is terminal (REST has the complete log). The WebSocket
 * sends the whole log from byte 0, so WS bytes are a prefix of the REST log and offsets stay exact.
 */
class RayTail implements Pollable {
  private buf: Buffer = Buffer.alloc(0);
  private ws: WebSocket | null = null;
  private open = false;
  private failed: ConnectorError | null = null;
  private terminal = false;
  private stopped = false;
  constructor(
    private readonly ray: RayConnector,
    private readonly id: string,
    url: string,
    headers: Record<string, string>,
    private readonly debug: (line: string) => void,
  ) {
    const ws = new WebSocket(url, { perMessageDeflate: false, headers, handshakeTimeout: 15_000 });
    this.ws = ws;
    this.open = true;
    ws.on('message', (data: WebSocket.RawData) => {
      const b = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer);
      this.buf = Buffer.concat([this.buf, b]);
    });
    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        this.debug(`ray WS ${url.replace(/^ws/, 'http').replace(/^https?:\/\/[^/]+/, '')} -> ${status}`);
        if (status === 401 || status === 403) {
          this.failed = new ConnectorError('auth', `ray logs/tail ${id}`, status === 401 ? 'the Ray dashboard requires a token (HTTP 401)' : `the Ray dashboard rejected the token (HTTP 403: ${text.trim()})`);
        } else if (status === 404) {
          this.failed = new ConnectorError('not-found', `ray logs/tail ${id}`, text.trim() || 'no such job');
        }
      });
      this.open = false;
      ws.terminate();
    });
    ws.on('error', (e) => {
      this.debug(`ray WS error: ${e.message}`);
      this.open = false;
    });
    ws.on('close', (code) => {
      this.debug(`ray WS closed ${code} after ${this.buf.length} B`);
      this.open = false;
    });
  }

  async status(id: string): Promise<JobStatus> {
    if (this.failed) throw this.failed;
    const st = await this.ray.status(id);
    if (isTerminal(st.state)) this.terminal = true;
    return st;
  }

  async logs(id: string, offset = 0): Promise<LogSlice> {
    if (this.failed) throw this.failed;
    if (this.open && !this.terminal && !this.stopped) {
      const data = offset < this.buf.length ? this.buf.subarray(offset) : Buffer.alloc(0);
      return { data: Buffer.from(data), offset, nextOffset: offset + data.length };
    }
    return this.ray.logs(id, offset);
  }

  stop(): void {
    this.stopped = true;
    // terminate(): a PENDING job's tail never answers a close frame.
    this.ws?.terminate();
    this.ws = null;
    void this.id;
  }
}

/**
 * The one interface every training-job backend implements (local process, Slurm over SSH, slurmrestd, Ray Jobs).
 * Plain Node; no Electron. Offsets are byte offsets into the job's combined stdout+stderr log.
 */

/** Normalized job state. `unknown` means the backend could not tell (job purged, never existed, backend unreachable). */
export type JobState = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'unknown';

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set(['succeeded', 'failed', 'cancelled']);
export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.has(state);
}

/** Resource request; each backend maps what it understands and ignores the rest. */
export interface JobResources {
  cpus?: number;
  gpus?: number;
  memoryMb?: number;
  nodes?: number;
  /** Wall-clock limit in minutes. */
  timeLimitMin?: number;
  /** Slurm partition. */
  partition?: string;
  /**
   * Slurm only: an array (`0-3`, `2`, `0-9%2`): one task per index, each with its own log; task ids are
   * `<job>_<index>` (status, logs, cancel take them).
   */
  array?: string;
}

/** What to run. `script` is a bash script body (a `#!` line is added when missing). */
export interface JobSpec {
  /** Human name; Slurm `--job-name`, Ray `submission_id` prefix/metadata. Must match /^[A-Za-z0-9._-]{1,64}$/. */
  name: string;
  script: string;
  env?: Record<string, string>;
  /**
   * Secret environment variables (name → value, resolved from the SecretStore by `resolveSecretEnv`). Each backend
   * puts them only into the job's environment: never into a script file, a job record or a log line, and error
   * messages are redacted. (Slurm itself keeps a job's environment in its root-only state directory.)
   */
  secretEnv?: Record<string, string>;
  /** Working directory on the machine that runs the job (remote for Slurm). */
  cwd?: string;
  resources?: JobResources;
  /** Free-form labels (Ray metadata; kept in local job records). */
  metadata?: Record<string, string>;
  /** Ray only: a local directory to zip and upload as runtime_env.working_dir. */
  uploadDir?: string;
  /** Ray only: extra runtime_env keys (pip, excludes, …); env is merged into env_vars. */
  runtimeEnv?: Record<string, unknown>;
  /** Ray only: explicit submission id (else generated from name). */
  submissionId?: string;
}

export interface JobStatus {
  id: string;
  state: JobState;
  /** The backend's own state word(s), e.g. `CANCELLED by 0`, `STOPPED`, `exited(1)`. */
  rawState: string;
  name?: string;
  exitCode?: number | null;
  /** A sentence a user can act on (why failed / why unknown). */
  message?: string;
  /** Unix ms. */
  submittedAt?: number;
  startedAt?: number;
  endedAt?: number;
}

export interface LogSlice {
  /** Bytes starting at `offset`. */
  data: Buffer;
  offset: number;
  /** Offset to pass next time (offset + data.length). */
  nextOffset: number;
}

/** Handlers for `follow`. Text is delivered in whole lines (a trailing partial line waits for its newline or the job's end). */
export interface FollowHandlers {
  /** Whole lines (each ending in "\n" except possibly the very last at job end) and the offset after them. */
  onText?: (text: string, nextOffset: number) => void;
  /** Called when the state changes. */
  onStatus?: (status: JobStatus) => void;
  /** A transient problem (connection dropped, will retry). */
  onWarning?: (message: string) => void;
}

export interface FollowOptions extends FollowHandlers {
  /** Start at this byte offset (default 0). */
  offset?: number;
  /** Poll period in ms (default 1000). */
  pollMs?: number;
  /** Consecutive failures (connection errors) before giving up (default 8). */
  maxRetries?: number;
  /** Consecutive `unknown` states before concluding the job vanished (default 3). */
  unknownLimit?: number;
}

export interface FollowResult {
  /** Final status (terminal, or unknown when the job vanished, or the last seen one when disposed). */
  status: JobStatus;
  /** Offset after the last delivered byte. */
  offset: number;
  /** Why following ended. */
  reason: 'terminal' | 'vanished' | 'disposed' | 'error';
  error?: ConnectorError;
}

/** A running follow: `done` resolves (never rejects) when it ends; `dispose()` stops it. */
export interface FollowHandle {
  done: Promise<FollowResult>;
  dispose(): void;
}

export interface SubmitResult {
  id: string;
  /** Where the log lives, when the backend has a file (absolute path on the executing machine). */
  logPath?: string;
}

/** One backend. All methods reject with `ConnectorError`. */
export interface Connector {
  readonly kind: 'local' | 'slurm-ssh' | 'slurmrestd' | 'ray';
  /** Check reachability and auth; resolves with a short description of the backend (versions). */
  probe(): Promise<string>;
  submit(spec: JobSpec): Promise<SubmitResult>;
  status(id: string): Promise<JobStatus>;
  /** Log bytes from `offset` (default 0). */
  logs(id: string, offset?: number): Promise<LogSlice>;
  follow(id: string, options?: FollowOptions): FollowHandle;
  cancel(id: string): Promise<void>;
  list(): Promise<JobStatus[]>;
  /** Release connections. */
  close(): Promise<void>;
}

export type ConnectorErrorCode =
  | 'unreachable' // host/port does not answer or connection refused
  | 'auth' // wrong key / token (401/403/permission denied)
  | 'host-key' // server host key does not match known_hosts
  | 'not-found' // job id unknown
  | 'invalid' // the request was rejected as invalid (bad spec, 400)
  | 'conflict' // duplicate id, delete of live job
  | 'connection-lost' // dropped mid-operation; retrying may help
  | 'timeout'
  | 'backend' // the backend said something went wrong
  | 'unsupported';

/** An error a user can act on: what failed, where, and `code` for programmatic handling. */
export class ConnectorError extends Error {
  readonly code: ConnectorErrorCode;
  readonly where: string;
  readonly detail?: string;
  constructor(code: ConnectorErrorCode, where: string, message: string, detail?: string) {
    super(`${where}: ${message}`);
    this.name = 'ConnectorError';
    this.code = code;
    this.where = where;
    this.detail = detail;
  }
  /** Transient errors are retried by follow(). */
  get transient(): boolean {
    return this.code === 'connection-lost' || this.code === 'timeout' || this.code === 'unreachable';
  }
}

export const JOB_NAME_RE = /^[A-Za-z0-9._-]{1,64}$/;

export function checkJobName(name: string, where: string): void {
  if (!JOB_NAME_RE.test(name)) {
    throw new ConnectorError('invalid', where, `job name ${JSON.stringify(name)} must be 1-64 characters of A-Z a-z 0-9 . _ -`);
  }
}

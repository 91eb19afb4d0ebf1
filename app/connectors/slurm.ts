/**
 * Slurm through its CLI (sbatch/squeue/scontrol/sacct/scancel/tail) over SSH. Version-proof: only plain-text
 * outputs that have been stable for years. Logs are read with `tail -c +N` from an absolute output path
 * derived from the job id (`<remoteDir>/loupe-<id>.out`), so no client-side state is needed.
 */
import type { z } from 'zod';
import { clusterDirSchema, SlurmPartitionSchema } from '../contract/domains/training';
import { pollFollow } from './follow';
import { checkSecretEnv, specSecretForms } from './jobSecrets';
import { BASH_REDACT_FILTER, bashSecretForms, redactError, redactText } from './redact';
import { shq, SshSession, type ExecResult, type SshOptions } from './ssh';
import {
  checkJobName,
  ConnectorError,
  type Connector,
  type FollowHandle,
  type FollowOptions,
  type JobSpec,
  type JobState,
  type JobStatus,
  type LogSlice,
  type SubmitResult,
} from './types';

/** Map a Slurm state word (`CANCELLED by 0`, `COMPLETED`, `NODE_FAIL`…) to a JobState. */
export function mapSlurmState(raw: string): JobState {
  const w = raw.trim().split(/[\s+]/)[0]?.toUpperCase() ?? '';
  switch (w) {
    case 'PENDING':
    case 'CONFIGURING':
    case 'REQUEUED':
    case 'REQUEUE_FED':
    case 'REQUEUE_HOLD':
    case 'RESV_DEL_HOLD':
    case 'SUSPENDED':
    case 'STOPPED':
    case 'RESIZING':
      return 'pending';
    case 'RUNNING':
    case 'COMPLETING':
    case 'STAGE_OUT':
    case 'SIGNALING':
      return 'running';
    case 'COMPLETED':
      return 'succeeded';
    case 'CANCELLED':
      return 'cancelled';
    case 'FAILED':
    case 'TIMEOUT':
    case 'NODE_FAIL':
    case 'OUT_OF_MEMORY':
    case 'BOOT_FAIL':
    case 'DEADLINE':
    case 'PREEMPTED':
    case 'SPECIAL_EXIT':
    case 'REVOKED':
      return 'failed';
    default:
      return 'unknown';
  }
}

/** `0:15` → 0 (exit code part); the signal goes into the message. */
function parseExitCode(s: string | undefined): number | null {
  if (!s) return null;
  const m = /^(\d+)(?::(\d+))?$/.exec(s.trim());
  return m ? Number(m[1]) : null;
}

/** Slurm prints local times without a zone (`2026-11-26T01:20:38`); `Unknown`/`None` → undefined. */
function parseSlurmTime(s: string | undefined): number | undefined {
  if (!s || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(s)) return undefined;
  const t = new Date(s).getTime();
  return Number.isFinite(t) ? t : undefined;
}

/** Parse one line of `scontrol show job -o` into key → value (values may contain spaces only in known keys). */
export function parseScontrolLine(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /(?:^|\s)([A-Za-z][A-Za-z0-9/:_]*)=(\S*)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) out[m[1] as string] = m[2] as string;
  return out;
}

export function statusFromScontrol(id: string, fields: Record<string, string>): JobStatus {
  const raw = fields.JobState ?? '';
  const state = mapSlurmState(raw);
  const exit = fields.ExitCode ?? '';
  const st: JobStatus = { id, state, rawState: raw, exitCode: state === 'pending' || state === 'running' ? null : parseExitCode(exit) };
  if (fields.JobName) st.name = fields.JobName;
  const sub = parseSlurmTime(fields.SubmitTime);
  if (sub !== undefined) st.submittedAt = sub;
  if (state !== 'pending') {
    const start = parseSlurmTime(fields.StartTime);
    if (start !== undefined) st.startedAt = start;
  }
  if (state === 'succeeded' || state === 'failed' || state === 'cancelled') {
    const end = parseSlurmTime(fields.EndTime);
    if (end !== undefined) st.endedAt = end;
  }
  if (state === 'failed') st.message = `Slurm state ${raw}, exit code ${exit}${fields.Reason && fields.Reason !== 'None' ? `, reason ${fields.Reason}` : ''}`;
  if (state === 'pending' && fields.Reason && fields.Reason !== 'None') st.message = `waiting: ${fields.Reason}`;
  return st;
}

/**
 * Check a value that Loupe writes into an `#SBATCH` line or a Slurm setting: the same rules as the connection
 * schemas, so a value that skipped them (a connection file, a template's resources) still cannot add lines.
 */
export function checkSlurmValue(schema: z.ZodType<string>, value: string, what: string, where: string): void {
  const r = schema.safeParse(value);
  if (!r.success) throw new ConnectorError('invalid', where, `${what} ${JSON.stringify(value)}: ${r.error.issues.map((i) => i.message).join('; ')}`);
}

/** A number in an `#SBATCH` line: a positive whole number, whatever the caller's types said. */
function sbatchInt(v: unknown, what: string, where: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw new ConnectorError('invalid', where, `${what} must be a positive whole number, got ${JSON.stringify(v)}`);
  return v;
}

export interface SlurmSshOptions {
  ssh: SshOptions | SshSession;
  /** Absolute directory on the cluster for job output files (created on submit). */
  remoteDir: string;
  /** `SLURM_CONF` to prefix to every command (remote shells do not inherit it). */
  slurmConf?: string;
  partition?: string;
  /** Largest slice `logs()` returns (default 4 MiB). */
  maxChunkBytes?: number;
  /** Per-command timeout (default 60 s). */
  commandTimeoutMs?: number;
}

const JOB_ID_RE = /^\d+(?:_\d+)?$/;
const ARRAY_RE = /^\d{1,6}(?:-\d{1,6})?(?:,\d{1,6}(?:-\d{1,6})?)*(?:%\d{1,4})?$/;

/** Indices of an ArrayTaskId field: `3`, `2-3`, `4,6-7`, `0-9%2` (the throttle after % is not an index). */
export function arrayIndices(field: string): number[] {
  const out: number[] = [];
  for (const part of field.split('%')[0]!.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) continue;
    const a = Number(m[1]);
    const b = m[2] !== undefined ? Number(m[2]) : a;
    for (let i = a; i <= b && out.length < 100_000; i++) out.push(i);
  }
  return out;
}
const SACCT_MARK = '@@LOUPE_SACCT@@';

export class SlurmSshConnector implements Connector {
  readonly kind = 'slurm-ssh' as const;
  readonly ssh: SshSession;
  private readonly o: SlurmSshOptions;
  constructor(options: SlurmSshOptions) {
    checkSlurmValue(clusterDirSchema('remoteDir'), options.remoteDir, 'remoteDir', 'slurm-ssh');
    if (options.partition !== undefined) checkSlurmValue(SlurmPartitionSchema, options.partition, 'partition', 'slurm-ssh');
    this.o = options;
    this.ssh = options.ssh instanceof SshSession ? options.ssh : new SshSession(options.ssh);
  }

  /** The cluster folder for job output files (cluster sweeps default their remote workspace under it). */
  get remoteDir(): string {
    return this.o.remoteDir;
  }

  private env(): string {
    return this.o.slurmConf ? `SLURM_CONF=${shq(this.o.slurmConf)} ` : '';
  }

  private run(cmd: string, stdin?: string): Promise<ExecResult> {
    return this.ssh.exec(cmd, { ...(stdin !== undefined ? { stdin } : {}), timeoutMs: this.o.commandTimeoutMs ?? 60_000 });
  }

  /** Absolute path of a job's output file. */
  logPath(id: string): string {
    return `${this.o.remoteDir.replace(/\/+$/, '')}/loupe-${id}.out`;
  }

  private checkId(id: string, where: string): void {
    if (!JOB_ID_RE.test(id)) throw new ConnectorError('invalid', where, `${JSON.stringify(id)} is not a Slurm job id`);
  }

  async probe(): Promise<string> {
    const r = await this.run(`${this.env()}sinfo --version && ${this.env()}sinfo -h -o '%P %a %D %T'`);
    if (r.code !== 0) throw new ConnectorError('backend', 'slurm-ssh probe', `sinfo failed (exit ${r.code}): ${r.stderr.trim() || 'no output'}; is Slurm installed and SLURM_CONF right?`);
    return r.stdout.toString('utf8').trim();
  }

  /** The batch script sent on stdin: #SBATCH header + (non-secret) env exports + body. `secretEnv` is never written here. */
  buildScript(spec: JobSpec): string {
    const r = spec.resources ?? {};
    const where = 'slurm-ssh submit';
    // Every value of a header line is checked here, where the line is written: one line each, nothing more.
    checkJobName(spec.name, where);
    if (r.array !== undefined && !ARRAY_RE.test(r.array)) throw new ConnectorError('invalid', where, `array ${JSON.stringify(r.array)} must look like 0-3, 2, 1,3 or 0-9%2`);
    // An array task's log is loupe-<array job>_<index>.out, so logPath(`<job>_<index>`) finds it as for any job.
    const out = r.array !== undefined ? 'loupe-%A_%a.out' : 'loupe-%j.out';
    const lines = ['#!/bin/bash', `#SBATCH --job-name=${spec.name}`, `#SBATCH --output=${this.o.remoteDir.replace(/\/+$/, '')}/${out}`];
    if (r.array !== undefined) lines.push(`#SBATCH --array=${r.array}`);
    const partition = r.partition ?? this.o.partition;
    if (partition) {
      checkSlurmValue(SlurmPartitionSchema, partition, 'partition', where);
      lines.push(`#SBATCH --partition=${partition}`);
    }
    if (r.nodes) lines.push(`#SBATCH --nodes=${sbatchInt(r.nodes, 'nodes', where)}`);
    if (r.cpus) lines.push(`#SBATCH --cpus-per-task=${sbatchInt(r.cpus, 'cpus', where)}`);
    if (r.gpus) lines.push(`#SBATCH --gpus-per-node=${sbatchInt(r.gpus, 'gpus', where)}`);
    if (r.memoryMb) lines.push(`#SBATCH --mem=${sbatchInt(r.memoryMb, 'memoryMb', where)}M`);
    if (r.timeLimitMin) lines.push(`#SBATCH --time=${sbatchInt(r.timeLimitMin, 'timeLimitMin', where)}`);
    if (spec.cwd) {
      checkSlurmValue(clusterDirSchema('cwd'), spec.cwd, 'cwd', where);
      lines.push(`#SBATCH --chdir=${spec.cwd}`);
    }
    for (const [k, v] of Object.entries(spec.env ?? {})) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new ConnectorError('invalid', 'slurm-ssh submit', `environment variable name ${JSON.stringify(k)} is not valid`);
      lines.push(`export ${k}=${shq(v)}`);
    }
    const body = spec.script.startsWith('#!') ? spec.script.slice(spec.script.indexOf('\n') + 1) : spec.script;
    const names = Object.keys(spec.secretEnv ?? {});
    if (names.length) {
      // The job's output file must not keep a secret the job prints: the body runs in a child bash whose output
      // goes through the redacting filter (the secrets themselves arrive in the environment, never in this text).
      const tag = 'LOUPE_BODY_EOF';
      if (body.split('\n').includes(tag)) throw new ConnectorError('invalid', where, `the script contains the line ${tag}, which Loupe uses to quote it`);
      lines.push(bashSecretForms(names), BASH_REDACT_FILTER, `IFS= read -r -d '' loupe_body <<'${tag}' || true`, `${body}${body.endsWith('\n') ? '' : '\n'}${tag}`, 'bash -c "$loupe_body" 2>&1 | loupe_redact', 'exit "${PIPESTATUS[0]}"');
      return `${lines.join('\n')}\n`;
    }
    return `${lines.join('\n')}\n${body}${body.endsWith('\n') ? '' : '\n'}`;
  }

  /**
   * The remote command and its stdin for `sbatch`. Secret values never appear in the command line (visible in `ps`,
   * in sshd's debug log) nor in the script (sbatch stores it in slurmctld's state and the spool): they go first on
   * stdin, one base64 line each, and the remote shell `read`s them into exported variables before sbatch reads the
   * rest of stdin as the script. `--export=ALL` then copies them into the job's environment only. (No `ssh2` env
   * request: sshd drops variables its `AcceptEnv` does not list, and the CI sshd lists none.)
   */
  submitCommand(spec: JobSpec, script: string): { command: string; stdin: string } {
    const secrets = checkSecretEnv(spec, 'slurm-ssh submit');
    const reads = secrets.map(
      ([k]) => `IFS= read -r __loupe_s && __loupe_s="$(printf '%s' "$__loupe_s" | base64 -d && printf x)" && export ${k}="\${__loupe_s%x}" && `,
    );
    const unset = secrets.length ? 'unset __loupe_s && ' : '';
    const command = `mkdir -p ${shq(this.o.remoteDir)} && { ${reads.join('')}${unset}${this.env()}sbatch --parsable --export=ALL; }`;
    const lines = secrets.map(([, v]) => `${Buffer.from(v, 'utf8').toString('base64')}\n`);
    return { command, stdin: `${lines.join('')}${script}` };
  }

  async submit(spec: JobSpec): Promise<SubmitResult> {
    checkJobName(spec.name, 'slurm-ssh submit');
    const hide = specSecretForms(spec);
    const script = this.buildScript(spec);
    const { command, stdin } = this.submitCommand(spec, script);
    let r: ExecResult;
    try {
      r = await this.run(command, stdin);
    } catch (e) {
      throw redactError(e, hide);
    }
    const out = r.stdout.toString('utf8').trim();
    const id = out.split(';')[0] ?? '';
    if (r.code !== 0 || !JOB_ID_RE.test(id)) {
      throw new ConnectorError('backend', 'slurm-ssh submit', redactText(`sbatch refused the job (exit ${r.code}): ${r.stderr.trim() || out || 'no output'}`, hide));
    }
    return { id, logPath: this.logPath(id) };
  }

  /** One shell snippet that prints scontrol's line, or (when slurmctld forgot the job) sacct's row after a marker. */
  private statusCommand(id: string): string {
    return `{ ${this.env()}scontrol show job -o ${id} 2>&1 || { echo '${SACCT_MARK}'; ${this.env()}sacct -c -n --parsable2 -j ${id} -o JobID,JobName,State,ExitCode,Start,End 2>&1; }; }`;
  }

  private parseStatus(id: string, text: string): JobStatus {
    const i = text.indexOf(SACCT_MARK);
    const sc = i >= 0 ? text.slice(0, i) : text;
    const line = sc.split('\n').find((l) => l.startsWith(`JobId=${id.split('_')[0]} `) || l.includes(`JobId=${id} `));
    if (i < 0 && line) return statusFromScontrol(id, parseScontrolLine(line));
    if (i < 0 || !/Invalid job id/i.test(sc)) {
      throw new ConnectorError('backend', `slurm-ssh status ${id}`, `scontrol failed: ${sc.trim() || 'no output'}`);
    }
    // Finished jobs leave slurmctld after MinJobAge; the job-completion log still has them.
    const row = text.slice(i + SACCT_MARK.length).split('\n').map((l) => l.split('|')).find((f) => f[0] === id);
    if (row) return statusFromScontrol(id, { JobName: row[1] ?? '', JobState: row[2] ?? '', ExitCode: row[3] ?? '', StartTime: row[4] ?? '', EndTime: row[5] ?? '' });
    return {
      id,
      state: 'unknown',
      rawState: 'not-found',
      message: `job ${id} is in neither squeue/scontrol nor the completion log (sacct -c): it was purged, never existed on this cluster, or accounting is off`,
    };
  }

  /**
   * Every task of an array job, in ONE command: index → status. Tasks not yet split off (`ArrayTaskId=2-3`) are
   * pending; a task slurmctld no longer lists is absent from the map (the caller decides what that means).
   */
  async arrayTasks(arrayId: string): Promise<Map<number, JobStatus>> {
    if (!/^\d+$/.test(arrayId)) throw new ConnectorError('invalid', 'slurm-ssh array', `${JSON.stringify(arrayId)} is not a Slurm array job id`);
    const r = await this.run(`${this.env()}scontrol show job -o ${arrayId} 2>&1`);
    const text = r.stdout.toString('utf8');
    const out = new Map<number, JobStatus>();
    if (r.code !== 0) {
      if (/Invalid job id/i.test(text + r.stderr)) return out;
      throw new ConnectorError('backend', `slurm-ssh array ${arrayId}`, `scontrol failed (exit ${r.code}): ${(text + r.stderr).trim()}`);
    }
    for (const line of text.split('\n')) {
      const f = parseScontrolLine(line);
      if (f.ArrayJobId !== arrayId || !f.ArrayTaskId) continue;
      for (const i of arrayIndices(f.ArrayTaskId)) out.set(i, statusFromScontrol(`${arrayId}_${i}`, f));
    }
    return out;
  }

  async status(id: string): Promise<JobStatus> {
    this.checkId(id, 'slurm-ssh status');
    const r = await this.run(this.statusCommand(id));
    return this.parseStatus(id, r.stdout.toString('utf8') + r.stderr);
  }

  /**
   * Status and new log bytes in ONE SSH command (each exec costs a remote shell: ~0.6 s measured here), used by
   * follow(). The status text goes base64-encoded on the first line so log bytes after it stay untouched.
   */
  async poll(id: string, offset: number): Promise<{ status: JobStatus; slice: LogSlice }> {
    this.checkId(id, 'slurm-ssh poll');
    const max = this.o.maxChunkBytes ?? 4 * 1024 * 1024;
    const p = shq(this.logPath(id));
    const r = await this.run(`${this.statusCommand(id)} | base64 | tr -d '\\n'; echo; if [ -e ${p} ]; then tail -c +${offset + 1} ${p} | head -c ${max}; fi`);
    const nl = r.stdout.indexOf(0x0a);
    if (nl < 0) throw new ConnectorError('backend', `slurm-ssh poll ${id}`, `unexpected output (exit ${r.code}): ${r.stderr.trim()}`);
    const status = this.parseStatus(id, Buffer.from(r.stdout.subarray(0, nl).toString('ascii'), 'base64').toString('utf8'));
    const data = Buffer.from(r.stdout.subarray(nl + 1));
    return { status, slice: { data, offset, nextOffset: offset + data.length } };
  }

  async logs(id: string, offset = 0): Promise<LogSlice> {
    this.checkId(id, 'slurm-ssh logs');
    const max = this.o.maxChunkBytes ?? 4 * 1024 * 1024;
    const p = shq(this.logPath(id));
    // Exit 3 = no file yet (job still pending): an empty slice, not an error.
    const r = await this.run(`if [ -e ${p} ]; then tail -c +${offset + 1} ${p} | head -c ${max}; else exit 3; fi`);
    if (r.code === 3) return { data: Buffer.alloc(0), offset, nextOffset: offset };
    if (r.code !== 0) throw new ConnectorError('backend', `slurm-ssh logs ${id}`, `reading ${this.logPath(id)} failed (exit ${r.code}): ${r.stderr.trim()}`);
    return { data: r.stdout, offset, nextOffset: offset + r.stdout.length };
  }

  follow(id: string, options?: FollowOptions): FollowHandle {
    return pollFollow(this, id, options);
  }

  async cancel(id: string): Promise<void> {
    this.checkId(id, 'slurm-ssh cancel');
    // scancel exits 0 silently for ids it does not know (22.05), so look first.
    const before = await this.status(id);
    if (before.state === 'unknown') throw new ConnectorError('not-found', `slurm-ssh cancel ${id}`, before.message ?? 'unknown job');
    if (before.state === 'succeeded' || before.state === 'failed' || before.state === 'cancelled') return;
    const r = await this.run(`${this.env()}scancel ${id}`);
    if (r.code !== 0) {
      const kind = /Invalid job id/i.test(r.stderr) ? 'not-found' : /already completing or completed/i.test(r.stderr) ? 'conflict' : 'backend';
      throw new ConnectorError(kind, `slurm-ssh cancel ${id}`, `scancel failed (exit ${r.code}): ${r.stderr.trim()}`);
    }
  }

  async list(): Promise<JobStatus[]> {
    const r = await this.run(`${this.env()}squeue -h --me -o '%i|%j|%T|%r'`);
    if (r.code !== 0) throw new ConnectorError('backend', 'slurm-ssh list', `squeue failed (exit ${r.code}): ${r.stderr.trim()}`);
    return r.stdout
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [id = '', name = '', raw = '', reason = ''] = l.split('|');
        const st: JobStatus = { id, name, state: mapSlurmState(raw), rawState: raw };
        if (reason && reason !== 'None') st.message = reason;
        return st;
      });
  }

  async close(): Promise<void> {
    await this.ssh.close();
  }
}

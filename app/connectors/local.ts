/**
 * Local connector: each job is a detached bash process group; its output goes to a file so logs survive a restart
 * of Loupe. Layout under `root`: `<id>/script.sh`, `<id>/output.log`, `<id>/job.json`, `<id>/exit_code`, `<id>/cancelled`.
 * Secrets in `env` travel only in the process environment, never into files.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs, openSync, closeSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { containedPath } from '../workspace/contain';
import { pollFollow } from './follow';
import { checkSecretEnv } from './jobSecrets';
import { BASH_REDACT_FILTER, bashSecretForms } from './redact';
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
import { sleep } from '../sleep';

export interface LocalConnectorOptions {
  /** Folder holding one sub-folder per job (e.g. `<workspace>/training/jobs`). */
  root: string;
  /** Seconds between SIGTERM and SIGKILL on cancel (default 5). */
  killGraceS?: number;
  /** Largest slice `logs()` returns (default 4 MiB). */
  maxChunkBytes?: number;
}

interface LocalJobRecord {
  id: string;
  name: string;
  pid: number;
  submittedAt: number;
  cwd: string;
  metadata?: Record<string, string>;
}

const ID_RE = /^local-[0-9]{13}-[0-9a-f]{8}$/;

/** Alive and not a zombie (a killed job's children may linger as zombies when PID 1 does not reap). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (macOS): trust kill(0)
  }
}

export class LocalConnector implements Connector {
  readonly kind = 'local' as const;
  private readonly root: string;
  private readonly killGraceS: number;
  private readonly maxChunk: number;
  constructor(options: LocalConnectorOptions) {
    this.root = path.resolve(options.root);
    this.killGraceS = options.killGraceS ?? 5;
    this.maxChunk = options.maxChunkBytes ?? 4 * 1024 * 1024;
  }

  private dir(id: string): string {
    if (!ID_RE.test(id)) throw new ConnectorError('not-found', `local job ${id}`, 'not a local job id (expected local-<ms>-<hex8>)');
    return containedPath(this.root, id);
  }

  async probe(): Promise<string> {
    await fs.mkdir(this.root, { recursive: true });
    return `local jobs in ${this.root}`;
  }

  async submit(spec: JobSpec): Promise<SubmitResult> {
    checkJobName(spec.name, 'local submit');
    checkSecretEnv(spec, 'local submit');
    const id = `local-${Date.now()}-${randomBytes(4).toString('hex')}`;
    const dir = path.join(this.root, id);
    await fs.mkdir(dir, { recursive: true });
    const scriptPath = path.join(dir, 'script.sh');
    const script = spec.script.startsWith('#!') ? spec.script : `#!/usr/bin/env bash\n${spec.script}`;
    await fs.writeFile(scriptPath, script.endsWith('\n') ? script : `${script}\n`, { mode: 0o700 });
    const logPath = path.join(dir, 'output.log');
    const cwd = spec.cwd ? path.resolve(spec.cwd) : dir;
    try {
      await fs.access(cwd);
    } catch {
      throw new ConnectorError('invalid', 'local submit', `working directory ${cwd} does not exist`);
    }
    // The wrapper records the exit code next to the log, so status works after Loupe restarts. Paths travel as
    // arguments ($1…), never inside the wrapper's text: the jobs folder's name may hold any character.
    // A job with secrets: its output goes through the redacting filter before it reaches output.log, so a job that
    // prints a secret leaves *** on disk. The filter's list of forms is not exported: the job never sees it.
    const names = Object.keys(spec.secretEnv ?? {});
    const run = names.length ? `${bashSecretForms(names)}\n${BASH_REDACT_FILTER}\nbash "$1" 2>&1 | loupe_redact; c=\${PIPESTATUS[0]}` : 'bash "$1"; c=$?';
    const wrapper = `${run}; echo "$c" > "$2" && mv "$2" "$3"; exit "$c"`;
    const wrapperArgs = [scriptPath, path.join(dir, 'exit_code.tmp'), path.join(dir, 'exit_code')];
    const fd = openSync(logPath, 'a');
    let pid: number | undefined;
    try {
      const child = spawn('bash', ['-c', wrapper, 'loupe-job', ...wrapperArgs], {
        cwd,
        detached: true, // own process group: cancel kills the whole tree
        stdio: ['ignore', fd, fd],
        // secretEnv: the child's environment only (job.json and script.sh never see it).
        env: { ...process.env, ...spec.env, ...spec.secretEnv, LOUPE_JOB_ID: id, LOUPE_JOB_NAME: spec.name },
      });
      pid = child.pid;
      child.on('error', () => undefined);
      child.unref();
    } finally {
      closeSync(fd);
    }
    if (!pid) throw new ConnectorError('backend', 'local submit', 'bash could not be started (is bash on PATH?)');
    const rec: LocalJobRecord = { id, name: spec.name, pid, submittedAt: Date.now(), cwd, ...(spec.metadata ? { metadata: spec.metadata } : {}) };
    await fs.writeFile(path.join(dir, 'job.json'), JSON.stringify(rec, null, 2));
    return { id, logPath };
  }

  private async record(id: string): Promise<LocalJobRecord> {
    const dir = this.dir(id);
    try {
      return JSON.parse(await fs.readFile(path.join(dir, 'job.json'), 'utf8')) as LocalJobRecord;
    } catch {
      throw new ConnectorError('not-found', `local job ${id}`, `no job record at ${path.join(dir, 'job.json')}`);
    }
  }

  async status(id: string): Promise<JobStatus> {
    const rec = await this.record(id);
    const dir = this.dir(id);
    const base = { id, name: rec.name, submittedAt: rec.submittedAt, startedAt: rec.submittedAt };
    const cancelled = await fs.stat(path.join(dir, 'cancelled')).then((s) => s.mtimeMs, () => null);
    const readExit = () => fs.readFile(path.join(dir, 'exit_code'), 'utf8').then((s) => s.trim(), () => null);
    let exit = await readExit();
    const alive = pidAlive(rec.pid);
    // The wrapper writes exit_code and then exits: a process that ended between the two looks "lost" unless the
    // exit code is read again after seeing it gone.
    if (exit === null && !alive) exit = await readExit();
    if (cancelled !== null && !alive) {
      return { ...base, state: 'cancelled', rawState: 'cancelled', exitCode: exit === null ? null : Number(exit), endedAt: cancelled };
    }
    if (exit !== null) {
      const code = Number(exit);
      const endedAt = await fs.stat(path.join(dir, 'exit_code')).then((s) => s.mtimeMs, () => undefined);
      return {
        ...base,
        state: code === 0 ? 'succeeded' : 'failed',
        rawState: `exited(${code})`,
        exitCode: code,
        ...(endedAt !== undefined ? { endedAt } : {}),
        ...(code !== 0 ? { message: `the script exited with code ${code}; see the end of ${path.join(dir, 'output.log')}` } : {}),
      };
    }
    if (alive) return { ...base, state: cancelled !== null ? 'running' : 'running', rawState: cancelled !== null ? 'cancelling' : 'running' };
    return {
      ...base,
      state: 'failed',
      rawState: 'lost',
      exitCode: null,
      message: `process ${rec.pid} is gone and left no exit code (killed from outside, or the machine restarted)`,
    };
  }

  async logs(id: string, offset = 0): Promise<LogSlice> {
    await this.record(id);
    const file = path.join(this.dir(id), 'output.log');
    const fh = await fs.open(file, 'r').catch(() => null);
    if (!fh) return { data: Buffer.alloc(0), offset, nextOffset: offset };
    try {
      const { size } = await fh.stat();
      const n = Math.max(0, Math.min(size - offset, this.maxChunk));
      const buf = Buffer.alloc(n);
      if (n > 0) await fh.read(buf, 0, n, offset);
      return { data: buf, offset, nextOffset: offset + n };
    } finally {
      await fh.close();
    }
  }

  follow(id: string, options?: FollowOptions): FollowHandle {
    return pollFollow(this, id, { pollMs: 250, ...options });
  }

  async cancel(id: string): Promise<void> {
    const rec = await this.record(id);
    const dir = this.dir(id);
    if (!pidAlive(rec.pid)) return;
    await fs.writeFile(path.join(dir, 'cancelled'), new Date().toISOString());
    const kill = (sig: NodeJS.Signals): void => {
      try {
        process.kill(-rec.pid, sig); // negative pid: the whole process group
      } catch {
        /* already gone */
      }
    };
    kill('SIGTERM');
    const deadline = Date.now() + this.killGraceS * 1000;
    while (pidAlive(rec.pid) && Date.now() < deadline) await sleep(50);
    if (pidAlive(rec.pid)) kill('SIGKILL');
    while (pidAlive(rec.pid) && Date.now() < deadline + 2000) await sleep(50);
  }

  async list(): Promise<JobStatus[]> {
    const names = await fs.readdir(this.root).catch(() => [] as string[]);
    const out: JobStatus[] = [];
    for (const n of names.filter((x) => ID_RE.test(x)).sort()) {
      out.push(await this.status(n).catch((e: unknown) => ({ id: n, state: 'unknown' as const, rawState: 'unreadable', message: String(e) })));
    }
    return out;
  }

  async close(): Promise<void> {}
}

/**
 * The PyVision code sandbox: one Python process per episode (`worker.py`), isolated with bubblewrap.
 *
 * Isolation (`bwrap`): new user, pid, network, ipc, uts and cgroup namespaces (`--unshare-all`: no
 * network at all, not even the host's loopback), a read-only root made of `/usr` plus the few `/etc`
 * files the dynamic loader, fontconfig and matplotlib read, the episode's images read-only at
 * `/episode/images`, a scratch folder at `/episode/scratch` (the only writable place), `--die-with-parent`.
 * When Loupe runs as root the sandbox runs as `nobody`, so that the process limit applies.
 *
 * Where bubblewrap is missing or cannot create namespaces, `startPySandbox` refuses with a message
 * saying so, unless the caller opts in with `allowUnisolated` (then the process runs with the resource
 * limits only, and `info.isolation` is `none` so the manifest says it).
 *
 * Limits: wall time per run (a timer here; the whole process group is killed and a fresh worker is
 * started on the next run), CPU time, memory, output size, figure count, file size and process count
 * (resource limits set by the worker; see worker.py for how each reaches the model).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, chmodSync, chownSync, constants, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  DEFAULT_CODE_SANDBOX_LIMITS,
  type CodeIsolation,
  type CodeRunResult,
  type CodeSandbox,
  type CodeSandboxEpisode,
  type CodeSandboxInfo,
  type CodeSandboxLimits,
} from '../../app/tools/codeSandbox';
import { sandboxWorkerPy } from '../../app/paths';

export const WORKER_PY = sandboxWorkerPy();
/** The Python the references ran against: the system one, with Debian's Pillow, numpy and matplotlib. */
export const DEFAULT_PYTHON = '/usr/bin/python3';
const NOBODY = 65534;

export class SandboxUnavailableError extends Error {}

export interface PySandboxOptions {
  python?: string;
  limits?: Partial<CodeSandboxLimits>;
  /** Run without namespaces when bubblewrap is unavailable (the manifest records `isolation: none`). */
  allowUnisolated?: boolean;
  /** Force a method (tests); default: bwrap when it works. */
  isolation?: CodeIsolation;
  /** Where episode folders go (default: the OS temp dir). */
  workRoot?: string;
}

function onPath(cmd: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

const runAsNobody = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** The read-only system view every sandbox gets (paths that do not exist are skipped by `-try`). */
function systemBinds(python: string): string[] {
  const args = ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin'];
  for (const f of ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/fonts', '/etc/matplotlibrc', '/etc/localtime']) {
    args.push('--ro-bind-try', f, f);
  }
  if (!python.startsWith('/usr/')) {
    // A Python outside /usr (a venv, pyenv): make its install prefix visible, read-only.
    const prefix = path.dirname(path.dirname(python));
    args.push('--ro-bind', prefix, prefix);
  }
  return args;
}

export interface IsolationProbe {
  ok: boolean;
  method: CodeIsolation;
  reason?: string;
}

/** Whether bubblewrap can create the namespaces here (cached per process). */
let probeCache: IsolationProbe | null = null;
export function probeIsolation(): IsolationProbe {
  if (probeCache) return probeCache;
  const bwrap = onPath('bwrap');
  if (!bwrap) {
    probeCache = { ok: false, method: 'none', reason: 'bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap)' };
    return probeCache;
  }
  const r = spawnSync(bwrap, ['--unshare-all', '--die-with-parent', ...systemBinds(DEFAULT_PYTHON), '--proc', '/proc', '--dev', '/dev', '/usr/bin/true'], {
    encoding: 'utf8',
    timeout: 10_000,
    ...(runAsNobody() ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  probeCache =
    r.status === 0
      ? { ok: true, method: 'bwrap' }
      : { ok: false, method: 'none', reason: `bubblewrap cannot create namespaces here (${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}); enable unprivileged user namespaces` };
  return probeCache;
}

interface Pending {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: Error) => void;
}

/** One episode's sandbox. Create with {@link startPySandbox}. */
export class PySandbox implements CodeSandbox {
  readonly info: CodeSandboxInfo;
  private proc: ChildProcess | null = null;
  private pending: Pending | null = null;
  private buffer = '';
  private stderrTail = '';
  private closed = false;
  private needsRestart = false;
  private runs = 0;

  constructor(
    private readonly episode: CodeSandboxEpisode,
    private readonly dir: string,
    info: CodeSandboxInfo,
  ) {
    this.info = info;
  }

  private get sandboxed(): boolean {
    return this.info.isolation === 'bwrap';
  }
  private imagesIn(): string[] {
    return this.episode.images.map((p, i) => (this.sandboxed ? `/episode/images/image_${i}${path.extname(p)}` : path.join(this.dir, 'images', `image_${i}${path.extname(p)}`)));
  }
  private scratchIn(): string {
    return this.sandboxed ? '/episode/scratch' : path.join(this.dir, 'scratch');
  }
  /** Host path of a file the worker named by its in-sandbox path. */
  private hostPath(p: string): string {
    return this.sandboxed ? path.join(this.dir, 'scratch', path.relative('/episode/scratch', p)) : p;
  }

  /** Start (or restart) the worker and initialise the episode's runtime. */
  async boot(): Promise<void> {
    const env: NodeJS.ProcessEnv = {
      PATH: '/usr/bin:/bin',
      HOME: this.scratchIn(),
      MPLCONFIGDIR: `${this.scratchIn()}/.matplotlib`,
      MPLBACKEND: 'Agg',
      OPENBLAS_NUM_THREADS: '1',
      OMP_NUM_THREADS: '1',
      LOUPE_PROTO_FD: '3',
      LANG: 'C.UTF-8',
    };
    const py = this.info.python;
    let cmd: string;
    let args: string[];
    if (this.sandboxed) {
      cmd = onPath('bwrap')!;
      args = [
        '--unshare-all',
        '--die-with-parent',
        '--new-session',
        ...systemBinds(py),
        '--proc', '/proc',
        '--dev', '/dev',
        '--ro-bind', path.join(this.dir, 'images'), '/episode/images',
        '--bind', path.join(this.dir, 'scratch'), '/episode/scratch',
        '--ro-bind', WORKER_PY, '/loupe/worker.py',
        '--chdir', '/episode/scratch',
        '--remount-ro', '/',
        py, '-I', '/loupe/worker.py',
      ];
    } else {
      cmd = py;
      args = ['-I', WORKER_PY];
    }
    const proc = spawn(cmd, args, {
      env,
      cwd: this.sandboxed ? '/' : path.join(this.dir, 'scratch'),
      stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
      detached: true,
      ...(this.sandboxed && runAsNobody() ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    this.proc = proc;
    this.buffer = '';
    this.stderrTail = '';
    proc.stderr!.setEncoding('utf8');
    proc.stderr!.on('data', (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-4000);
    });
    const proto = proc.stdio[3] as Readable;
    proto.setEncoding('utf8');
    proto.on('data', (d: string) => {
      if (this.proc !== proc) return; // a killed worker's last words
      this.buffer += d;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        const p = this.pending;
        this.pending = null;
        try {
          p?.resolve(JSON.parse(line) as Record<string, unknown>);
        } catch (e) {
          p?.reject(new Error(`sandbox worker sent a bad reply: ${(e as Error).message}`));
        }
      }
    });
    proc.on('exit', (code, sig) => {
      if (this.proc !== proc) return; // killed on purpose; its run was already answered
      this.proc = null;
      const p = this.pending;
      this.pending = null;
      p?.reject(new WorkerExit(`sandbox worker exited (${sig ?? `code ${code}`})${this.stderrTail ? `: ${this.stderrTail.trim().split('\n').slice(-3).join(' | ')}` : ''}`));
    });
    proc.on('error', (e) => {
      if (this.proc !== proc) return;
      const p = this.pending;
      this.pending = null;
      p?.reject(e);
    });
    const r = await this.request({ op: 'init', variant: this.episode.variant, images: this.imagesIn(), scratch: this.scratchIn(), limits: { ...this.info.limits, sandboxed: this.sandboxed } }, 60_000);
    if (r.ok !== true) throw new Error(`sandbox worker failed to start: ${String(r.error)}`);
    (this.info as { pythonVersion: string }).pythonVersion = String(r.python ?? '');
    this.needsRestart = false;
  }

  private request(msg: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    const proc = this.proc;
    if (!proc) return Promise.reject(new WorkerExit('sandbox worker is not running'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = null;
        reject(new WallTimeout());
      }, timeoutMs);
      this.pending = {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      (proc.stdin as Writable).write(`${JSON.stringify(msg)}\n`);
    });
  }

  /** Kill the whole process group (bwrap, the namespace init, Python and anything it forked). */
  private kill(): void {
    const proc = this.proc;
    this.proc = null;
    if (proc?.pid) {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  async run(source: string): Promise<CodeRunResult> {
    if (this.closed) throw new Error('the sandbox is closed');
    let restartedBefore = false;
    if (!this.proc || this.needsRestart) {
      if (this.runs > 0) restartedBefore = true;
      await this.boot();
    }
    this.runs++;
    const t0 = performance.now();
    const base = { figures: [], numFigures: 0, undecodableFigures: [], stdout: '', stdoutChars: 0, cpuMs: null, errorType: null, error: null };
    try {
      const r = await this.request({ op: 'exec', source }, this.info.limits.wallSeconds * 1000);
      if (r.ok !== true) throw new Error(`sandbox worker error: ${String(r.error)}`);
      const figures = (r.figures as string[]).map((p) => this.hostPath(p));
      const limitsHit: string[] = [];
      if (r.timeout === true) limitsHit.push(r.timeoutReason === 'cpu' ? 'cpu' : 'exit');
      if (r.outputTruncated === true) limitsHit.push('output');
      if (r.figureLimitHit === true || String(r.error ?? '').startsWith('Too many figures')) limitsHit.push('figures');
      if (r.errorType === 'MemoryError') limitsHit.push('memory');
      if (r.errorType === 'BlockingIOError' && String(r.error).includes('Resource temporarily unavailable')) limitsHit.push('processes');
      return {
        stdout: String(r.stdout ?? ''),
        numFigures: figures.length,
        undecodableFigures: (r.undecodableFigures as number[]) ?? [],
        error: (r.error as string | null) ?? null,
        errorType: (r.errorType as string | null) ?? null,
        timeout: r.timeout === true,
        timeoutReason: (r.timeoutReason as string | null) ?? null,
        figures,
        limitsHit,
        wallMs: performance.now() - t0,
        cpuMs: typeof r.cpuMs === 'number' ? r.cpuMs : null,
        stdoutChars: Number(r.stdoutChars ?? 0),
        restarted: restartedBefore,
      };
    } catch (e) {
      // Wall time, or the worker died (killed by a limit such as the hard CPU limit, or a crash):
      // the reference's parent saw neither a result nor an error, only its queue timeout.
      this.kill();
      this.needsRestart = true;
      const reason = e instanceof WallTimeout ? 'wall' : e instanceof WorkerExit ? 'worker-exit' : 'error';
      if (reason === 'error') throw e;
      return { ...base, timeout: true, timeoutReason: reason === 'wall' ? 'wall' : (e as Error).message, limitsHit: [reason === 'wall' ? 'wall' : 'exit'], wallMs: performance.now() - t0, restarted: restartedBefore };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const p = this.pending;
    this.pending = null;
    p?.reject(new WorkerExit('sandbox closed'));
    this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Host path of the episode's scratch folder (figures live here until `close`). */
  get scratchDir(): string {
    return path.join(this.dir, 'scratch');
  }
}

class WallTimeout extends Error {}
class WorkerExit extends Error {}

/**
 * Start a sandbox for one episode: copies the images into a fresh episode folder and starts the worker.
 * Throws {@link SandboxUnavailableError} when no isolation is available and `allowUnisolated` is off.
 */
export async function startPySandbox(episode: CodeSandboxEpisode, opts: PySandboxOptions = {}): Promise<PySandbox> {
  const python = opts.python ?? DEFAULT_PYTHON;
  let isolation: CodeIsolation = opts.isolation ?? 'bwrap';
  if (isolation === 'bwrap') {
    const probe = probeIsolation();
    if (!probe.ok) {
      if (!opts.allowUnisolated) {
        throw new SandboxUnavailableError(
          `Refusing to run model-written code without isolation: ${probe.reason}. ` + 'Pass --allow-unisolated-code (or allowUnisolated: true) to run it with resource limits only.',
        );
      }
      isolation = 'none';
    }
  } else if (!opts.allowUnisolated) {
    throw new SandboxUnavailableError('Refusing to run model-written code without isolation unless allowUnisolated is set.');
  }
  const limits: CodeSandboxLimits = { ...DEFAULT_CODE_SANDBOX_LIMITS, ...opts.limits };
  for (const [k, v] of Object.entries(limits)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new Error(`sandbox limit ${k} must be a positive number, got ${String(v)}`);
  }
  const dir = mkdtempSync(path.join(opts.workRoot ?? tmpdir(), 'loupe-pysandbox-'));
  chmodSync(dir, 0o755);
  mkdirSync(path.join(dir, 'images'), { mode: 0o755 });
  mkdirSync(path.join(dir, 'scratch'), { mode: 0o755 });
  episode.images.forEach((p, i) => {
    const dst = path.join(dir, 'images', `image_${i}${path.extname(p)}`);
    copyFileSync(p, dst);
    chmodSync(dst, 0o444);
  });
  if (isolation === 'bwrap' && runAsNobody()) chownSync(path.join(dir, 'scratch'), NOBODY, NOBODY);
  const sb = new PySandbox(episode, dir, { isolation, python, pythonVersion: '', limits });
  try {
    await sb.boot();
  } catch (e) {
    await sb.close();
    throw e;
  }
  return sb;
}

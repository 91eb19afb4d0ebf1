/**
 * The served-engine launcher: starts an OpenAI-compatible server (vLLM, SGLang, `transformers serve`,
 * `loupe serve-model`) for a model folder — as a child process here, or as a Slurm job reached through an SSH
 * tunnel — checks its health, keeps its log, reports its state, and stops it (the Slurm job is cancelled).
 * Once ready, the Demo and sweeps use it like any OpenAI-compatible engine (`engine()`).
 *
 * The command is an argv array from `renderServedCommand` (never a shell string); in a job script every word is
 * quoted. The API key never appears in argv or a script: a child gets it in its environment, a job through the
 * connector's secret environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { SlurmSshConnector } from '../../connectors/slurm';
import type { SshTunnel } from '../../connectors/ssh';
import { isTerminal, type FollowHandle, type JobResources, type JobStatus } from '../../connectors/types';
import { OpenAIEngine, type OpenAIEngineOptions } from '../openai/openaiEngine';
import { readFile } from 'node:fs/promises';
import { shq } from '../../connectors/ssh';
import type { LoupeNode } from './loupeNode';
import { checkPreprocessorBounds, parseServedSpec, ServedSpecError, renderServedCommand, shellLine, type ServedBackend, type ServedEngineSpec, type ServedEngineSpecInput } from './commands';
import { sleep } from '../../sleep';

export type ServedStatus = 'starting' | 'ready' | 'error' | 'stopped';

/** What the status bar and the engine list show of one served engine. */
export interface ServedEngineState {
  id: string;
  backend: ServedBackend;
  model: string;
  /** 'in-app': backend loupe served inside the core (no Node to run `loupe serve-model` inside Electron). */
  where: 'local' | 'slurm' | 'in-app';
  status: ServedStatus;
  /** The base URL this machine reaches it at (`http://127.0.0.1:PORT/v1`; the tunnel's end for Slurm). */
  baseURL?: string;
  /** A sentence a user can act on (why it failed, what it waits for). */
  message?: string;
  jobId?: string;
  node?: string;
  pid?: number;
  startedAt: number;
}

/** Where the server runs. */
export type ServedPlacement =
  | { kind: 'local' }
  | {
      kind: 'slurm';
      connector: SlurmSshConnector;
      resources?: JobResources;
      /** Working directory of the job on the cluster. */
      cwd?: string;
    };

export interface ServedStartOptions {
  /** Bearer key the server requires (default: a fresh random one). */
  apiKey?: string;
  /** Give up when not healthy after this long (default 15 min: a 7B on a busy queue). */
  readyTimeoutMs?: number;
  /** Health check period once ready (default 3 s); three failures in a row = error. */
  healthEveryMs?: number;
}

/**
 * Serve backend loupe inside this process: `loupe serve-model`'s own server (app/engines/serve) over the core's
 * engines, bound to spec.host:spec.port with `apiKey`. Resolves once it listens (the model loaded).
 */
export type InAppServe = (spec: ServedEngineSpec, apiKey: string) => Promise<{ url: string; detail: string; close(): Promise<void> }>;

export interface ServedLauncherOptions {
  /** `node` and the `loupe` entry for backend `loupe` (default: this Node and bin/loupe.mjs next to the app). */
  node?: string;
  loupeBin?: string;
  /**
   * Without `node`: which Node runs backend `loupe` on this machine when no Command is given, asked at each start
   * (the core passes `resolveLoupeNode`: this Node, or inside Electron LOUPE_NODE / a Node on PATH). A refusal is the
   * start's error, before anything is spawned.
   */
  resolveNode?: () => LoupeNode;
  /** When `resolveNode` finds no Node (and LOUPE_NODE is not set wrong): serve backend loupe in-app instead. */
  inApp?: InAppServe;
  onEvent?: (s: ServedEngineState) => void;
  onLog?: (id: string, line: string) => void;
  /** Lines of log kept per engine (default 2000). */
  logLines?: number;
}


/** A free TCP port on 127.0.0.1 (the OS picks; a tiny race until the server binds is accepted). */
export function freeLocalPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** One served engine. `ready` resolves with the state once healthy, or rejects with a clear Error. */
export class ServedEngine {
  readonly id: string;
  readonly spec: ServedEngineSpec;
  readonly apiKey: string | undefined;
  readonly log: string[] = [];
  ready!: Promise<ServedEngineState>;
  private st: ServedEngineState;
  private stopping = false;
  private child: ChildProcess | null = null;
  private inApp: { close(): Promise<void> } | null = null;
  private tunnel: SshTunnel | null = null;
  private follow: FollowHandle | null = null;
  private monitor: NodeJS.Timeout | null = null;
  private partial = '';
  private lastHealthError = '';
  private listeners = new Set<(s: ServedEngineState) => void>();

  constructor(
    spec: ServedEngineSpec,
    readonly placement: ServedPlacement,
    private readonly opts: ServedStartOptions & { node: string; loupeBin: string; logLines: number; inApp?: boolean; onEvent?: (s: ServedEngineState) => void; onLog?: (id: string, line: string) => void },
  ) {
    this.spec = spec;
    this.id = `${spec.modelName}@${placement.kind}-${randomBytes(3).toString('hex')}`;
    const cmd = renderServedCommand(spec, { node: opts.node, loupeBin: opts.loupeBin });
    this.apiKey = cmd.apiKeyEnv ? (opts.apiKey ?? randomBytes(24).toString('hex')) : undefined;
    this.st = { id: this.id, backend: spec.backend, model: spec.modelName, where: opts.inApp ? 'in-app' : placement.kind, status: 'starting', startedAt: Date.now(), message: 'starting' };
  }

  state(): ServedEngineState {
    return { ...this.st };
  }

  /** Follow state changes (the status bar); returns a disposer. */
  onState(cb: (s: ServedEngineState) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** The engine the Demo and sweeps use: the OpenAI-compatible client over this server. */
  engine(over: Partial<OpenAIEngineOptions> = {}): OpenAIEngine {
    if (this.st.status !== 'ready' || !this.st.baseURL) throw new Error(`served engine ${this.id} is ${this.st.status}${this.st.message ? `: ${this.st.message}` : ''}`);
    return new OpenAIEngine({ baseURL: this.st.baseURL, model: this.spec.modelName, ...(this.apiKey ? { apiKey: this.apiKey } : {}), ...over });
  }

  private set(patch: Partial<ServedEngineState>): void {
    if (this.stopping) return;
    this.st = { ...this.st, ...patch };
    if (patch.status !== undefined && patch.status !== 'error' && patch.message === undefined) delete this.st.message;
    const s = this.state();
    this.opts.onEvent?.(s);
    for (const l of this.listeners) l(s);
  }

  private addText(text: string, final = false): void {
    const all = this.partial + text;
    const lines = all.split('\n');
    this.partial = final ? '' : (lines.pop() ?? '');
    for (const raw of lines) {
      const line = raw.replace(/\r$/, '');
      if (final && !line) continue;
      this.log.push(line);
      if (this.log.length > this.opts.logLines) this.log.splice(0, this.log.length - this.opts.logLines);
      this.opts.onLog?.(this.id, line);
      this.onLine(line);
    }
  }

  private lineWaiter: ((line: string) => void) | null = null;
  private onLine(line: string): void {
    this.lineWaiter?.(line);
  }

  private fail(message: string): void {
    if (this.stopping || this.st.status === 'stopped') return;
    this.stopMonitor();
    this.set({ status: 'error', message });
  }

  private tail(n = 5): string {
    const t = this.log.slice(-n).join(' | ');
    return t ? ` Last log lines: ${t}` : '';
  }

  /** GET /v1/models with the key; ok when the model is listed. */
  async health(timeoutMs = 5000): Promise<boolean> {
    const url = this.st.baseURL;
    if (!url) return false;
    try {
      const res = await fetch(`${url}/models`, { headers: this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
      if (res.status !== 200) {
        this.lastHealthError = `GET ${url}/models answered ${res.status}`;
        await res.body?.cancel();
        return false;
      }
      const body = (await res.json()) as { data?: Array<{ id?: string }> };
      if (!body.data?.some((m) => m.id === this.spec.modelName)) {
        this.lastHealthError = `the server does not list model ${this.spec.modelName}`;
        return false;
      }
      return true;
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      this.lastHealthError = `GET ${url}/models failed: ${cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e))}${this.tunnel?.lastError ? ` (tunnel: ${this.tunnel.lastError})` : ''}`;
      return false;
    }
  }

  /** Wait until healthy, the deadline, or `gone()` says the server cannot come any more. */
  private async waitHealthy(gone: () => string | null): Promise<void> {
    const deadline = Date.now() + (this.opts.readyTimeoutMs ?? 15 * 60_000);
    for (;;) {
      const why = gone();
      if (why) throw new Error(why);
      if (await this.health(3000)) return;
      if (Date.now() > deadline) throw new Error(`no healthy answer within ${Math.round((this.opts.readyTimeoutMs ?? 15 * 60_000) / 1000)} s (${this.lastHealthError}).${this.tail()}`);
      await sleep(500);
    }
  }

  private startMonitor(extra: () => string | null): void {
    let misses = 0;
    const every = this.opts.healthEveryMs ?? 3000;
    const tick = async (): Promise<void> => {
      if (this.stopping || this.st.status !== 'ready') return;
      const why = extra();
      if (why) return this.fail(why);
      const ok = await this.health(Math.max(2000, every));
      if (this.stopping || this.st.status !== 'ready') return;
      misses = ok ? 0 : misses + 1;
      if (!ok && this.placement.kind === 'slurm' && this.st.jobId) {
        // A missed check on a cluster: ask Slurm at once, so a cancelled or failed job is named as such.
        const js = await this.placement.connector.status(this.st.jobId).catch(() => null);
        if (js && isTerminal(js.state)) return this.fail(`Slurm job ${js.id} ended (${js.rawState}${js.exitCode !== undefined && js.exitCode !== null ? `, exit ${js.exitCode}` : ''})${js.message ? `: ${js.message}` : ''}`);
      }
      if (this.stopping || this.st.status !== 'ready') return;
      if (misses >= 3) return this.fail(`the server stopped answering (${this.lastHealthError})`);
      this.monitor = setTimeout(() => void tick(), every);
    };
    this.monitor = setTimeout(() => void tick(), every);
  }

  private stopMonitor(): void {
    if (this.monitor) clearTimeout(this.monitor);
    this.monitor = null;
  }

  /** SGLang and transformers serve read MIN/MAX_PIXELS from the folder: refuse a folder whose bounds differ. */
  private async checkFolderBounds(read: (file: string) => Promise<string>): Promise<void> {
    if ((this.spec.backend !== 'sglang' && this.spec.backend !== 'transformers') || this.spec.allowPixelMismatch) return;
    const file = `${this.spec.modelDir.replace(/[\\/]+$/, '')}/preprocessor_config.json`;
    let text: string;
    try {
      text = await read(file);
    } catch (e) {
      throw new Error(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const why = checkPreprocessorBounds(text, this.spec);
    if (why) throw new Error(`${file}: ${why}`);
  }

  /** Local: a child process in its own process group (so stop ends its workers too). */
  async startLocal(): Promise<void> {
    await this.checkFolderBounds((f) => readFile(f, 'utf8'));
    const cmd = renderServedCommand(this.spec, { node: this.opts.node, loupeBin: this.opts.loupeBin });
    const env: NodeJS.ProcessEnv = { ...process.env, ...cmd.env };
    if (cmd.apiKeyEnv && this.apiKey) env[cmd.apiKeyEnv] = this.apiKey;
    this.addText(`$ ${shellLine(cmd.argv)}\n`);
    const child = spawn(cmd.argv[0]!, cmd.argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32' });
    this.child = child;
    let exited: string | null = null;
    child.stdout!.on('data', (d: Buffer) => this.addText(d.toString('utf8')));
    child.stderr!.on('data', (d: Buffer) => this.addText(d.toString('utf8')));
    child.on('error', (e) => {
      exited = `could not start ${cmd.argv[0]}: ${e.message} (is ${this.spec.backend} installed on this machine?)`;
      this.fail(exited);
    });
    child.on('exit', (code, signal) => {
      this.addText('', true);
      exited = `the server process exited (${signal ? `signal ${signal}` : `code ${code}`}).${this.tail()}`;
      this.fail(exited);
    });
    this.set({ status: 'starting', baseURL: `http://127.0.0.1:${this.spec.port}/v1`, ...(child.pid ? { pid: child.pid } : {}), message: `loading ${this.spec.modelDir}` });
    await this.waitHealthy(() => exited);
    this.set({ status: 'ready' });
    this.startMonitor(() => exited);
  }

  /** Slurm: submit the server as a job, wait for it to run and print where it listens, then tunnel to it. */
  async startSlurm(p: Extract<ServedPlacement, { kind: 'slurm' }>): Promise<void> {
    await this.checkFolderBounds(async (f) => {
      const r = await p.connector.ssh.exec(`cat ${shq(f)}`, { timeoutMs: 30_000 });
      if (r.code !== 0) throw new Error(r.stderr.trim() || `exit ${r.code}`);
      return r.stdout.toString('utf8');
    });
    const cmd = renderServedCommand(this.spec, { node: this.opts.node, loupeBin: this.opts.loupeBin });
    const script = [
      '#!/bin/bash',
      // The first line tells Loupe where to tunnel to; the server replaces the shell (scancel reaches it directly).
      `echo "LOUPE_SERVED node=$(hostname) port=${this.spec.port}"`,
      ...Object.entries(cmd.env).map(([k, v]) => `export ${k}=${shellLine([v])}`),
      `exec ${shellLine(cmd.argv)}`,
    ].join('\n');
    const secretEnv = cmd.apiKeyEnv && this.apiKey ? { [cmd.apiKeyEnv]: this.apiKey } : undefined;
    const name = `loupe-serve-${this.spec.modelName}`.slice(0, 64);
    this.addText(`$ ${shellLine(cmd.argv)}   (Slurm job ${name})\n`);
    const sub = await p.connector.submit({ name, script, ...(secretEnv ? { secretEnv } : {}), ...(p.cwd ? { cwd: p.cwd } : {}), ...(p.resources ? { resources: p.resources } : {}) });
    this.set({ status: 'starting', jobId: sub.id, message: `Slurm job ${sub.id} submitted` });
    let node: string | null = null;
    let ended: string | null = null;
    let last: JobStatus | null = null;
    this.lineWaiter = (line) => {
      const m = /^LOUPE_SERVED node=(\S+) port=(\d+)$/.exec(line);
      if (m) node = m[1]!;
    };
    this.follow = p.connector.follow(sub.id, {
      pollMs: 1000,
      onText: (t) => this.addText(t),
      onStatus: (s) => {
        last = s;
        if (s.state === 'pending' && this.st.status === 'starting') this.set({ message: `Slurm job ${sub.id} is waiting${s.message ? ` (${s.message})` : ''}` });
        if (s.state === 'running' && this.st.status === 'starting') this.set({ message: `Slurm job ${sub.id} is running; loading the model` });
      },
      onWarning: (w) => this.addText(`[loupe] ${w}\n`),
    });
    void this.follow.done.then((r) => {
      this.addText('', true);
      const s = r.status;
      ended =
        r.reason === 'error'
          ? `lost track of Slurm job ${sub.id}: ${r.error?.message ?? 'connection failed'}`
          : `Slurm job ${sub.id} ended (${s.rawState || s.state}${s.exitCode !== undefined && s.exitCode !== null ? `, exit ${s.exitCode}` : ''})${s.message ? `: ${s.message}` : ''}`;
      if (r.reason !== 'disposed') this.fail(`${ended}.${this.tail()}`);
    });
    // Where is it? Wait for the job's first line.
    const deadline = Date.now() + (this.opts.readyTimeoutMs ?? 15 * 60_000);
    while (!node) {
      if (ended) throw new Error(`${ended}.${this.tail()}`);
      if (this.stopping) throw new Error('stopped before the server started');
      if (Date.now() > deadline) throw new Error(`Slurm job ${sub.id} did not start within the deadline (${(last as JobStatus | null)?.rawState ?? 'no status yet'})`);
      await sleep(300);
    }
    // Bound to 127.0.0.1: only reachable from the node itself, i.e. when the SSH host is that node.
    const target = this.spec.host === '127.0.0.1' ? '127.0.0.1' : node;
    this.tunnel = await p.connector.ssh.forwardLocal(target, this.spec.port);
    this.tunnel.onClose(() => this.fail(`the SSH tunnel to ${target}:${this.spec.port} was closed`));
    this.set({ node, baseURL: `http://127.0.0.1:${this.tunnel.localPort}/v1`, message: `tunnel 127.0.0.1:${this.tunnel.localPort} → ${node} ${target}:${this.spec.port}; loading the model` });
    await this.waitHealthy(() => (ended ? `${ended}.${this.tail()}` : this.tunnel?.closed ? 'the SSH tunnel was closed' : this.stopping ? 'stopped' : null));
    this.set({ status: 'ready' });
    this.startMonitor(() => ended);
  }

  /**
   * Stop the server: end the process group, or close the tunnel and cancel the job. Idempotent. `failed` keeps the
   * engine in state error with that message (a start that failed is cleaned up, not reported as a clean stop).
   */
  /** Backend loupe inside the core: the same server `loupe serve-model` runs, the same states, health, log and stop. */
  async startInApp(serve: InAppServe): Promise<void> {
    const s = this.spec;
    this.addText(`$ (in the app) loupe serve-model ${shellLine([s.modelDir])} --host ${s.host} --port ${s.port} --device ${s.device} --dtype ${shellLine([s.dtype])} --name ${s.modelName}${s.threads !== undefined ? ` --threads ${s.threads}` : ''}\n`);
    this.set({ status: 'starting', baseURL: `http://${s.host === '0.0.0.0' ? '127.0.0.1' : s.host}:${s.port}/v1`, message: `loading ${s.modelDir} in the app` });
    const h = await serve(s, this.apiKey!);
    if (this.stopping) {
      await h.close();
      throw new Error('stopped while loading');
    }
    this.inApp = h;
    this.addText(`serving ${h.detail} at ${h.url}\n`);
    await this.waitHealthy(() => null);
    this.set({ status: 'ready' });
    this.startMonitor(() => null);
  }

  async stop(failed?: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopMonitor();
    const errors: string[] = [];
    if (this.inApp) {
      const h = this.inApp;
      this.inApp = null;
      await h.close().catch((e: unknown) => errors.push(`closing the in-app server: ${e instanceof Error ? e.message : String(e)}`));
    }
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      const child = this.child;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      const kill = (sig: NodeJS.Signals) => {
        try {
          if (child.pid && process.platform !== 'win32') process.kill(-child.pid, sig);
          else child.kill(sig);
        } catch {
          /* already gone */
        }
      };
      kill('SIGTERM');
      const t = setTimeout(() => kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(t);
    }
    // The server's own children (loupe serve-model's engine process) share its group: end any left behind.
    if (this.child?.pid && process.platform !== 'win32') {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        /* none left */
      }
    }
    await this.tunnel?.close();
    this.follow?.dispose();
    if (this.placement.kind === 'slurm' && this.st.jobId) {
      try {
        await this.placement.connector.cancel(this.st.jobId);
      } catch (e) {
        // An unknown job is already gone; anything else is said, not swallowed.
        if ((e as { code?: string }).code !== 'not-found') errors.push(`could not cancel Slurm job ${this.st.jobId}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    // An engine that had already failed keeps its reason: stopping it is clean-up, not a clean stop.
    const prior = this.st.status === 'error' ? this.st.message : undefined;
    const reason = failed ?? prior;
    const message = [reason, ...errors].filter(Boolean).join('; ') || 'stopped';
    this.st = { ...this.st, status: reason ? 'error' : 'stopped', message };
    const s = this.state();
    this.opts.onEvent?.(s);
    for (const l of this.listeners) l(s);
  }
}

/** Starts served engines and keeps the list (one owner: the core builds one; `stopAll` on quit). */
export class ServedEngineLauncher {
  private readonly engines = new Map<string, ServedEngine>();
  constructor(private readonly o: ServedLauncherOptions = {}) {}

  /**
   * Validate and start. Returns at once with the engine (state `starting`); await `engine.ready`. A port left out is
   * chosen: a free local one, or a random high one on the node (a clash fails the job and says so).
   */
  start(input: Omit<ServedEngineSpecInput, 'port'> & { port?: number }, placement: ServedPlacement, opts: ServedStartOptions = {}): ServedEngine {
    const port = input.port ?? (placement.kind === 'slurm' ? 20000 + Math.floor(Math.random() * 40000) : -1);
    const spec = parseServedSpec({ ...input, port: port === -1 ? 65535 : port });
    let node = this.o.node;
    let inApp: InAppServe | undefined;
    if (node === undefined && this.o.resolveNode && placement.kind === 'local' && spec.backend === 'loupe' && !spec.launcher) {
      const r = this.o.resolveNode();
      if (r.ok) node = r.node;
      else if (this.o.inApp && !r.explicit) inApp = this.o.inApp;
      else throw new ServedSpecError(`served engine: ${r.reason}`);
    }
    const e = new ServedEngine(spec, placement, {
      ...opts,
      node: node ?? process.execPath,
      loupeBin: this.o.loupeBin ?? 'loupe',
      logLines: this.o.logLines ?? 2000,
      ...(inApp ? { inApp: true } : {}),
      ...(this.o.onEvent ? { onEvent: this.o.onEvent } : {}),
      ...(this.o.onLog ? { onLog: this.o.onLog } : {}),
    });
    this.engines.set(e.id, e);
    e.ready = (async () => {
      try {
        if (placement.kind === 'local') {
          if (port === -1) (e.spec as { port: number }).port = await freeLocalPort();
          if (inApp) await e.startInApp(inApp);
          else await e.startLocal();
        } else {
          await e.startSlurm(placement);
        }
        return e.state();
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err);
        // A server that never became healthy is not left running (nor its job queued).
        if (e.state().status !== 'stopped') await e.stop(msg).catch(() => undefined);
        throw new Error(`served engine ${e.id}: ${msg}`);
      }
    })();
    e.ready.catch(() => undefined);
    return e;
  }

  get(id: string): ServedEngine | undefined {
    return this.engines.get(id);
  }

  list(): ServedEngineState[] {
    return [...this.engines.values()].map((e) => e.state());
  }

  /** Unload one: stop it and forget it. */
  async stop(id: string): Promise<boolean> {
    const e = this.engines.get(id);
    if (!e) return false;
    await e.stop();
    this.engines.delete(id);
    return true;
  }

  /** The app quits: every server ends, every job is cancelled. */
  async stopAll(): Promise<void> {
    const all = [...this.engines.values()];
    this.engines.clear();
    await Promise.allSettled(all.map((e) => e.stop()));
  }
}

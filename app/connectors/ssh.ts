/**
 * A small SSH command runner over the pure-JS `ssh2` client: lazy connect, host-key check against known_hosts text,
 * reconnect on the next command after a drop, and errors mapped to ConnectorError codes.
 */
import { createHmac } from 'node:crypto';
import net from 'node:net';
import { Client, type ClientChannel } from 'ssh2';
import { ConnectorError } from './types';

export interface SshOptions {
  host: string;
  port?: number;
  username: string;
  /** Private key text (OpenSSH or PEM). Comes from the SecretStore; never logged. */
  privateKey: string | Buffer;
  passphrase?: string;
  /** Contents of a known_hosts file. Required unless `acceptAnyHostKey`. */
  knownHosts?: string;
  /** Skip host-key verification (tests against throwaway servers only). */
  acceptAnyHostKey?: boolean;
  /** Handshake timeout in ms (default 10000). */
  readyTimeoutMs?: number;
  /** Keepalive in ms (default 5000; 3 missed → connection considered lost). */
  keepaliveMs?: number;
}

export interface ExecResult {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  signal?: string;
}

/** Shell-quote one argument for a POSIX shell. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Does a known_hosts text contain `keyBlob` for host:port? Supports plain, `[host]:port` and hashed (`|1|`) names. */
export function knownHostsMatch(knownHosts: string, host: string, port: number, keyBlob: Buffer): 'match' | 'mismatch' | 'absent' {
  const names = port === 22 ? [host] : [`[${host}]:${port}`];
  let sawHost = false;
  for (const raw of knownHosts.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const parts = line.split(/\s+/);
    let i = 0;
    if (parts[0]?.startsWith('@')) i = 1; // @cert-authority / @revoked markers: treat @revoked as no match
    if (parts[0] === '@revoked' || parts[0] === '@cert-authority') continue;
    const hostField = parts[i];
    const keyB64 = parts[i + 2];
    if (!hostField || !keyB64) continue;
    const hit = hostField.split(',').some((pat) => {
      if (pat.startsWith('|1|')) {
        const [, , salt, hash] = pat.split('|');
        if (!salt || !hash) return false;
        return names.some((n) => createHmac('sha1', Buffer.from(salt, 'base64')).update(n).digest('base64') === hash);
      }
      return names.includes(pat);
    });
    if (!hit) continue;
    sawHost = true;
    if (Buffer.from(keyB64, 'base64').equals(keyBlob)) return 'match';
  }
  return sawHost ? 'mismatch' : 'absent';
}

/** A running local port forward. */
export interface SshTunnel {
  /** The local port on 127.0.0.1. */
  readonly localPort: number;
  /** host:port as the SSH server reaches it. */
  readonly target: string;
  readonly closed: boolean;
  /** Why the last forwarded connection failed (SSH down, nothing listening on the target), if one did. */
  readonly lastError: string | undefined;
  close(): Promise<void>;
  onClose(handler: (why: string) => void): void;
}

export class SshSession {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private hostKeyProblem: ConnectorError | null = null;
  private readonly where: string;
  /** Number of TCP connections opened (reconnects show up here). */
  connects = 0;
  constructor(private readonly opts: SshOptions) {
    this.where = `ssh ${opts.username}@${opts.host}:${opts.port ?? 22}`;
    if (!opts.knownHosts && !opts.acceptAnyHostKey) {
      throw new ConnectorError('host-key', this.where, 'no known_hosts text given; add the host key (ssh-keyscan -p PORT HOST) or set acceptAnyHostKey for a throwaway test server');
    }
  }

  private connect(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    if (this.connecting) return this.connecting;
    const port = this.opts.port ?? 22;
    this.connecting = new Promise<Client>((resolve, reject) => {
      const c = new Client();
      this.hostKeyProblem = null;
      let settled = false;
      c.on('ready', () => {
        settled = true;
        this.client = c;
        this.connects += 1;
        resolve(c);
      });
      c.on('error', (err: Error & { code?: string; level?: string }) => {
        this.client = null;
        if (settled) return;
        settled = true;
        reject(this.mapConnectError(err));
      });
      c.on('close', () => {
        if (this.client === c) this.client = null;
        if (!settled) {
          settled = true;
          reject(this.hostKeyProblem ?? new ConnectorError('connection-lost', this.where, 'connection closed during the handshake'));
        }
      });
      c.connect({
        host: this.opts.host,
        port,
        username: this.opts.username,
        privateKey: this.opts.privateKey,
        ...(this.opts.passphrase ? { passphrase: this.opts.passphrase } : {}),
        readyTimeout: this.opts.readyTimeoutMs ?? 10_000,
        keepaliveInterval: this.opts.keepaliveMs ?? 5_000,
        keepaliveCountMax: 3,
        hostVerifier: (key: Buffer) => {
          if (this.opts.acceptAnyHostKey) return true;
          const m = knownHostsMatch(this.opts.knownHosts ?? '', this.opts.host, port, key);
          if (m === 'match') return true;
          this.hostKeyProblem = new ConnectorError(
            'host-key',
            this.where,
            m === 'mismatch'
              ? 'the server host key does NOT match known_hosts (possible man-in-the-middle, or the server was reinstalled); refusing to connect'
              : `no known_hosts entry for ${port === 22 ? this.opts.host : `[${this.opts.host}]:${port}`}; add its key first`,
          );
          return false;
        },
      });
    }).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private mapConnectError(err: Error & { code?: string; level?: string }): ConnectorError {
    if (this.hostKeyProblem) return this.hostKeyProblem;
    const code = err.code ?? '';
    if (['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET'].includes(code)) {
      return new ConnectorError('unreachable', this.where, `cannot reach the SSH server (${code}); check host, port and that sshd runs`);
    }
    if (err.level === 'client-authentication' || /authentication methods failed/i.test(err.message)) {
      return new ConnectorError('auth', this.where, 'the server rejected the key (wrong key, wrong user, or the key is not in authorized_keys)');
    }
    if (err.level === 'client-timeout' || /timed out/i.test(err.message)) {
      return new ConnectorError('timeout', this.where, `no SSH handshake within ${this.opts.readyTimeoutMs ?? 10_000} ms (host down, firewall, or not an SSH server)`);
    }
    if (/private key|parse|passphrase/i.test(err.message)) {
      return new ConnectorError('auth', this.where, `the private key could not be used: ${err.message}`);
    }
    return new ConnectorError('unreachable', this.where, err.message);
  }

  /** Run a command; `stdin` is written then closed. Rejects with connection-lost when the connection drops. */
  async exec(command: string, options: { stdin?: string | Buffer; timeoutMs?: number } = {}): Promise<ExecResult> {
    const c = await this.connect();
    return new Promise<ExecResult>((resolve, reject) => {
      let finished = false;
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timer: NodeJS.Timeout | undefined;
      const onClientGone = (): void => fail(new ConnectorError('connection-lost', this.where, `connection dropped while running a command`));
      const cleanup = (): void => {
        if (timer) clearTimeout(timer);
        c.removeListener('close', onClientGone);
        c.removeListener('error', onClientGone);
      };
      const fail = (e: ConnectorError): void => {
        if (finished) return;
        finished = true;
        cleanup();
        reject(e);
      };
      c.once('close', onClientGone);
      c.once('error', onClientGone);
      if (options.timeoutMs) {
        timer = setTimeout(() => {
          fail(new ConnectorError('timeout', this.where, `command did not finish within ${options.timeoutMs} ms`));
          c.end();
        }, options.timeoutMs);
      }
      c.exec(command, (e: Error | undefined, stream: ClientChannel) => {
        if (e) {
          this.client = null;
          c.end();
          return fail(new ConnectorError('connection-lost', this.where, `could not open a channel: ${e.message}`));
        }
        // A remote command always reports exit-status or exit-signal; a channel that closes without one was cut off.
        let exit: { code: number | null; signal?: string } | null = null;
        stream.on('exit', (code: number | null, signal?: string) => {
          exit = { code: code ?? null, ...(signal ? { signal } : {}) };
        });
        stream.on('data', (d: Buffer) => out.push(d));
        stream.stderr.on('data', (d: Buffer) => err.push(d));
        stream.on('close', () => {
          if (finished) return;
          if (!exit) {
            this.client = null;
            return fail(new ConnectorError('connection-lost', this.where, 'connection dropped before the command reported its exit status'));
          }
          finished = true;
          cleanup();
          resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8'), ...exit });
        });
        if (options.stdin !== undefined) stream.end(options.stdin);
        else stream.end();
      });
    });
  }

  /**
   * A local port forward (ssh -L): a listener on 127.0.0.1:`localPort` (0 = any free port) whose connections are
   * carried over this SSH connection to `remoteHost:remotePort` as seen from the SSH server. A dropped SSH
   * connection is reopened by the next local connection; `close()` stops listening and ends the open streams.
   */
  async forwardLocal(remoteHost: string, remotePort: number, localPort = 0): Promise<SshTunnel> {
    await this.connect(); // fail now (auth, host key, unreachable), not at the first request
    const sockets = new Set<net.Socket>();
    const closeHandlers: Array<(why: string) => void> = [];
    let closed = false;
    let lastError: string | undefined;
    const server = net.createServer((sock) => {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
      sock.on('error', () => sock.destroy());
      this.connect().then(
        (c) =>
          c.forwardOut('127.0.0.1', sock.remotePort ?? 0, remoteHost, remotePort, (err, stream) => {
            if (err) {
              lastError = `${remoteHost}:${remotePort} refused the forwarded connection (${err.message})`;
              sock.destroy();
              return;
            }
            lastError = undefined;
            sock.pipe(stream).pipe(sock);
            stream.on('error', () => sock.destroy());
            stream.on('close', () => sock.destroy());
            sock.on('close', () => stream.destroy());
          }),
        (e: unknown) => {
          lastError = e instanceof Error ? e.message : String(e);
          sock.destroy();
        },
      );
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', (e) => reject(new ConnectorError('invalid', this.where, `cannot listen on 127.0.0.1:${localPort} for the tunnel: ${e.message}`)));
      server.listen(localPort, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
    const close = async (why = 'closed'): Promise<void> => {
      if (closed) return;
      closed = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      for (const h of closeHandlers) h(why);
    };
    return {
      localPort: port,
      target: `${remoteHost}:${remotePort}`,
      get closed() {
        return closed;
      },
      get lastError() {
        return lastError;
      },
      close: () => close(),
      onClose: (h) => closeHandlers.push(h),
    };
  }

  /** Close the connection (a later exec reconnects). */
  async close(): Promise<void> {
    const c = this.client;
    this.client = null;
    if (c) c.end();
  }
}

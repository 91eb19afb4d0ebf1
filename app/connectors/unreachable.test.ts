/**
 * A Ray test that cannot connect says why, in words: refused (closed loopback port), no such host (`.invalid`, which
 * never resolves: RFC 6761), or timed out while connecting (a real listening socket whose accept queue is full, so
 * the kernel drops further SYNs), never `ray GET /api/version:` with nothing after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { RayConnector } from './ray';
import { ConnectorError } from './types';
import { closedPort } from '../../tests/support/ports';


/** A socket that listens with a backlog of 1 and never accepts; two connections fill the queue (python3: Node always accepts). */
function fullBacklog(): Promise<{ port: number; child: ChildProcess }> {
  const code = [
    'import socket, time',
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)",
    'fill = []',
    'for i in range(3):',
    '    c = socket.socket(); c.settimeout(0.3)',
    '    try: c.connect(s.getsockname())',
    '    except Exception: pass',
    '    fill.append(c)',
    'print(s.getsockname()[1], flush=True)',
    'time.sleep(120)',
  ].join('\n');
  const child = spawn('python3', ['-u', '-c', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve({ port: Number(d.toString().trim()), child }));
    child.once('exit', (c) => reject(new Error(`backlog helper exited ${c}`)));
  });
}

async function probeError(baseUrl: string, timeoutMs = 30_000): Promise<ConnectorError> {
  const err = await new RayConnector({ baseUrl, timeoutMs }).probe().then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectorError);
  return err as ConnectorError;
}

describe('Ray test: an unreachable dashboard says why', () => {
  let backlog: { port: number; child: ChildProcess };
  beforeAll(async () => {
    backlog = await fullBacklog();
  });
  afterAll(() => {
    backlog?.child.kill();
  });

  it('a closed loopback port: connection refused', async () => {
    const port = await closedPort();
    const e = await probeError(`http://127.0.0.1:${port}`);
    expect(e.message).toBe(`ray GET /api/version: connection refused by 127.0.0.1:${port}: nothing listens on port ${port} there (is the server running, on that port?)`);
    expect(e.code).toBe('unreachable');
  });

  it('localhost (two addresses, both refused) and a bracketed IPv6 literal: refused, not an empty reason', async () => {
    const port = await closedPort();
    expect((await probeError(`http://localhost:${port}`)).message).toMatch(/connection refused by localhost:\d+: nothing listens/);
    expect((await probeError(`http://[::1]:${port}`)).message).toMatch(/connection refused by \[::1\]:\d+|cannot reach http:\/\/\[::1\]:\d+: \S/);
  });

  it('a .invalid host: DNS', async () => {
    const e = await probeError('http://ray-head.invalid:8265');
    expect(e.message).toBe('ray GET /api/version: cannot find the host "ray-head.invalid" (DNS: ENOTFOUND); check the name in the URL');
  });

  it('a connection that never completes: timed out after N s connecting to the URL', async () => {
    const t0 = Date.now();
    const e = await probeError(`http://127.0.0.1:${backlog.port}`, 1500);
    expect(e.message).toBe(`ray GET /api/version: timed out after 1.5 s connecting to http://127.0.0.1:${backlog.port} (nothing answered: a firewall, a wrong address, or the server is down)`);
    expect(e.code).toBe('timeout');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
  });

  it('a server that accepts but never answers: connected, no answer within N s', async () => {
    const srv = net.createServer(() => undefined);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as net.AddressInfo).port;
    try {
      const e = await probeError(`http://127.0.0.1:${port}`, 1000);
      expect(e.message).toBe(`ray GET /api/version: connected to http://127.0.0.1:${port}, but it sent no answer within 1 s`);
    } finally {
      srv.close();
      // the open socket would keep close() waiting
      (srv as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    }
  });
});

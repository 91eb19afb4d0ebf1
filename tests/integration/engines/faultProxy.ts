/**
 * A loopback HTTP proxy that misbehaves on purpose, in front of a real OpenAI-compatible server: answers 429/500,
 * delays, resets the connection, drops an SSE stream after some events, or never answers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  | { kind: 'pass' }
  | { kind: 'status'; status: number; retryAfter?: string }
  | { kind: 'delay'; ms: number }
  | { kind: 'reset' }
  | { kind: 'drop'; afterEvents: number }
  | { kind: 'hang' };

export interface FaultProxy {
  url: string;
  /** Requests seen so far. */
  count: number;
  /** Most requests in flight at once. */
  maxConcurrent: number;
  /** Parsed JSON bodies of the requests seen. */
  bodies: unknown[];
  close(): Promise<void>;
}

export async function startFaultProxy(upstream: string, plan: (n: number) => Fault): Promise<FaultProxy> {
  const up = new URL(upstream);
  let inFlight = 0;
  const state = { count: 0, maxConcurrent: 0 };
  const bodies: unknown[] = [];
  const server = http.createServer((req, res) => {
    const n = state.count++;
    inFlight++;
    state.maxConcurrent = Math.max(state.maxConcurrent, inFlight);
    // 'finish' (last byte handed to the OS) precedes the client seeing the end, so a slot it frees is never counted twice
    let open = true;
    const done = () => {
      if (open) inFlight--;
      open = false;
    };
    res.on('finish', done);
    res.on('close', done);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        bodies.push(null);
      }
      const fault = plan(n);
      const forward = () => {
        const body = Buffer.concat(chunks);
        const p = http.request(
          { host: up.hostname, port: up.port, method: req.method, path: req.url, headers: { ...req.headers, host: up.host, 'content-length': body.length } },
          (r) => {
            res.writeHead(r.statusCode ?? 502, r.headers);
            let events = 0;
            let dropped = false;
            r.on('data', (c: Buffer) => {
              if (dropped) return;
              if (fault.kind === 'drop') {
                // pass exactly `afterEvents` SSE events, however the chunks are cut, then kill the connection
                const text = c.toString('utf8');
                let at = text.indexOf('data: ');
                while (at >= 0) {
                  if (events === fault.afterEvents) {
                    dropped = true;
                    res.write(text.slice(0, at), () => res.socket?.destroy());
                    r.destroy();
                    return;
                  }
                  events++;
                  at = text.indexOf('data: ', at + 1);
                }
              }
              res.write(c);
            });
            r.on('end', () => res.end());
          },
        );
        p.on('error', () => res.socket?.destroy());
        p.end(body);
      };
      switch (fault.kind) {
        case 'pass':
          return forward();
        case 'status':
          res.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.retryAfter ? { 'retry-after': fault.retryAfter } : {}) });
          return res.end(JSON.stringify({ error: { message: `injected ${fault.status}`, type: 'injected' } }));
        case 'delay':
          return void setTimeout(forward, fault.ms);
        case 'reset':
          return void req.socket.destroy();
        case 'drop':
          return forward();
        case 'hang':
          return; // never answer
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${up.pathname}`,
    get count() {
      return state.count;
    },
    get maxConcurrent() {
      return state.maxConcurrent;
    },
    bodies,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * Minimal HTTP client on node:http/https. Not global fetch(): Ray's dashboard rejects POST/PUT/DELETE that carry
 * `sec-fetch-mode`, which Node's fetch always adds (see tests/fixtures/ray-jobs-2.58/README.md, case
 * submit_with_node_global_fetch).
 */
import http from 'node:http';
import https from 'node:https';
import { ConnectorError } from './types';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text(): string;
  json<T = unknown>(): T;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  timeoutMs?: number;
  /** Names the caller in errors, e.g. `ray GET /api/jobs/`. */
  where: string;
  /** Use a unix socket instead of TCP. */
  socketPath?: string;
}

export function httpRequest(req: HttpRequest): Promise<HttpResponse> {
  const u = new URL(req.url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise<HttpResponse>((resolve, reject) => {
    const headers: Record<string, string | number> = { ...(req.headers ?? {}) };
    if (req.body !== undefined) headers['Content-Length'] = Buffer.byteLength(req.body);
    const r = mod.request(
      {
        method: req.method,
        hostname: u.hostname.replace(/^\[|\]$/g, ''), // a literal IPv6 address comes bracketed from URL
        port: u.port || (u.protocol === 'https:' ? 443 : 80),
        path: `${u.pathname}${u.search}`,
        headers,
        ...(req.socketPath ? { socketPath: req.socketPath } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new ConnectorError('connection-lost', req.where, `response broke off: ${e.message}`)));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            text: () => body.toString('utf8'),
            json: <T>() => {
              try {
                return JSON.parse(body.toString('utf8')) as T;
              } catch {
                throw new ConnectorError('backend', req.where, `expected JSON, got ${JSON.stringify(body.toString('utf8').slice(0, 200))}`);
              }
            },
          });
        });
      },
    );
    // Say which phase stopped: a connection never made (firewall, wrong address) or a server that never answered.
    const limitMs = req.timeoutMs ?? 30_000;
    const secs = `${+(limitMs / 1000).toFixed(1)} s`;
    let connected = false;
    // Our own clock for the connect phase: ClientRequest.setTimeout only starts once the socket has connected.
    const connectTimer = setTimeout(() => {
      if (!connected) r.destroy(new ConnectorError('timeout', req.where, `timed out after ${secs} connecting to ${u.origin} (nothing answered: a firewall, a wrong address, or the server is down)`));
    }, limitMs);
    const connectedNow = () => {
      connected = true;
      clearTimeout(connectTimer);
    };
    r.on('socket', (sock) => {
      if (!sock.connecting) connectedNow();
      else sock.once('connect', connectedNow);
    });
    r.on('close', () => clearTimeout(connectTimer));
    r.setTimeout(limitMs, () => {
      r.destroy(new ConnectorError('timeout', req.where, `connected to ${u.origin}, but it sent no answer within ${secs}`));
    });
    r.on('error', (err: Error & { code?: string; errors?: Array<Error & { code?: string }> }) => {
      if (err instanceof ConnectorError) return reject(err);
      // Node tries each address of a name in turn (autoSelectFamily); when all fail it throws an AggregateError whose
      // own message is empty: the reasons are in .errors.
      const e = err.errors?.[0] ?? err;
      const code = err.code ?? e.code ?? '';
      reject(networkError(req.where, u, code, e.message || err.message, secs));
    });
    if (req.body !== undefined) r.end(req.body);
    else r.end();
  });
}

/** The last line of a Python traceback, e.g. `TypeError: …`, or the first 300 chars of a text body. */
export function summarizeErrorBody(text: string): string {
  const t = text.trim();
  if (t.startsWith('Traceback')) {
    const lines = t.split('\n').filter((l) => l.trim());
    return (lines[lines.length - 1] ?? t).trim();
  }
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}

/** A connection failure in words: refused, no such host, unreachable, timed out; never an empty reason. */
export function networkError(where: string, u: URL, code: string, message: string, timeout: string): ConnectorError {
  const host = u.hostname.replace(/^\[|\]$/g, '');
  switch (code) {
    case 'ECONNREFUSED':
      return new ConnectorError('unreachable', where, `connection refused by ${u.host}: nothing listens on port ${u.port || (u.protocol === 'https:' ? 443 : 80)} there (is the server running, on that port?)`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NODATA':
    case 'EAI_NONAME':
      return new ConnectorError('unreachable', where, `cannot find the host "${host}" (DNS: ${code}); check the name in the URL`);
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return new ConnectorError('unreachable', where, `no network route to ${u.host} (${code}); check the address, VPN or SSH tunnel`);
    case 'ETIMEDOUT':
      return new ConnectorError('timeout', where, `timed out after ${timeout} connecting to ${u.origin} (nothing answered: a firewall, a wrong address, or the server is down)`);
    case 'ECONNRESET':
    case 'EPIPE':
      return new ConnectorError('connection-lost', where, `connection reset by ${u.host} (${code})`);
    case 'CERT_HAS_EXPIRED':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return new ConnectorError('unreachable', where, `the TLS certificate of ${u.host} is not trusted (${code})`);
    default:
      return new ConnectorError('unreachable', where, `cannot reach ${u.origin}: ${message.trim() || code || 'the connection failed with no reason given'}`);
  }
}

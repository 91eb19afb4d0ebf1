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
        hostname: u.hostname,
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
    r.setTimeout(req.timeoutMs ?? 30_000, () => {
      r.destroy(new ConnectorError('timeout', req.where, `no answer within ${req.timeoutMs ?? 30_000} ms`));
    });
    r.on('error', (e: Error & { code?: string }) => {
      if (e instanceof ConnectorError) return reject(e);
      const code = e.code ?? '';
      if (['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) {
        return reject(new ConnectorError('unreachable', req.where, `cannot reach ${u.host} (${code}); check the address and that the server runs`));
      }
      if (code === 'ECONNRESET' || code === 'EPIPE') return reject(new ConnectorError('connection-lost', req.where, `connection reset (${code})`));
      reject(new ConnectorError('unreachable', req.where, e.message));
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

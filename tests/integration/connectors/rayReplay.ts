/**
 * A small HTTP + WebSocket server that replays tests/fixtures/ray-jobs-2.58/transcript.json (recorded from a real
 * Ray 2.58 head) so the Ray connector can be contract-tested offline.
 *
 * Rules, all taken from the transcript:
 *  - Requests are matched by method + path (+ submission_id for POST /api/jobs/). Entries of one group are served
 *    in recorded order, the last one repeating (polling a job walks PENDING → RUNNING → SUCCEEDED).
 *  - An entry only becomes eligible after the successful mutations (POST/PUT/DELETE with 2xx) recorded before it
 *    for the same job were replayed: GET after DELETE answers 404 only once the client really deleted.
 *  - token-auth head: no credential → the recorded 401 body; a wrong one → the recorded 403 body (auth before routing).
 *  - POST/PUT/DELETE carrying browser markers (Mozilla UA, Origin, Referer, Sec-Fetch-*) → the recorded 405.
 *  - WebSocket frames are replayed with their recorded timing × `speed`; a client offering permessage-deflate gets
 *    the recorded failure (zero frames, close 1000).
 *  - Anything unmatched → 599 with a note, so a client calling an unrecorded route fails loudly.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';

export interface TranscriptEntry {
  name: string;
  head: 'no-auth' | 'token-auth';
  request: { method: string; path: string; headers: Record<string, string>; body: unknown; websocket?: boolean; client?: string };
  response: { status: number; headers: Record<string, string>; body: unknown } | null;
  frames?: Array<{ at_ms: number; binary: boolean; data: string }>;
  close?: { code: number; reason: string; at_ms: number } | null;
  note?: string;
  at_ms: number;
}

export const transcriptPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/ray-jobs-2.58/transcript.json');
export function loadTranscript(): TranscriptEntry[] {
  return JSON.parse(readFileSync(transcriptPath, 'utf8')) as TranscriptEntry[];
}
export function entry(name: string): TranscriptEntry {
  const e = loadTranscript().find((x) => x.name === name);
  if (!e) throw new Error(`no transcript entry ${name}`);
  return e;
}

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  served: string;
}

export interface ReplayOptions {
  head: 'no-auth' | 'token-auth';
  /** The token the token-auth head accepts (replaces `<TOKEN>`). */
  token?: string;
  /** Time scale for WebSocket frames (default 0.02: a 13 s tail replays in ~0.3 s). */
  speed?: number;
  /** Kill WebSocket connections after this many frames (a dropped tail). */
  dropWsAfterFrames?: number;
}

function jobKey(e: TranscriptEntry): string {
  const m = /^\/api\/jobs\/([^/]+)/.exec(e.request.path);
  if (m) return m[1] as string;
  if (e.request.method === 'POST' && e.request.path === '/api/jobs/') {
    const b = e.response?.body as { submission_id?: string } | null;
    return b?.submission_id ?? (e.request.body as { submission_id?: string } | null)?.submission_id ?? '';
  }
  const p = /_ray_pkg_[0-9a-f]+\.zip/.exec(e.request.path);
  return p ? p[0] : '';
}

function groupKey(method: string, p: string, ws: boolean, body: unknown): string {
  let k = `${ws ? 'WS' : method} ${p}`;
  if (method === 'POST' && p === '/api/jobs/') {
    const sid = body && typeof body === 'object' ? (body as { submission_id?: unknown }).submission_id : undefined;
    k += ` sid=${typeof sid === 'string' ? sid : ''}`;
    if (typeof sid !== 'string' && body && typeof body === 'object') k += ` ep=${String((body as { entrypoint?: unknown }).entrypoint)}`;
  }
  return k;
}

const isMutationOk = (e: TranscriptEntry): boolean =>
  ['POST', 'PUT', 'DELETE'].includes(e.request.method) && !!e.response && e.response.status >= 200 && e.response.status < 300;

export async function startRayReplay(o: ReplayOptions): Promise<{ url: string; received: Received[]; wsOpened: number; close: () => Promise<void> }> {
  const all = loadTranscript().filter((e) => e.head === o.head);
  const speed = o.speed ?? 0.02;
  const token = o.token ?? '';
  const authEntry = (status: number): TranscriptEntry | undefined => all.find((e) => e.response?.status === status && e.request.path === '/api/version');
  const browser405 = loadTranscript().find((e) => e.name === 'submit_browser_user_agent');
  // Entries answered with valid credentials (token head) or all (no-auth head).
  const usable = all.filter((e) => {
    if (o.head === 'no-auth') return true;
    const h = JSON.stringify(e.request.headers);
    return h.includes('<TOKEN>') && !h.includes('not-the-token') && !/"<TOKEN>"/.test(h) || e.request.path === '/api/authentication_mode';
  });
  const groups = new Map<string, TranscriptEntry[]>();
  for (const e of usable) {
    if (e.name.includes('with_deflate') || e.name.includes('browser') || e.name.includes('sec_fetch') || e.name.includes('global_fetch')) continue;
    if (e.request.headers['X-Ray-Authorization'] || e.request.headers.Cookie) continue;
    const k = groupKey(e.request.method, e.request.path, !!e.request.websocket, e.request.body);
    groups.set(k, [...(groups.get(k) ?? []), e]);
  }
  const cursor = new Map<string, number>();
  const served = new Set<TranscriptEntry>();
  const eligible = (e: TranscriptEntry): boolean =>
    all.every((m) => m === e || !isMutationOk(m) || m.at_ms >= e.at_ms || jobKey(m) !== jobKey(e) || served.has(m));
  const pick = (k: string): TranscriptEntry | undefined => {
    const g = groups.get(k);
    if (!g) return undefined;
    const c = cursor.get(k) ?? 0;
    let i = Math.min(c, g.length - 1);
    while (i > 0 && !eligible(g[i] as TranscriptEntry)) i--;
    if (!eligible(g[i] as TranscriptEntry)) return undefined;
    cursor.set(k, Math.min(i + 1, g.length - 1) > c ? i + 1 : c);
    return g[i];
  };

  const received: Received[] = [];
  const state = { wsOpened: 0 };
  const classifyAuth = (h: http.IncomingHttpHeaders): 'ok' | 'none' | 'bad' => {
    if (o.head === 'no-auth') return 'ok';
    const vals = [h.authorization, h['x-ray-authorization']].filter((v): v is string => typeof v === 'string');
    const cookie = /ray-authentication-token=([^;]+)/.exec(String(h.cookie ?? ''))?.[1];
    if (!vals.length && !cookie) return 'none';
    return vals.includes(`Bearer ${token}`) || cookie === token ? 'ok' : 'bad';
  };
  const sendEntry = (res: http.ServerResponse, e: TranscriptEntry): void => {
    const r = e.response as NonNullable<TranscriptEntry['response']>;
    const ct = r.headers['content-type'];
    const body = ct?.startsWith('application/json') ? JSON.stringify(r.body) : String(r.body ?? '');
    res.writeHead(r.status, ct ? { 'Content-Type': ct } : {});
    res.end(body.split('<TOKEN>').join(token));
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const p = req.url ?? '/';
      const rec: Received = { method: req.method ?? '', path: p, headers: req.headers, body, served: '' };
      received.push(rec);
      const auth = p === '/api/authentication_mode' ? 'ok' : classifyAuth(req.headers);
      if (auth !== 'ok') {
        const e = authEntry(auth === 'none' ? 401 : 403) as TranscriptEntry;
        rec.served = e.name;
        return sendEntry(res, e);
      }
      const h = req.headers;
      if (req.method !== 'GET' && (/Mozilla/.test(String(h['user-agent'] ?? '')) || h.origin || h.referer || Object.keys(h).some((k) => k.startsWith('sec-fetch-')))) {
        rec.served = 'browser-guard';
        return sendEntry(res, browser405 as TranscriptEntry);
      }
      let parsed: unknown = null;
      if (body.length && req.method === 'POST') {
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {
          parsed = null;
        }
      }
      const e = pick(groupKey(req.method ?? '', p, false, parsed));
      if (!e) {
        rec.served = 'UNMATCHED';
        res.writeHead(599, { 'Content-Type': 'text/plain' });
        return res.end(`replay: no recorded answer for ${req.method} ${p}`);
      }
      served.add(e);
      rec.served = e.name;
      sendEntry(res, e);
    });
  });

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<WebSocket>();
  server.on('upgrade', (req, socket, head) => {
    const p = req.url ?? '/';
    received.push({ method: 'WS', path: p, headers: req.headers, body: Buffer.alloc(0), served: '' });
    const reject = (e: TranscriptEntry): void => {
      const r = e.response as NonNullable<TranscriptEntry['response']>;
      const text = String(r.body ?? '');
      socket.end(`HTTP/1.1 ${r.status} X\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
    };
    const auth = classifyAuth(req.headers);
    if (auth !== 'ok') return reject(authEntry(auth === 'none' ? 401 : 403) as TranscriptEntry);
    const e = pick(groupKey('GET', p, true, null));
    if (!e) {
      socket.end('HTTP/1.1 599 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    if (e.response && e.response.status !== 101) return reject(e);
    served.add(e);
    const deflateOffered = /permessage-deflate/.test(String(req.headers['sec-websocket-extensions'] ?? ''));
    wss.handleUpgrade(req, socket, head, (ws) => {
      state.wsOpened += 1;
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      const later = (ms: number, fn: () => void): void => {
        const t = setTimeout(() => {
          timers.delete(t);
          fn();
        }, ms * speed);
        timers.add(t);
      };
      if (deflateOffered) return later(2019, () => ws.close(1000));
      let sent = 0;
      for (const f of e.frames ?? []) {
        later(f.at_ms, () => {
          if (o.dropWsAfterFrames !== undefined && sent >= o.dropWsAfterFrames) return ws.terminate();
          sent += 1;
          ws.send(f.data);
        });
      }
      if (e.close) later(e.close.at_ms, () => ws.close(e.close?.code ?? 1000));
    });
  });

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    get wsOpened() {
      return state.wsOpened;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

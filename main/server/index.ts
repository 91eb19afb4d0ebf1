/**
 * Browser mode: serves the built renderer, workspace media under /media/, and the contract over a
 * WebSocket at /ws. Binds 127.0.0.1 unless the user chooses a host; every data path needs the token.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Core } from '../core';
import type { WireMessage } from '../../app/contract';
import { checkAccess, newToken, parseAllowedOrigin, tokenMatches, type AccessPolicy } from './security';
import { parseCallFrame, WS_MAX_MESSAGE_BYTES } from './wire';
import { MIME } from './mime';

export interface ServerOptions {
  core: Core;
  host?: string;
  port?: number;
  /** Folder with the built renderer (index.html + assets). */
  rendererDir: string;
  token?: string;
  /** Origins of remote pages allowed in (`--allow-origin`), e.g. http://gpu-box.lab:8765; each a bare origin. */
  allowOrigins?: string[];
}

export interface RunningServer {
  url: string;
  /** The URL with the token, to open in a browser. */
  openUrl: string;
  token: string;
  port: number;
  /**
   * A page for a browser to open instead of the token URL, as Jupyter does: a 0600 file in a private folder whose
   * only content is a redirect to a one-time login code, so neither the token nor a usable code is ever in the
   * browser's command line (`ps` shows argv to every local user). The code is spent on first use and the file removed.
   */
  writeLoginFile(): Promise<string>;
  close(): Promise<void>;
}

/** How long a login code from `writeLoginFile` stays valid. */
const LOGIN_CODE_TTL_MS = 2 * 60 * 1000;

/** Largest body `POST /upload` accepts. */
export const UPLOAD_LIMIT = 64 * 1024 * 1024;

const CSP = "default-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/** A URL component decoded, or null for a malformed `%` escape (a path gets 400, a cookie counts as no token). */
function decodePath(p: string): string | null {
  try {
    return decodeURIComponent(p);
  } catch {
    return null;
  }
}

function cookieToken(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const [k, v] = part.trim().split('=');
    if (k === 'loupe_token' && v) return decodePath(v);
  }
  return null;
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const host = opts.host ?? '127.0.0.1';
  const allowRemote = opts.host !== undefined && opts.host !== '127.0.0.1' && opts.host !== 'localhost' && opts.host !== '::1';
  const token = opts.token ?? newToken();
  const policy: AccessPolicy = { token, allowedOrigins: new Set((opts.allowOrigins ?? []).map(parseAllowedOrigin)), allowedHosts: new Set(), allowRemote };
  const sockets = new Set<WebSocket>();
  /** One-time login codes → their file (removed when the code is spent) and expiry. */
  const loginCodes = new Map<string, { file: string; expires: number }>();
  let loginDir: string | null = null;

  const server = http.createServer((req, res) => {
    void handleHttp(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`internal error: ${err instanceof Error ? err.message : String(err)}`);
    });
  });

  const verdictFor = (req: http.IncomingMessage, url: URL) =>
    checkAccess(policy, {
      remoteAddress: req.socket.remoteAddress,
      host: req.headers.host,
      origin: req.headers.origin,
      token: url.searchParams.get('token') ?? cookieToken(req.headers.cookie),
    });

  async function handleHttp(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const baseHeaders = { 'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      res.writeHead(400, { ...baseHeaders, 'content-type': 'text/plain' }).end('malformed request URL');
      return;
    }
    const pathname = decodePath(url.pathname);
    if (pathname === null) {
      res.writeHead(400, { ...baseHeaders, 'content-type': 'text/plain' }).end('malformed % escape in the URL path');
      return;
    }
    if (req.method === 'POST' && url.pathname === '/upload') {
      await handleUpload(req, res, url, baseHeaders);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, baseHeaders).end();
      return;
    }
    if (pathname === '/login') {
      handleLogin(req, res, url, baseHeaders);
      return;
    }
    if (url.pathname.startsWith('/media/')) {
      const verdict = verdictFor(req, url);
      if (!verdict.ok) {
        res.writeHead(verdict.status, { ...baseHeaders, 'content-type': 'text/plain' }).end(verdict.reason);
        return;
      }
      const file = opts.core.mediaPath(pathname.slice('/media/'.length));
      // Only regular files that Loupe wrote: a symlink planted in media/ could point anywhere, so it is not followed.
      const stat = file ? await fs.promises.lstat(file).catch(() => null) : null;
      const handle = stat?.isFile() ? await fs.promises.open(file!, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0)).catch(() => null) : null;
      if (!handle) {
        res.writeHead(404, baseHeaders).end('no such media');
        return;
      }
      res.writeHead(200, { ...baseHeaders, 'content-type': MIME[path.extname(file!)] ?? 'application/octet-stream', 'cache-control': 'private, max-age=31536000, immutable' });
      handle.createReadStream().pipe(res);
      return;
    }
    // Static renderer files carry no data; still apply the loopback/Host rules.
    const verdict = verdictFor(req, url);
    if (!verdict.ok && verdict.status === 403) {
      res.writeHead(403, { ...baseHeaders, 'content-type': 'text/plain' }).end(verdict.reason);
      return;
    }
    const rel = path.normalize(pathname).replace(/^(\.\.[/\\])+/, '');
    let file = path.join(opts.rendererDir, rel);
    if (!file.startsWith(path.resolve(opts.rendererDir)) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      file = path.join(opts.rendererDir, 'index.html');
    }
    if (!fs.existsSync(file)) {
      res.writeHead(503, { ...baseHeaders, 'content-type': 'text/plain' }).end('The renderer is not built. Run `npm run build` first.');
      return;
    }
    const headers: Record<string, string> = { ...baseHeaders, 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream' };
    const given = url.searchParams.get('token');
    if (given && verdict.ok) {
      // Like Jupyter: the token in the URL becomes a cookie so <img src=/media/…> works.
      headers['set-cookie'] = `loupe_token=${encodeURIComponent(given)}; HttpOnly; SameSite=Strict; Path=/`;
    }
    res.writeHead(200, headers);
    fs.createReadStream(file).pipe(res);
  }

  /** Spend a one-time code from the login file: redirect to the token URL (which the renderer then strips). */
  function handleLogin(req: http.IncomingMessage, res: http.ServerResponse, url: URL, baseHeaders: Record<string, string>): void {
    const text = { ...baseHeaders, 'content-type': 'text/plain', 'cache-control': 'no-store' };
    // Loopback/Host/Origin rules as for any page; the code stands in for the token.
    const verdict = checkAccess(policy, { remoteAddress: req.socket.remoteAddress, host: req.headers.host, origin: req.headers.origin, token });
    if (!verdict.ok) {
      res.writeHead(verdict.status, text).end(verdict.reason);
      return;
    }
    const code = url.searchParams.get('code') ?? '';
    const entry = [...loginCodes.entries()].find(([c]) => tokenMatches(c, code));
    if (!entry || entry[1].expires < Date.now()) {
      res.writeHead(401, text).end('this login link was already used or has expired: open the URL Loupe printed (it carries ?token=…)');
      return;
    }
    loginCodes.delete(entry[0]);
    void fs.promises.rm(entry[1].file, { force: true });
    res.writeHead(302, { ...text, location: `/?token=${token}`, 'set-cookie': `loupe_token=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/` }).end();
  }

  /**
   * Browser mode's way in for dropped files (Electron passes paths instead): the raw bytes of one image
   * as the body, token-checked like every data path, size-limited, imported through the contract's
   * `demo:import` so the same checks (pixel bombs, formats) apply. Replies `{ media: MediaRef }`.
   */
  async function handleUpload(req: http.IncomingMessage, res: http.ServerResponse, url: URL, baseHeaders: Record<string, string>): Promise<void> {
    const json = { ...baseHeaders, 'content-type': 'application/json' };
    const verdict = verdictFor(req, url);
    if (!verdict.ok) {
      res.writeHead(verdict.status, json).end(JSON.stringify({ error: verdict.reason }));
      return;
    }
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > UPLOAD_LIMIT) {
      res.writeHead(413, json).end(JSON.stringify({ error: `the file is ${(declared / 1e6).toFixed(1)} MB; uploads are limited to ${UPLOAD_LIMIT / 1e6} MB` }));
      req.resume();
      return;
    }
    const name = path.basename(url.searchParams.get('name') ?? 'upload.bin').replace(/[^A-Za-z0-9._-]/g, '_') || 'upload.bin';
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > UPLOAD_LIMIT) {
        tooBig = true;
        break;
      }
      chunks.push(chunk as Buffer);
    }
    if (tooBig) {
      res.writeHead(413, { ...json, connection: 'close' }).end(JSON.stringify({ error: `uploads are limited to ${UPLOAD_LIMIT / 1e6} MB` }));
      req.destroy();
      return;
    }
    if (size === 0) {
      res.writeHead(400, json).end(JSON.stringify({ error: 'the upload is empty' }));
      return;
    }
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'loupe-upload-'));
    const file = path.join(dir, name);
    try {
      await fs.promises.writeFile(file, Buffer.concat(chunks));
      const reply = await opts.core.dispatch('demo:import', { paths: [file] });
      if (!reply.ok) {
        res.writeHead(422, json).end(JSON.stringify({ error: reply.error.message.replace(file, name) }));
        return;
      }
      const media = (reply.result as { media: unknown[] }).media[0];
      res.writeHead(200, json).end(JSON.stringify({ media }));
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
  }

  // UTF-8 is checked in parseCallFrame so a bad frame gets an answer instead of closing the connection.
  const wss = new WebSocketServer({ noServer: true, maxPayload: WS_MAX_MESSAGE_BYTES, skipUTF8Validation: true });
  server.on('upgrade', (req, socket, head) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      return;
    }
    const verdict = url.pathname === '/ws' ? verdictFor(req, url) : ({ ok: false, status: 403, reason: 'not found' } as const);
    if (!verdict.ok) {
      socket.write(`HTTP/1.1 ${verdict.status} ${verdict.status === 401 ? 'Unauthorized' : 'Forbidden'}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${verdict.reason}`);
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws));
  });

  wss.on('connection', (ws: WebSocket) => {
    sockets.add(ws);
    const off = opts.core.onEvent((event, payload) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'event', event, payload } satisfies WireMessage));
    });
    const reply = (msg: WireMessage) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    ws.on('close', () => {
      off();
      sockets.delete(ws);
    });
    // A protocol error on this socket (a frame over the limit) closes this client only: `ws` has already started
    // the close handshake with 1009. Without a listener the 'error' event would take the whole server down.
    ws.on('error', () => undefined);
    ws.on('message', (data, isBinary) => {
      const frame = parseCallFrame(data, isBinary);
      if (!frame.ok) {
        reply({ type: 'result', id: frame.id, ok: false, error: frame.error });
        return;
      }
      const { id, method, payload } = frame.call;
      void opts.core.dispatch(method, payload).then(
        (r) => reply({ type: 'result', id, ...r } as WireMessage),
        (err: unknown) => reply({ type: 'result', id, ok: false, error: { code: 'handler_error', message: err instanceof Error ? err.message : String(err) } }),
      );
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  for (const h of new Set(['127.0.0.1', 'localhost', '[::1]', shownHost])) {
    policy.allowedHosts.add(`${h}:${port}`);
    policy.allowedOrigins.add(`http://${h}:${port}`);
  }
  const url = `http://${shownHost}:${port}`;
  return {
    url,
    openUrl: `${url}/?token=${token}`,
    token,
    port,
    async writeLoginFile() {
      loginDir ??= await fs.promises.mkdtemp(path.join(os.tmpdir(), 'loupe-login-'));
      const code = newToken();
      const file = path.join(loginDir, `open-${code.slice(0, 8)}.html`);
      const target = `${url}/login?code=${code}`;
      const html = `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${target}"><title>Loupe</title><script>location.replace(${JSON.stringify(target)})</script><p><a href="${target}">Open Loupe</a></p>\n`;
      // wx: never write through a file someone placed there; 0600: only this user can read the code.
      await fs.promises.writeFile(file, html, { mode: 0o600, flag: 'wx' });
      loginCodes.set(code, { file, expires: Date.now() + LOGIN_CODE_TTL_MS });
      return file;
    },
    async close() {
      if (loginDir) await fs.promises.rm(loginDir, { recursive: true, force: true });
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

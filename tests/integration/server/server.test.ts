import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import WebSocket from 'ws';
import { createCore, type Core } from '../../../main/core';
import { startServer, type RunningServer } from '../../../main/server';
import { checkAccess, isLoopbackAddress } from '../../../main/server/security';

function connect(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function call(ws: WebSocket, id: number, method: unknown, payload: unknown): Promise<any> {
  return new Promise((resolve) => {
    const onMsg = (d: WebSocket.RawData) => {
      const m = JSON.parse(String(d));
      if (m.type === 'result' && m.id === id) {
        ws.off('message', onMsg);
        resolve(m);
      }
    };
    ws.on('message', onMsg);
    ws.send(JSON.stringify({ type: 'call', id, method, payload }));
  });
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    }).on('error', reject);
  });
}

describe('browser-mode server', () => {
  let core: Core;
  let server: RunningServer;
  let rendererDir: string;
  beforeAll(async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-srv-'));
    rendererDir = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-r-'));
    fs.writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>Loupe</title>');
    core = await createCore({ workspace: ws, transport: 'browser' });
    server = await startServer({ core, rendererDir });
  });
  afterAll(async () => {
    await server.close();
    await core.dispose();
  });

  it('binds to loopback by default and prints a token URL', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.openUrl).toBe(`${server.url}/?token=${server.token}`);
    expect(server.token).toMatch(/^[a-f0-9]{48}$/);
  });

  it('refuses a WebSocket without the token (401) and with a wrong token', async () => {
    await expect(connect(`ws://127.0.0.1:${server.port}/ws`)).rejects.toThrow('HTTP 401');
    await expect(connect(`ws://127.0.0.1:${server.port}/ws?token=${'0'.repeat(48)}`)).rejects.toThrow('HTTP 401');
  });

  it('refuses a WebSocket from a foreign Origin even with the token (403)', async () => {
    await expect(connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, { Origin: 'http://evil.example' })).rejects.toThrow('HTTP 403');
  });

  it('refuses a rebinding Host header (403)', async () => {
    await expect(connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, { Host: `evil.example:${server.port}` })).rejects.toThrow('HTTP 403');
  });

  it('accepts the token with our own Origin and answers calls', async () => {
    const ws = await connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, { Origin: server.url });
    const reply = await call(ws, 1, 'app:info', {});
    expect(reply.ok).toBe(true);
    expect(reply.result.workspace).toBe(core.workspace);
    expect(reply.result.transport).toBe('browser');
    ws.close();
  });

  it('answers a malformed payload with an error naming the field, and keeps working', async () => {
    const ws = await connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`);
    const bad = await call(ws, 7, 'settings:set', { theme: 'purple' });
    expect(bad.ok).toBe(false);
    expect(bad.error.code).toBe('invalid_payload');
    expect(bad.error.message).toContain('theme');
    expect(bad.error.issues[0].path).toBe('theme');
    const extra = await call(ws, 8, 'samples:query', { runIds: ['x'], limit: -3 });
    expect(extra.error.issues.map((i: { path: string }) => i.path)).toContain('limit');
    const unknown = await call(ws, 9, 'nope:never', {});
    expect(unknown.error.code).toBe('unknown_method');
    ws.send('{not json');
    const good = await call(ws, 10, 'settings:set', { theme: 'dark' });
    expect(good.ok).toBe(true);
    expect(good.result.theme).toBe('dark');
    ws.close();
  });

  it('pushes events to connected clients', async () => {
    const ws = await connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`);
    const got = new Promise<any>((resolve) => ws.on('message', (d) => {
      const m = JSON.parse(String(d));
      if (m.type === 'event' && m.event === 'settings:changed') resolve(m.payload);
    }));
    await call(ws, 1, 'settings:set', { theme: 'light' });
    await expect(got).resolves.toMatchObject({ theme: 'light' });
    ws.close();
  });

  it('serves media only with the token and only by content id', async () => {
    const id = `${'a'.repeat(64)}.png`;
    fs.writeFileSync(path.join(core.workspace, 'media', id), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    expect((await get(`${server.url}/media/${id}`)).status).toBe(401);
    const ok = await get(`${server.url}/media/${id}?token=${server.token}`);
    expect(ok.status).toBe(200);
    expect(ok.headers['content-type']).toBe('image/png');
    expect((await get(`${server.url}/media/..%2F..%2Fsettings.json?token=${server.token}`)).status).toBe(404);
    const cookie = await get(`${server.url}/media/${id}`, { Cookie: `loupe_token=${server.token}` });
    expect(cookie.status).toBe(200);
  });

  it('serves exports as downloads, only with the token and only from exports/', async () => {
    fs.mkdirSync(path.join(core.workspace, 'exports'), { recursive: true });
    fs.writeFileSync(path.join(core.workspace, 'exports', 'run-1-b0.html'), '<!doctype html><title>t</title>');
    expect((await get(`${server.url}/exports/run-1-b0.html`)).status).toBe(401);
    const ok = await get(`${server.url}/exports/run-1-b0.html`, { Cookie: `loupe_token=${server.token}` });
    expect(ok.status).toBe(200);
    expect(ok.headers['content-disposition']).toBe('attachment; filename="run-1-b0.html"');
    expect((await get(`${server.url}/exports/..%2Fsettings.json?token=${server.token}`)).status).toBe(404);
    expect((await get(`${server.url}/exports/missing.gif?token=${server.token}`)).status).toBe(404);
  });

  it('serves the renderer with a CSP and turns the URL token into an HttpOnly cookie', async () => {
    const res = await get(`${server.url}/?token=${server.token}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(String(res.headers['set-cookie'])).toContain('HttpOnly');
    const anon = await get(`${server.url}/`);
    expect(anon.headers['set-cookie']).toBeUndefined();
  });
});

describe('access rules', () => {
  const policy = { token: 't'.repeat(48), allowedOrigins: new Set(['http://127.0.0.1:1']), allowedHosts: new Set(['127.0.0.1:1']), allowRemote: false };
  it('recognises loopback addresses in all their forms', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of ['10.0.0.1', '192.168.1.2', '::ffff:10.0.0.1', 'fe80::1', '', undefined]) expect(isLoopbackAddress(a)).toBe(false);
  });
  it('refuses non-loopback clients unless --host allowed remote ones', () => {
    const req = { remoteAddress: '192.168.1.5', host: '127.0.0.1:1', origin: undefined, token: policy.token };
    const refused = checkAccess(policy, req);
    expect(refused).toMatchObject({ ok: false, status: 403 });
    expect(refused.ok ? '' : refused.reason).toContain('--host');
    expect(checkAccess({ ...policy, allowRemote: true }, { ...req, host: 'gpu-box:1' })).toEqual({ ok: true });
    expect(checkAccess({ ...policy, allowRemote: true }, { ...req, token: 'x' })).toMatchObject({ ok: false, status: 401 });
  });
});

describe('a server started with --host', () => {
  it('listens on the chosen address and accepts clients using another Host name', async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-srv-'));
    const core = await createCore({ workspace: ws, transport: 'browser' });
    const server = await startServer({ core, rendererDir: ws, host: '0.0.0.0' });
    try {
      const sock = await connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, { Host: `gpu-box.lab:${server.port}` });
      const reply = await call(sock, 1, 'app:info', {});
      expect(reply.ok).toBe(true);
      sock.close();
    } finally {
      await server.close();
      await core.dispose();
    }
  });
});

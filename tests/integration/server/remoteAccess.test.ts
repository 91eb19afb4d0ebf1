/**
 * Browser mode reached the ways the README describes: through an SSH tunnel that lands on another local port
 * (`ssh -L 9000:127.0.0.1:PORT`, reproduced here by a plain TCP forward on loopback, which is all the server sees of
 * a tunnel: a loopback peer and the client's own Host/Origin), and with `--host 0.0.0.0` plus an explicit
 * `--allow-origin`. Neither may open the door to other origins or rebinding Host names. Also: bad `%` escapes are
 * a 400, and a symlink planted in `media/` is not followed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createCore, type Core } from '../../../main/core';
import { startServer, type RunningServer } from '../../../main/server';

function connect(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** What `ssh -L` does on the server's side: accept on one local port, connect from loopback to the server's port. */
async function tcpForward(toPort: number): Promise<{ port: number; close(): Promise<void> }> {
  const conns = new Set<net.Socket>();
  const srv = net.createServer((inbound) => {
    const out = net.connect(toPort, '127.0.0.1');
    conns.add(inbound).add(out);
    inbound.pipe(out).pipe(inbound);
    const end = () => {
      inbound.destroy();
      out.destroy();
    };
    inbound.on('error', end).on('close', end);
    out.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const c of conns) c.destroy();
        srv.close(() => r());
      }),
  };
}

async function call(ws: WebSocket): Promise<boolean> {
  return new Promise((resolve) => {
    ws.once('message', (d) => resolve((JSON.parse(String(d)) as { ok: boolean }).ok));
    ws.send(JSON.stringify({ type: 'call', id: 1, method: 'app:info', payload: {} }));
  });
}

describe('browser mode on loopback, reached through a tunnel on another local port', () => {
  let core: Core;
  let server: RunningServer;
  let tunnel: { port: number; close(): Promise<void> };
  beforeAll(async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-remote-'));
    fs.writeFileSync(path.join(ws, 'index.html'), '<!doctype html><title>Loupe</title>');
    core = await createCore({ workspace: ws, transport: 'browser' });
    server = await startServer({ core, rendererDir: ws });
    tunnel = await tcpForward(server.port);
  });
  afterAll(async () => {
    await tunnel.close();
    await server.close();
    await core.dispose();
  });

  it('accepts the tunnel’s own Host and Origin (localhost:OTHER_PORT, 127.0.0.1:OTHER_PORT)', async () => {
    for (const h of [`localhost:${tunnel.port}`, `127.0.0.1:${tunnel.port}`]) {
      const page = await get(`http://127.0.0.1:${tunnel.port}/?token=${server.token}`, { Host: h });
      expect(page.status, page.body).toBe(200);
      const ws = await connect(`ws://127.0.0.1:${tunnel.port}/ws?token=${server.token}`, { Host: h, Origin: `http://${h}` });
      expect(await call(ws)).toBe(true);
      ws.close();
    }
  });

  it('still refuses other origins and rebinding Host names through the tunnel', async () => {
    const url = `ws://127.0.0.1:${tunnel.port}/ws?token=${server.token}`;
    // another page served from localhost (another port) is another origin
    await expect(connect(url, { Host: `localhost:${tunnel.port}`, Origin: 'http://localhost:3000' })).rejects.toThrow('HTTP 403');
    await expect(connect(url, { Host: `localhost:${tunnel.port}`, Origin: 'http://evil.example' })).rejects.toThrow('HTTP 403');
    await expect(connect(url, { Host: `evil.example:${tunnel.port}`, Origin: `http://evil.example:${tunnel.port}` })).rejects.toThrow('HTTP 403');
    await expect(connect(url, { Host: `localhost.evil.example:${tunnel.port}` })).rejects.toThrow('HTTP 403');
    expect((await get(`http://127.0.0.1:${tunnel.port}/media/x.png?token=${server.token}`, { Host: `evil.example:${tunnel.port}` })).status).toBe(403);
  });

  it('answers a bad % escape with 400, not 500', async () => {
    for (const p of ['/%E0%A4%A', '/media/%zz.png', '/%', '/assets/%C0%AF']) {
      const r = await get(`${server.url}${p}?token=${server.token}`);
      expect(r.status, `${p}: ${r.body}`).toBe(400);
      expect(r.body).toMatch(/escape/);
    }
  });

  it('treats a cookie with a bad % escape as no token (401), on pages and on the WebSocket', async () => {
    expect((await get(`${server.url}/media/${'d'.repeat(64)}.png`, { Cookie: 'loupe_token=%zz' })).status).toBe(401);
    await expect(connect(`ws://127.0.0.1:${server.port}/ws`, { Cookie: 'loupe_token=%E0%A4%A' })).rejects.toThrow('HTTP 401');
    const ws = await connect(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, {});
    expect(await call(ws)).toBe(true);
    ws.close();
  });

  it('does not follow a symlink planted in media/', async () => {
    const secret = path.join(core.workspace, 'settings-copy.json');
    fs.writeFileSync(secret, '{"secret":"do not serve"}');
    const id = `${'b'.repeat(64)}.png`;
    fs.symlinkSync(secret, path.join(core.workspace, 'media', id));
    const r = await get(`${server.url}/media/${id}?token=${server.token}`);
    expect(r.status).toBe(404);
    expect(r.body).not.toContain('do not serve');
  });
});

describe('browser mode with --host 0.0.0.0 and --allow-origin', () => {
  it('lets the named remote origin in, and no other', async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-remote-'));
    const core = await createCore({ workspace: ws, transport: 'browser' });
    const server = await startServer({ core, rendererDir: ws, host: '0.0.0.0', allowOrigins: ['http://gpu-box.lab:8765'] });
    try {
      const url = `ws://127.0.0.1:${server.port}/ws?token=${server.token}`;
      const sock = await connect(url, { Host: 'gpu-box.lab:8765', Origin: 'http://gpu-box.lab:8765' });
      expect(await call(sock)).toBe(true);
      sock.close();
      await expect(connect(url, { Host: 'gpu-box.lab:8765', Origin: 'http://evil.example' })).rejects.toThrow('HTTP 403');
      await expect(connect(url, { Host: 'gpu-box.lab:8765', Origin: 'http://gpu-box.lab:9999' })).rejects.toThrow('HTTP 403');
      await expect(connect(url, { Host: 'gpu-box.lab:8765', Origin: 'https://gpu-box.lab:8765' })).rejects.toThrow('HTTP 403');
    } finally {
      await server.close();
      await core.dispose();
    }
  });

  it('without --allow-origin a remote origin is refused, and the refusal names the option', async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-remote-'));
    const core = await createCore({ workspace: ws, transport: 'browser' });
    const server = await startServer({ core, rendererDir: ws, host: '0.0.0.0' });
    try {
      const r = await get(`http://127.0.0.1:${server.port}/media/${'c'.repeat(64)}.png?token=${server.token}`, { Host: 'gpu-box.lab:8765', Origin: 'http://gpu-box.lab:8765' });
      expect(r.status).toBe(403);
      expect(r.body).toContain('--allow-origin');
    } finally {
      await server.close();
      await core.dispose();
    }
  });

  it('rejects an --allow-origin that is not a bare origin', async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-remote-'));
    const core = await createCore({ workspace: ws, transport: 'browser' });
    try {
      for (const bad of ['*', 'gpu-box.lab:8765', 'http://gpu-box.lab:8765/app', 'null', 'file:///x']) {
        await expect(startServer({ core, rendererDir: ws, host: '0.0.0.0', allowOrigins: [bad] })).rejects.toThrow(/--allow-origin/);
      }
    } finally {
      await core.dispose();
    }
  });
});

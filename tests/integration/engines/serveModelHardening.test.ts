/**
 * `serve-model` against hostile clients, over real HTTP on loopback: the bearer key, allowed image roots (and errors
 * that do not tell whether a path exists), text/plain and cross-origin requests, bounds with 4xx errors naming the
 * field, 413 for big bodies, the per-server media cache keyed by content, fair turns across clients (the committed
 * tiny model, whose runtime runs one request at a time), and the CLI taking its key from a file or the environment.
 * The recorded-text ScriptedEngine stands behind the server where only the HTTP layer is under test; it records what
 * the server handed it (image paths) so the test can read those files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ScriptedEngine } from '../../../app/agent/scriptedEngine';
import { LocalEngine } from '../../../app/engines/local/localEngine';
import { startOpenAIServer, type OpenAIServer } from '../../../app/engines/serve/openaiServer';
import { workerThreadTransportFactory } from '../../../native/engine/workerThreadTransport';
import { TINY_DIR } from './parityFixture';
import { describeIf } from '../../support/requirements';
import { setTimeout as sleep } from 'node:timers/promises';

/** Reading another process's argv (what `ps` shows) needs Linux's /proc. */
const HAS_PROC = fs.existsSync('/proc/self/cmdline');
const NEEDS_PROC = { what: '/proc (Linux)', reason: 'this check reads /proc/PID/cmdline, as ps does; run it on Linux', provisioned: false };

const REPO = path.resolve(TINY_DIR, '..', '..');
const GLASS = path.join(REPO, 'tests', 'fixtures', 'images', 'animate_glass.jpg');
const PNG = fs.readFileSync(path.join(TINY_DIR, fs.readdirSync(TINY_DIR).find((f) => f.endsWith('.png'))!));
const dataUrl = (b: Buffer) => `data:image/png;base64,${b.toString('base64')}`;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Reply {
  status: number;
  body: { error?: { message: string; type: string }; choices?: unknown[] } & Record<string, unknown>;
}

async function post(server: OpenAIServer, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const r = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Reply['body'] };
}

const ask = (content: unknown, extra: Record<string, unknown> = {}) => ({ messages: [{ role: 'user', content }], max_tokens: 8, ...extra });

describe('serve-model: access', () => {
  let engine: ScriptedEngine;
  let server: OpenAIServer;
  let root: string;
  let outside: string;
  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-roots-'));
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-outside-'));
    fs.copyFileSync(GLASS, path.join(root, 'glass.jpg'));
    fs.writeFileSync(path.join(outside, 'secret.png'), 'not for clients');
    fs.symlinkSync(path.join(outside, 'secret.png'), path.join(root, 'link.png'));
    engine = new ScriptedEngine(Array.from({ length: 200 }, () => 'ok'));
    server = await startOpenAIServer({ engine, imageRoots: [root] });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('needs the bearer key on every route', async () => {
    expect(server.apiKey).toMatch(/^[0-9a-f]{48}$/);
    for (const authorization of ['', 'Bearer wrong', server.apiKey!, `Bearer ${server.apiKey}x`]) {
      expect((await fetch(`${server.url}/models`, { headers: { authorization } })).status).toBe(401);
      const r = await post(server, ask('hi'), { authorization });
      expect(r.status).toBe(401);
      expect(r.body.error?.type).toBe('authentication_error');
    }
    expect((await fetch(`${server.url}/models`, { headers: { authorization: `Bearer ${server.apiKey}` } })).status).toBe(200);
    expect((await post(server, ask('hi'))).status).toBe(200);
  });

  it('reads local images only under the allowed roots, with one error for missing and forbidden paths', async () => {
    const inside = await post(server, ask([{ type: 'image_url', image_url: { url: path.join(root, 'glass.jpg') } }]));
    expect(inside.status).toBe(200);
    const got = engine.requests.at(-1)!.messages[0]!.content[0]!;
    expect(got.type === 'image' && got.image.path).toBe(fs.realpathSync(path.join(root, 'glass.jpg')));
    const refused = [path.join(outside, 'secret.png'), path.join(outside, 'missing.png'), '/etc/hostname', `file://${path.join(outside, 'secret.png')}`, path.join(root, 'link.png'), path.join(root, '..', path.basename(outside), 'secret.png'), path.join(root, 'missing.png')];
    const messages = new Set<string>();
    for (const p of refused) {
      const r = await post(server, ask([{ type: 'image_url', image_url: { url: p } }]));
      expect(r.status, p).toBe(400);
      messages.add(r.body.error!.message);
    }
    // the same words whether the file exists or not, and no path echoed back
    expect([...messages]).toHaveLength(1);
    expect([...messages][0]).not.toContain(outside);
  });

  it('refuses text/plain bodies and requests from other origins', async () => {
    const plain = await post(server, JSON.stringify(ask('hi')), { 'content-type': 'text/plain' });
    expect(plain.status).toBe(415);
    const cross = await post(server, ask('hi'), { origin: 'http://evil.example' });
    expect(cross.status).toBe(403);
    expect((await fetch(`${server.url}/models`, { headers: { authorization: `Bearer ${server.apiKey}`, origin: 'http://evil.example' } })).status).toBe(403);
  });

  it('bounds pixels, tokens, sampling and the message shape with 400s naming the field', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [ask('x', { mm_processor_kwargs: { min_pixels: 1e12 } }), /mm_processor_kwargs\.min_pixels/],
      [ask('x', { mm_processor_kwargs: { max_pixels: 1e12 } }), /mm_processor_kwargs\.max_pixels/],
      [ask('x', { mm_processor_kwargs: { min_pixels: 5000, max_pixels: 4000 } }), /min_pixels/],
      [ask('x', { mm_processor_kwargs: 'big' }), /mm_processor_kwargs/],
      [ask('x', { max_tokens: 1e9 }), /max_tokens/],
      [ask('x', { max_tokens: -1 }), /max_tokens/],
      [ask('x', { max_tokens: 2.5 }), /max_tokens/],
      [ask('x', { max_completion_tokens: 0 }), /max_completion_tokens/],
      [ask('x', { temperature: -1 }), /temperature/],
      [ask('x', { temperature: 7 }), /temperature/],
      [ask('x', { top_p: 0 }), /top_p/],
      [ask('x', { top_k: 0 }), /top_k/],
      [ask('x', { stop: [null] }), /stop/],
      [ask('x', { user: 42 }), /user/],
      [{ messages: [null] }, /messages\[0\]/],
      [{ messages: ['hi'] }, /messages\[0\]/],
      [{ messages: [{ role: 'user', content: [null] }] }, /messages\[0\]\.content\[0\]/],
      [{ messages: [{ role: 'user', content: [{ type: 'text', text: { a: 1 } }] }] }, /messages\[0\]\.content\[0\]\.text/],
    ];
    for (const [body, field] of cases) {
      const r = await post(server, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error!.message, JSON.stringify(body)).toMatch(field);
      expect(r.body.error!.message).not.toMatch(/TypeError|Cannot read/);
    }
  });

  it('answers a malformed request line with 400 and too many images with 400', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(server.port, '127.0.0.1', () => sock.end(`GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.apiKey}\r\nConnection: close\r\n\r\n`));
      let got = '';
      sock.on('data', (d) => (got += d));
      sock.on('end', () => resolve(got));
      sock.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    const many = await post(server, ask(Array.from({ length: 257 }, () => ({ type: 'image_url', image_url: { url: dataUrl(PNG) } }))));
    expect(many.status).toBe(400);
    expect(many.body.error!.message).toMatch(/256 images/);
  });

  it('answers a body over the limit with 413, not a reset connection', async () => {
    const small = await startOpenAIServer({ engine, maxBodyBytes: 64 * 1024 });
    try {
      const big = ask([{ type: 'image_url', image_url: { url: dataUrl(Buffer.alloc(1024 * 1024, 7)) } }]);
      const r = await post(small, big);
      expect(r.status).toBe(413);
      expect(r.body.error!.message).toMatch(/limit/);
      expect((await post(small, ask('still here'))).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it('refuses more waiting requests from one client than its share (429), and serves the others', async () => {
    const slow = new ScriptedEngine(Array.from({ length: 10 }, () => ({ text: 'ok', delayMs: 300 })));
    const s = await startOpenAIServer({ engine: slow, limits: { maxQueuedPerClient: 2 } });
    try {
      const replies = await Promise.all([0, 1, 2, 3, 4].map(() => post(s, ask('x', { user: 'flood' }))));
      const codes = replies.map((r) => r.status).sort();
      expect(codes.filter((c) => c === 429).length).toBeGreaterThanOrEqual(1);
      expect(codes.filter((c) => c === 200).length).toBeGreaterThanOrEqual(3);
    } finally {
      await s.close();
    }
  });
});

describe('serve-model: media cache', () => {
  it('keeps decoded images in a private folder per server, keyed by content, removed on close', async () => {
    const engine = new ScriptedEngine(['a', 'b', 'c']);
    const server = await startOpenAIServer({ engine });
    const dir = server.mediaDir;
    expect(dir).not.toBe(path.join(os.tmpdir(), 'loupe-serve-media'));
    const st = fs.statSync(dir);
    expect(st.mode & 0o077).toBe(0);
    expect(st.uid).toBe(process.getuid!());
    expect((await post(server, ask([{ type: 'image_url', image_url: { url: dataUrl(PNG) } }]))).status).toBe(200);
    const got = engine.requests[0]!.messages[0]!.content[0]!;
    expect(got.type === 'image' && path.dirname(got.image.path ?? '')).toBe(dir);
    await server.close();
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('removes the folders of servers that were killed before cleaning up, and no others', async () => {
    const dead = spawn(process.execPath, ['-e', '0']);
    const deadPid = await new Promise<number>((r) => dead.on('exit', () => r(dead.pid!)));
    const stale = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-serve-media-'));
    fs.writeFileSync(path.join(stale, '.owner-pid'), String(deadPid));
    fs.writeFileSync(path.join(stale, `${'e'.repeat(64)}.png`), 'old');
    const live = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-serve-media-'));
    fs.writeFileSync(path.join(live, '.owner-pid'), String(process.ppid));
    const server = await startOpenAIServer({ engine: new ScriptedEngine([]) });
    try {
      expect(fs.existsSync(stale)).toBe(false);
      expect(fs.existsSync(live)).toBe(true);
    } finally {
      await server.close();
      fs.rmSync(live, { recursive: true, force: true });
    }
  });

  it('never trusts a planted file of the same size at the cached name', async () => {
    const engine = new ScriptedEngine(['a', 'b']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-shared-media-'));
    const planted = Buffer.alloc(PNG.length, 0x42);
    fs.writeFileSync(path.join(dir, `${sha(PNG)}.png`), planted);
    const server = await startOpenAIServer({ engine, mediaDir: dir });
    try {
      expect((await post(server, ask([{ type: 'image_url', image_url: { url: dataUrl(PNG) } }]))).status).toBe(200);
      const got = engine.requests[0]!.messages[0]!.content[0]!;
      if (got.type !== 'image') throw new Error('no image reached the engine');
      expect(sha(fs.readFileSync(got.image.path!))).toBe(sha(PNG));
    } finally {
      await server.close();
    }
  });
});

describe('serve-model: fair turns across clients', () => {
  let local: LocalEngine;
  let server: OpenAIServer;
  // The engine holds its first request until the test opens the gate, so every other request is waiting in the
  // server's queue by then whatever the machine's load (a fixed pause raced a fast engine on a busy CI machine).
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  beforeAll(async () => {
    local = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, kvCache: false });
    const gated = new Proxy(local, {
      get(target, prop) {
        if (prop === 'generate') return async (...a: Parameters<LocalEngine['generate']>) => (await gate, target.generate(...a));
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
    server = await startOpenAIServer({ engine: gated });
  });
  afterAll(async () => {
    await server?.close();
    await local?.dispose();
  });

  it('a client with one request is served before the end of another client’s queue', async () => {
    const order: string[] = [];
    const one = (who: string, i: number) =>
      post(server, { messages: [{ role: 'user', content: `count to ${i}` }], max_tokens: 24, temperature: 0, user: who }).then((r) => {
        expect(r.status).toBe(200);
        order.push(`${who}${i}`);
      });
    const sweep = [0, 1, 2, 3, 4, 5].map((i) => one('sweep', i));
    // the sweep's first request is on the (held) engine and five more wait when the other client asks
    await sleep(100);
    const me = one('me', 0);
    await sleep(300);
    open();
    await Promise.all([...sweep, me]);
    expect(order.indexOf('me0'), order.join(' ')).toBeLessThanOrEqual(2);
  });
});

describeIf(HAS_PROC, NEEDS_PROC, 'loupe serve-model (the command)', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill('SIGTERM');
  });

  /** Start the command in a child process; resolves with its printed URL, its output, and its argv as `ps` shows it. */
  async function start(args: string[], env: Record<string, string> = {}): Promise<{ url: string; out: string; cmdline: string }> {
    const code = `import { Command } from 'commander'; import { register } from ${JSON.stringify(path.join(REPO, 'main/cli/commands/serveModel.ts'))};
const p = new Command(); register(p); await p.parseAsync(['node', 'loupe', 'serve-model', ...JSON.parse(process.env.ARGS)]);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOUPE_API_KEY: '', ...env, ARGS: JSON.stringify([TINY_DIR, '--port', '0', '--threads', '1', ...args]) } });
    children.push(child);
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`serve-model did not start in 120 s: ${err}`)), 120_000);
      child.stdout!.on('data', (d) => {
        out += d;
        const m = / at (http:\/\/\S+)[\s\S]*api key: .*\n/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve({ url: m[1]!, out, cmdline: fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8') });
        }
      });
      child.on('exit', (c) => reject(new Error(`serve-model exited (${c}): ${err}`)));
    });
  }

  // Each case starts the command with the tiny model (about 15-20 s on a loaded 2-core machine).
  const chosen = 'k-' + 'f'.repeat(40);

  it('prints a generated key and wants it', async () => {
    const gen = await start([]);
    const key = /api key: ([0-9a-f]{48})/.exec(gen.out)?.[1];
    expect(key).toBeDefined();
    expect((await fetch(`${gen.url}/models`)).status).toBe(401);
    expect((await fetch(`${gen.url}/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  }, 150_000);

  it('takes a chosen key from a 0600 file, never from argv, and does not print it', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-key-')), 'key');
    fs.writeFileSync(file, `${chosen}\n`, { mode: 0o600 });
    const fromFile = await start(['--api-key-file', file]);
    expect(fromFile.out).not.toContain(chosen);
    expect(fromFile.cmdline).not.toContain(chosen);
    expect((await fetch(`${fromFile.url}/models`, { headers: { authorization: `Bearer ${chosen}` } })).status).toBe(200);
  }, 150_000);

  it('takes a chosen key from LOUPE_API_KEY', async () => {
    const fromEnv = await start([], { LOUPE_API_KEY: chosen });
    expect(fromEnv.cmdline).not.toContain(chosen);
    expect((await fetch(`${fromEnv.url}/models`, { headers: { authorization: `Bearer ${chosen}` } })).status).toBe(200);
    expect((await fetch(`${fromEnv.url}/models`)).status).toBe(401);
  }, 150_000);
});

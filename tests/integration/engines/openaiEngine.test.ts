/**
 * The OpenAI-compatible engine against `serve-model` (the local engine behind a real HTTP server on loopback), directly
 * and through a fault proxy: retries on 429/500/reset, clear per-request errors, timeouts instead of hangs, cancel,
 * stop strings and the concurrency limit.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MediaStore } from '../../../app/workspace/mediaStore';
import { SharpImageOps } from '../../../native/image/sharpImageOps';
import { LocalEngine } from '../../../app/engines/local/localEngine';
import { OpenAIEngine, type OpenAIEngineOptions } from '../../../app/engines/openai/openaiEngine';
import { startOpenAIServer, type OpenAIServer } from '../../../app/engines/serve/openaiServer';
import { EngineError } from '../../../app/engines/errors';
import type { EngineImage, GenerateResult } from '../../../app/engines/types';
import { workerThreadTransportFactory } from '../../../native/engine/workerThreadTransport';
import { startFaultProxy, type Fault, type FaultProxy } from './faultProxy';
import { TINY_DIR, greedy, parity } from './parityFixture';

let local: LocalEngine;
let server: OpenAIServer;
let reference: GenerateResult;
const proxies: FaultProxy[] = [];
const one = parity.cases.single_image;
const multi = parity.cases.multi_image;

beforeAll(async () => {
  local = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, kvCache: false });
  server = await startOpenAIServer({ engine: local, port: 0 });
  reference = await local.generate(greedy(one));
});
afterAll(async () => {
  await server?.close();
  await local?.dispose();
});
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.close();
});

async function viaProxy(plan: (n: number) => Fault, opts: Partial<OpenAIEngineOptions> = {}) {
  const proxy = await startFaultProxy(server.url, plan);
  proxies.push(proxy);
  const engine = new OpenAIEngine({ baseURL: proxy.url, model: 'tiny-random-qwen25vl', apiKey: server.apiKey!, retryBaseMs: 5, timeoutMs: 20_000, ...opts });
  return { proxy, engine };
}

describe('OpenAIEngine ↔ serve-model', () => {
  it('lists the served model', async () => {
    const r = (await (await fetch(`${server.url}/models`, { headers: { authorization: `Bearer ${server.apiKey}` } })).json()) as { data: Array<{ id: string; device: string }> };
    expect(r.data).toEqual([expect.objectContaining({ id: 'tiny-random-qwen25vl', device: 'cpu' })]);
  });

  it('sends images as data URLs and gets the local engine’s exact greedy text, streamed', async () => {
    const engine = new OpenAIEngine({ baseURL: server.url, model: 'tiny-random-qwen25vl', apiKey: server.apiKey! });
    let streamed = '';
    const r = await engine.generate(greedy(one, { onToken: (d) => (streamed += d) }));
    expect(r.text).toBe(reference.text);
    expect(streamed).toBe(r.text);
    expect(r.promptTokens).toBe(one.input_ids.length);
    expect(r.completionTokens).toBe(one.generated.length);
    expect(r.finishReason).toBe('length');
  });

  it('carries a three-image conversation (original + two crops) intact', async () => {
    const engine = new OpenAIEngine({ baseURL: server.url, model: 'tiny-random-qwen25vl', apiKey: server.apiKey! });
    const [viaHttp, direct] = [await engine.generate(greedy(multi)), await local.generate(greedy(multi))];
    expect(viaHttp.promptTokens).toBe(multi.input_ids.length);
    expect(viaHttp.text).toBe(direct.text);
    expect(direct.tokens).toEqual(multi.generated);
  });

  it('an image held in memory (no file) gives the same tokens as its file, through the local engine (RGB pixels) and over HTTP (PNG bytes)', async () => {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-held-engine-'));
    try {
      const ops = new SharpImageOps(new MediaStore(path.join(tmp, 'media')));
      // A full-frame crop: a derived image with exactly the file's pixels, held, never written.
      const held = new Map<string, EngineImage>();
      const stored = new Set<string>();
      for (const f of multi.images) {
        const ref = await ops.importFile(path.join(TINY_DIR, f));
        stored.add(ref.id);
        const crop = await ops.crop(ref, [0, 0, ref.width, ref.height]);
        held.set(f, ops.engineImage(crop));
      }
      const req = greedy(multi);
      const heldReq = { ...req, messages: req.messages.map((m) => ({ ...m, content: m.content.map((c) => (c.type === 'image' ? { ...c, image: held.get(c.image.id)! } : c)) })) };
      expect(heldReq.messages.flatMap((m) => m.content).filter((c) => c.type === 'image' && c.image.path === undefined && c.image.pixels)).toHaveLength(multi.images.length);
      const direct = await local.generate(heldReq);
      expect(direct.tokens).toEqual(multi.generated);
      expect(direct.promptTokens).toBe(multi.input_ids.length);
      const engine = new OpenAIEngine({ baseURL: server.url, model: 'tiny-random-qwen25vl', apiKey: server.apiKey! });
      expect((await engine.generate(heldReq)).text).toBe(direct.text);
      // Nothing but the imported originals was written.
      expect((await fsp.readdir(path.join(tmp, 'media'))).filter((f) => !f.startsWith('.')).sort()).toEqual([...stored].sort());
    } finally {
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  });

  it('applies stop strings', async () => {
    const engine = new OpenAIEngine({ baseURL: server.url, model: 'tiny-random-qwen25vl', apiKey: server.apiKey! });
    const stop = reference.text.slice(5, 9);
    const r = await engine.generate(greedy(one, { stop: [stop] }));
    expect(r.text).toBe(reference.text.slice(0, reference.text.indexOf(stop)));
    expect(r.finishReason).toBe('stop');
  });

  it('answers a malformed request with a 400 naming the field', async () => {
    const r = await fetch(`${server.url}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }) });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/messages\[0\]\.role/);
  });
});

describe('through a fault proxy', () => {
  it('sends sampling knobs (top_k in the body), stop, max tokens, seed, extra body, and images/frames as data URLs', async () => {
    const { proxy, engine } = await viaProxy(() => ({ kind: 'pass' }), { extraBody: { repetition_penalty: 1.05 } });
    const frames = multi.images.map((f) => ({ id: f, width: 0, height: 0, path: `${TINY_DIR}/${f}` }));
    await engine.generate({
      messages: [{ role: 'user', content: [{ type: 'video', frames }, { type: 'text', text: 'What happens?' }] }],
      maxTokens: 3, temperature: 0.7, topP: 0.9, topK: 20, stop: ['</tool_call>'], seed: 11,
    });
    const body = proxy.bodies[0] as Record<string, unknown> & { messages: Array<{ content: Array<{ type: string; image_url?: { url: string } }> }> };
    expect(body).toMatchObject({ max_tokens: 3, temperature: 0.7, top_p: 0.9, top_k: 20, stop: ['</tool_call>'], seed: 11, repetition_penalty: 1.05, stream: true });
    const parts = body.messages[0]!.content;
    expect(parts.map((p) => p.type)).toEqual(['image_url', 'image_url', 'image_url', 'text']);
    expect(parts[0]!.image_url!.url).toMatch(/^data:image\/png;base64,iVBOR/);
  });

  it('retries 429 and 500 with backoff, then succeeds', async () => {
    const { proxy, engine } = await viaProxy((n) => (n === 0 ? { kind: 'status', status: 429, retryAfter: '0' } : n === 1 ? { kind: 'status', status: 500 } : { kind: 'pass' }));
    const r = await engine.generate(greedy(one));
    expect(r.text).toBe(reference.text);
    expect(proxy.count).toBe(3);
  });

  it('gives up with a clear per-request error when 500 persists', async () => {
    const { proxy, engine } = await viaProxy(() => ({ kind: 'status', status: 500 }), { maxRetries: 2 });
    const err = await engine.generate(greedy(one)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ kind: 'http', status: 500, retryable: false });
    expect((err as Error).message).toMatch(/HTTP 500.*gave up after 3 attempts/s);
    expect(proxy.count).toBe(3);
  });

  it('does not retry a 400', async () => {
    const { proxy, engine } = await viaProxy(() => ({ kind: 'status', status: 400 }));
    const err = await engine.generate(greedy(one)).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'http', status: 400 });
    expect((err as Error).message).toMatch(/not retryable/);
    expect(proxy.count).toBe(1);
  });

  it('retries a reset connection', async () => {
    const { proxy, engine } = await viaProxy((n) => (n === 0 ? { kind: 'reset' } : { kind: 'pass' }));
    expect((await engine.generate(greedy(one))).text).toBe(reference.text);
    expect(proxy.count).toBe(2);
  });

  it('fails, without retrying, when a stream drops after text was streamed to the caller', async () => {
    const { proxy, engine } = await viaProxy(() => ({ kind: 'drop', afterEvents: 3 }));
    let streamed = '';
    const err = await engine.generate(greedy(one, { onToken: (d) => (streamed += d) })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).kind).toBe('network');
    expect((err as Error).message).toMatch(/not retried/);
    expect(streamed.length).toBeGreaterThan(0);
    expect(reference.text.startsWith(streamed)).toBe(true);
    expect(proxy.count).toBe(1);
  });

  it('retries a dropped stream when nothing was handed to the caller yet', async () => {
    const { proxy, engine } = await viaProxy((n) => (n === 0 ? { kind: 'drop', afterEvents: 3 } : { kind: 'pass' }));
    expect((await engine.generate(greedy(one))).text).toBe(reference.text);
    expect(proxy.count).toBe(2);
  });

  it('times out a server that never answers instead of hanging', async () => {
    const { proxy, engine } = await viaProxy(() => ({ kind: 'hang' }), { timeoutMs: 300, maxRetries: 1 });
    const err = await engine.generate(greedy(one)).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'timeout' });
    expect((err as Error).message).toMatch(/no response within 300 ms.*gave up after 2 attempts/s);
    expect(proxy.count).toBe(2);
  });

  it('waits out a slow server within the deadline', async () => {
    const { engine } = await viaProxy(() => ({ kind: 'delay', ms: 200 }));
    expect((await engine.generate(greedy(one))).text).toBe(reference.text);
  });

  it('cancels mid-stream', async () => {
    const { engine } = await viaProxy(() => ({ kind: 'pass' }));
    const ac = new AbortController();
    let n = 0;
    const r = await engine.generate(greedy(multi, { maxTokens: 400, signal: ac.signal, onToken: () => (++n === 2 ? ac.abort() : undefined) }));
    expect(r.finishReason).toBe('cancelled');
    expect(r.text.length).toBeGreaterThan(0);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    const a = await viaProxy(() => ({ kind: 'pass' }), { concurrency: 1 });
    const ra = await Promise.all([0, 1, 2].map(() => a.engine.generate(greedy(one))));
    expect(ra.map((r) => r.text)).toEqual([reference.text, reference.text, reference.text]);
    expect(a.proxy.maxConcurrent).toBe(1);
    const b = await viaProxy(() => ({ kind: 'delay', ms: 300 }), { concurrency: 3 });
    await Promise.all([0, 1, 2].map(() => b.engine.generate(greedy(one))));
    expect(b.proxy.maxConcurrent).toBe(3);
  });
});

/** A loopback server answering every request with `respond` (what a server's SSE or error bytes look like on the wire). */
async function wireServer(respond: (res: import('node:http').ServerResponse) => void | Promise<void>) {
  const http = await import('node:http');
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => void respond(res));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as import('node:net').AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => new Promise<void>((r) => srv.close(() => r())) };
}

const chunk = (content: string | null, finish: string | null = null) => `data: ${JSON.stringify({ choices: [{ delta: content === null ? {} : { content }, finish_reason: finish }] })}`;

describe('OpenAIEngine reads the stream itself', () => {
  it('joins events split anywhere across packets, with CRLF lines, comments and other fields, and takes usage from the last chunk', async () => {
    const wire = [': keep-alive', 'event: message', chunk('Hel'), 'id: 2', chunk('lo, '), chunk('wörld'), chunk(null, 'stop'), `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } })}`, 'data: [DONE]']
      .map((l) => l + '\r\n' + (l.startsWith('data:') ? '\r\n' : ''))
      .join('');
    const bytes = Buffer.from(wire);
    const srv = await wireServer(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // every 5 bytes on its own write: splits lines, the CRLF pairs and the two bytes of "ö"
      for (let i = 0; i < bytes.length; i += 5) {
        res.write(bytes.subarray(i, i + 5));
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
    try {
      const seen: string[] = [];
      const r = await new OpenAIEngine({ baseURL: srv.url, model: 'm', retryBaseMs: 5 }).generate({ ...greedy(one), onToken: (d) => seen.push(d) });
      expect(r).toMatchObject({ text: 'Hello, wörld', finishReason: 'stop', promptTokens: 7, completionTokens: 3 });
      expect(seen.join('')).toBe('Hello, wörld');
    } finally {
      await srv.close();
    }
  });

  it("names the server's own error message, and an error reported inside the stream is a dropped stream (retried, then given up)", async () => {
    const srv = await wireServer((res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'The model `m` does not exist.' } }));
    });
    try {
      const err = await new OpenAIEngine({ baseURL: srv.url, model: 'm', retryBaseMs: 5 }).generate(greedy(one)).catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: 'http', status: 404 });
      expect((err as Error).message).toMatch(/^HTTP 404: The model `m` does not exist\. .*not retryable/);
    } finally {
      await srv.close();
    }
    let n = 0;
    const inStream = await wireServer((res) => {
      n++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ error: { message: 'CUDA out of memory' } })}\n\n`);
    });
    try {
      const err = await new OpenAIEngine({ baseURL: inStream.url, model: 'm', retryBaseMs: 5, maxRetries: 1 }).generate(greedy(one)).catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: 'network' });
      expect((err as Error).message).toMatch(/the server reported an error in the stream: CUDA out of memory.*gave up after 2 attempts/s);
      expect(n).toBe(2);
    } finally {
      await inStream.close();
    }
  });

  it('a refused connection names the cause', async () => {
    const { closedPort } = await import('../../support/ports');
    const port = await closedPort();
    const err = await new OpenAIEngine({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'm', retryBaseMs: 5, maxRetries: 1 }).generate(greedy(one)).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'network' });
    expect((err as Error).message).toMatch(/connection failed: .*ECONNREFUSED.*gave up after 2 attempts/s);
  });

  it('speaks HTTPS: a TLS server in front of serve-model gives the same streamed text; an untrusted certificate is named', async () => {
    const https = await import('node:https');
    const net = await import('node:net');
    const tls = await import('node:tls');
    const { readFileSync } = await import('node:fs');
    const dir = new URL('../../fixtures/tls/', import.meta.url);
    const cert = readFileSync(new URL('loopback.cert.pem', dir));
    const key = readFileSync(new URL('loopback.key.pem', dir));
    const up = new URL(server.url);
    // a TLS terminator on loopback that pipes each connection to the plain serve-model
    const front = tls.createServer({ cert, key }, (s) => {
      const back = net.connect(Number(up.port), up.hostname);
      s.pipe(back).pipe(s);
      const end = () => (s.destroy(), back.destroy());
      s.on('error', end);
      back.on('error', end);
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    const port = (front.address() as { port: number }).port;
    const baseURL = `https://127.0.0.1:${port}${up.pathname}`;
    try {
      const untrusted = await new OpenAIEngine({ baseURL, model: 'tiny-random-qwen25vl', apiKey: server.apiKey!, retryBaseMs: 5, maxRetries: 0 }).generate(greedy(one)).catch((e: unknown) => e);
      expect(untrusted).toMatchObject({ kind: 'network' });
      expect((untrusted as Error).message).toMatch(/connection failed: .*self.signed certificate/i);
      // trust the test certificate the way a user's NODE_EXTRA_CA_CERTS would: through the default agent
      const before = https.globalAgent.options.ca;
      https.globalAgent.options.ca = cert;
      try {
        let streamed = '';
        const r = await new OpenAIEngine({ baseURL, model: 'tiny-random-qwen25vl', apiKey: server.apiKey! }).generate(greedy(one, { onToken: (d) => (streamed += d) }));
        expect(r.text).toBe(reference.text);
        expect(streamed).toBe(r.text);
      } finally {
        https.globalAgent.options.ca = before;
        https.globalAgent.destroy();
      }
    } finally {
      await new Promise<void>((r) => front.close(() => r()));
    }
  });
});

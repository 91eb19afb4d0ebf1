/**
 * Any Engine as an OpenAI-compatible HTTP endpoint (`/v1/models`, `/v1/chat/completions`, streaming and not), so
 * tools that speak the OpenAI API (Loupe's own OpenAI engine, verl-tool style clients, curl) can use a local model.
 * Bound to 127.0.0.1 unless told otherwise. Images arrive as data URLs (or local file paths / file:// URLs) and are
 * written once, content-addressed, to `mediaDir`.
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatContent, ChatMessage, Engine, EngineImage, GenerateRequest } from '../types';
import { EngineError } from '../errors';

export interface OpenAIServerOptions {
  engine: Engine;
  /** The model id clients name (default: the engine's model basename). */
  modelId?: string;
  host?: string;
  port?: number;
  /** Where decoded data-URL images are written (default: a temp folder). */
  mediaDir?: string;
  /** Largest request body in bytes (default 64 MiB). */
  maxBodyBytes?: number;
}

export interface OpenAIServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
  ) {
    super(message);
  }
}

const EXT: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' };

async function imageFrom(url: string, mediaDir: string, where: string): Promise<EngineImage> {
  const m = /^data:([\w/+.-]+);base64,(.*)$/s.exec(url);
  if (m) {
    const buf = Buffer.from(m[2]!, 'base64');
    if (buf.length === 0) throw new HttpError(400, `${where}: empty image data`);
    const sha = createHash('sha256').update(buf).digest('hex');
    const id = `${sha}.${EXT[m[1]!] ?? 'png'}`;
    const p = path.join(mediaDir, id);
    await mkdir(mediaDir, { recursive: true });
    // content-addressed: write once, atomically, so concurrent requests with the same image never read a partial file
    if ((await stat(p).catch(() => null))?.size !== buf.length) {
      const tmp = `${p}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      await writeFile(tmp, buf);
      await rename(tmp, p);
    }
    return { id, path: p, width: 0, height: 0, mime: m[1]! };
  }
  const p = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (path.isAbsolute(p)) {
    const s = await stat(p).catch(() => null);
    if (!s?.isFile()) throw new HttpError(400, `${where}: image file not found: ${p}`);
    return { id: path.basename(p), path: p, width: 0, height: 0 };
  }
  throw new HttpError(400, `${where}: image_url must be a data: URL or an absolute local file path (no downloads)`);
}

type Json = Record<string, unknown>;

async function parseRequest(body: Json, mediaDir: string): Promise<{ req: GenerateRequest; stream: boolean; includeUsage: boolean }> {
  const msgs = body.messages;
  if (!Array.isArray(msgs) || msgs.length === 0) throw new HttpError(400, 'messages: must be a non-empty array');
  const messages: ChatMessage[] = [];
  for (const [i, raw] of msgs.entries()) {
    const m = raw as Json;
    const role = m.role;
    if (role !== 'system' && role !== 'user' && role !== 'assistant') {
      throw new HttpError(400, `messages[${i}].role: expected system, user or assistant, got ${JSON.stringify(role)}`);
    }
    const content: ChatContent[] = [];
    if (typeof m.content === 'string') content.push({ type: 'text', text: m.content });
    else if (Array.isArray(m.content)) {
      for (const [j, p] of (m.content as Json[]).entries()) {
        const where = `messages[${i}].content[${j}]`;
        if (p.type === 'text') content.push({ type: 'text', text: String(p.text ?? '') });
        else if (p.type === 'image_url') {
          const u = (p.image_url as Json | undefined)?.url ?? p.image_url;
          if (typeof u !== 'string') throw new HttpError(400, `${where}.image_url.url: missing`);
          content.push({ type: 'image', image: await imageFrom(u, mediaDir, where) });
        } else throw new HttpError(400, `${where}.type: ${JSON.stringify(p.type)} is not supported (text, image_url)`);
      }
    } else if (m.content !== null && m.content !== undefined) throw new HttpError(400, `messages[${i}].content: expected a string or an array`);
    messages.push({ role, content });
  }
  // A negative token count or temperature is a client error with the field named, not a value the engine gets.
  const n = (k: string, d: number, min = -Infinity, int = false): number => {
    const v = body[k];
    if (v === undefined || v === null) return d;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new HttpError(400, `${k}: expected a number`);
    if (v < min || (int && !Number.isInteger(v))) throw new HttpError(400, `${k}: must be ${int ? 'a whole number ' : ''}≥ ${min}, got ${v}`);
    return v;
  };
  const stop = body.stop === undefined || body.stop === null ? [] : Array.isArray(body.stop) ? body.stop.map(String) : [String(body.stop)];
  const mmk = (body.mm_processor_kwargs ?? {}) as Json;
  const req: GenerateRequest = {
    messages,
    maxTokens: n('max_completion_tokens', n('max_tokens', 512, 1, true), 1, true),
    temperature: n('temperature', 1, 0),
    topP: n('top_p', 1, 0),
    topK: n('top_k', -1),
    stop,
    ...(typeof body.seed === 'number' ? { seed: body.seed } : {}),
    ...(typeof mmk.min_pixels === 'number' ? { minPixels: mmk.min_pixels } : {}),
    ...(typeof mmk.max_pixels === 'number' ? { maxPixels: mmk.max_pixels } : {}),
  };
  const so = (body.stream_options ?? {}) as Json;
  return { req, stream: body.stream === true, includeUsage: so.include_usage === true };
}

function readBody(r: http.IncomingMessage, max: number): Promise<Json> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    r.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        reject(new HttpError(413, `request body over ${max} bytes`));
        r.destroy();
      } else chunks.push(c);
    });
    r.on('end', () => {
      try {
        const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
        resolve(v as Json);
      } catch (e) {
        reject(new HttpError(400, `request body is not a JSON object: ${(e as Error).message}`));
      }
    });
    r.on('error', reject);
  });
}

export async function startOpenAIServer(opts: OpenAIServerOptions): Promise<OpenAIServer> {
  const { engine } = opts;
  const modelId = opts.modelId ?? path.basename(engine.info().model);
  const mediaDir = opts.mediaDir ?? path.join(os.tmpdir(), 'loupe-serve-media');
  const maxBody = opts.maxBodyBytes ?? 64 * 1024 * 1024;
  const created = Math.floor(Date.now() / 1000);
  let seq = 0;

  const send = (res: http.ServerResponse, status: number, obj: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  };
  const sendError = (res: http.ServerResponse, e: unknown) => {
    const status = e instanceof HttpError ? e.status : e instanceof EngineError && e.kind === 'bad_request' ? 400 : 500;
    const type = e instanceof HttpError ? e.type : e instanceof EngineError ? `engine_${e.kind}` : 'server_error';
    if (!res.headersSent) send(res, status, { error: { message: (e as Error).message, type, code: status } });
    else res.end();
  };

  const server = http.createServer((rq, res) => {
    void (async () => {
      try {
        const url = new URL(rq.url ?? '/', 'http://x');
        if (rq.method === 'GET' && url.pathname === '/v1/models') {
          const info = engine.info();
          send(res, 200, { object: 'list', data: [{ id: modelId, object: 'model', created, owned_by: 'loupe', root: info.model, device: info.device }] });
          return;
        }
        if (url.pathname !== '/v1/chat/completions') throw new HttpError(404, `no route ${rq.method} ${url.pathname}`, 'not_found');
        if (rq.method !== 'POST') throw new HttpError(405, 'use POST');
        const body = await readBody(rq, maxBody);
        if (body.model !== undefined && body.model !== modelId) throw new HttpError(404, `model ${JSON.stringify(body.model)} is not served here (serving ${modelId})`, 'not_found');
        const { req, stream, includeUsage } = await parseRequest(body, mediaDir);
        const ac = new AbortController();
        // the client went away: stop generating
        res.on('close', () => {
          if (!res.writableFinished) ac.abort();
        });
        const id = `chatcmpl-${Date.now().toString(36)}-${seq++}`;
        const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: modelId };
        if (!stream) {
          const r = await engine.generate({ ...req, signal: ac.signal });
          send(res, 200, {
            id,
            object: 'chat.completion',
            created: base.created,
            model: modelId,
            choices: [{ index: 0, message: { role: 'assistant', content: r.text }, finish_reason: r.finishReason === 'length' ? 'length' : 'stop' }],
            usage: { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens },
          });
          return;
        }
        let started = false;
        const start = () => {
          if (started) return;
          started = true;
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
          res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
        };
        const r = await engine.generate({
          ...req,
          signal: ac.signal,
          onToken: (delta) => {
            start();
            res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: delta }, finish_reason: null }] })}\n\n`);
          },
        });
        start();
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: r.finishReason === 'length' ? 'length' : 'stop' }] })}\n\n`);
        if (includeUsage) {
          const usage = { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens };
          res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
        }
        res.end('data: [DONE]\n\n');
      } catch (e) {
        sendError(res, e);
      }
    })();
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}/v1`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

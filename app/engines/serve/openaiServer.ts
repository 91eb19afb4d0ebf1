/**
 * Any Engine as an OpenAI-compatible HTTP endpoint (`/v1/models`, `/v1/chat/completions`, streaming and not), so
 * tools that speak the OpenAI API (Loupe's own OpenAI engine, verl-tool style clients, curl) can use a local model.
 * Bound to 127.0.0.1 unless told otherwise, and every request needs the bearer key (printed at start, like the
 * browser-mode token). Images arrive as data URLs, written once to a private per-process folder keyed by their
 * SHA-256; local file paths / file:// URLs are read only under the allowed image roots. Requests are bounded (body,
 * pixels, tokens, sampling) with 4xx errors naming the field, and take turns on the engine fairly across clients.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { lstat, mkdtemp, readdir, readFile, realpath, rm, stat, unlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatContent, ChatMessage, Engine, EngineImage, GenerateRequest } from '../types';
import { EngineError } from '../errors';
import { writeFileAtomic } from '../../workspace/fsutil';
import { FairQueue } from './fairQueue';

export interface OpenAIServerOptions {
  engine: Engine;
  /** The model id clients name (default: the engine's model basename). */
  modelId?: string;
  host?: string;
  port?: number;
  /**
   * Bearer key every request must send (`Authorization: Bearer KEY`). Default: a fresh random key, returned as
   * `apiKey`. `null` turns the check off: only for a caller that owns both ends (tests on loopback).
   */
  apiKey?: string | null;
  /** Folders whose files a request may name as local images (after resolving symlinks). Default: none. */
  imageRoots?: string[];
  /** Origins of browser pages allowed to call (default none: a request carrying any other Origin is refused). */
  allowOrigins?: string[];
  /** Where decoded data-URL images are written (default: a private 0700 temp folder, removed on close). */
  mediaDir?: string;
  /** Largest request body in bytes (default 64 MiB). */
  maxBodyBytes?: number;
  /** Bounds on what one request may ask for. */
  limits?: Partial<RequestLimits>;
  /** Requests given to the engine at once (default 1: local engines run one at a time anyway). */
  concurrency?: number;
}

export interface RequestLimits {
  /** Largest `max_tokens` / `max_completion_tokens`. */
  maxTokens: number;
  /** Largest `mm_processor_kwargs.max_pixels` (and `min_pixels`): Qwen2.5-VL's own default, 16384 × 28 × 28. */
  maxPixels: number;
  /** Most requests one client may have waiting for the engine. */
  maxQueuedPerClient: number;
  /** Most images in one request (each is decoded and resized by the engine). */
  maxImages: number;
}

export const DEFAULT_LIMITS: RequestLimits = { maxTokens: 32768, maxPixels: 16384 * 28 * 28, maxQueuedPerClient: 64, maxImages: 256 };

export interface OpenAIServer {
  url: string;
  port: number;
  /** The bearer key clients must send, or null when the check is off. */
  apiKey: string | null;
  /** Where data-URL images are cached. */
  mediaDir: string;
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

/** Images written by this server, by content id: only these are trusted in the cache folder (never a file's size). */
interface MediaCache {
  dir: string;
  written: Map<string, { size: number; used: number }>;
  bytes: number;
  maxBytes: number;
  /** Ids the requests in flight use: never evicted under them. */
  inUse: Map<string, number>;
}

/** Most bytes of decoded images kept on disk; least recently used ones beyond it are removed. */
const MEDIA_CACHE_BYTES = 1024 * 1024 * 1024;

const NOT_READABLE = 'image file is not available: a local image must be a file under one of the allowed image roots (serve-model --image-root DIR)';

async function imageFrom(url: string, cache: MediaCache, roots: string[], where: string, used: string[]): Promise<EngineImage> {
  const m = /^data:([\w/+.-]+);base64,(.*)$/s.exec(url);
  if (m) {
    const buf = Buffer.from(m[2]!, 'base64');
    if (buf.length === 0) throw new HttpError(400, `${where}: empty image data`);
    const sha = createHash('sha256').update(buf).digest('hex');
    const id = `${sha}.${EXT[m[1]!] ?? 'png'}`;
    const p = path.join(cache.dir, id);
    cache.inUse.set(id, (cache.inUse.get(id) ?? 0) + 1);
    used.push(id);
    // Content-addressed, and trusted only when this server wrote it: whatever else sits at that name (a planted file
    // of the same size) is replaced. Written atomically so concurrent requests never read a partial file.
    if (!cache.written.has(id)) {
      // A cache in a private temp folder that dies with the server: atomic for concurrent readers, no fsync.
      await writeFileAtomic(p, buf, { mode: 0o600, durable: false });
      cache.written.set(id, { size: buf.length, used: Date.now() });
      cache.bytes += buf.length;
      await evict(cache);
    } else cache.written.get(id)!.used = Date.now();
    return { id, path: p, width: 0, height: 0, mime: m[1]! };
  }
  const isFileUrl = url.startsWith('file://');
  if (isFileUrl || path.isAbsolute(url)) {
    let p: string;
    try {
      p = isFileUrl ? fileURLToPath(url) : url;
    } catch {
      throw new HttpError(400, `${where}: ${NOT_READABLE}`);
    }
    // One answer for every refusal (outside the roots, missing, not a file), so errors never tell whether a path exists.
    const real = await realpath(p).catch(() => null);
    const inside = real !== null && roots.some((r) => real === r || real.startsWith(r.endsWith(path.sep) ? r : r + path.sep));
    const s = inside ? await stat(real).catch(() => null) : null;
    if (!s?.isFile()) throw new HttpError(400, `${where}: ${NOT_READABLE}`);
    return { id: path.basename(real!), path: real!, width: 0, height: 0 };
  }
  throw new HttpError(400, `${where}: image_url must be a data: URL or a local file under an allowed image root (no downloads)`);
}

const MEDIA_DIR_PREFIX = 'loupe-serve-media-';
/** The pid of the server that owns a private media folder, so a later server can tell a killed one's leftovers. */
const OWNER_FILE = '.owner-pid';

/**
 * Remove this user's media folders left by servers that were killed before they could clean up (their owner pid is
 * gone). Only folders (not symlinks) owned by this user, with an owner file, are touched.
 */
async function removeStaleMediaDirs(): Promise<void> {
  const uid = process.getuid?.();
  const names = await readdir(os.tmpdir()).catch(() => [] as string[]);
  for (const n of names) {
    if (!n.startsWith(MEDIA_DIR_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), n);
    const st = await lstat(dir).catch(() => null);
    if (!st?.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
    const pid = Number((await readFile(path.join(dir, OWNER_FILE), 'utf8').catch(() => '')).trim());
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch (e) {
      alive = (e as NodeJS.ErrnoException).code === 'EPERM';
    }
    if (!alive) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function evict(cache: MediaCache): Promise<void> {
  if (cache.bytes <= cache.maxBytes) return;
  const old = [...cache.written.entries()].filter(([id]) => !cache.inUse.has(id)).sort((a, b) => a[1].used - b[1].used);
  for (const [id, e] of old) {
    if (cache.bytes <= cache.maxBytes) break;
    await unlink(path.join(cache.dir, id)).catch(() => undefined);
    cache.written.delete(id);
    cache.bytes -= e.size;
  }
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

async function parseRequest(body: Json, cache: MediaCache, roots: string[], limits: RequestLimits, used: string[]): Promise<{ req: GenerateRequest; stream: boolean; includeUsage: boolean }> {
  const msgs = body.messages;
  if (!Array.isArray(msgs) || msgs.length === 0) throw new HttpError(400, 'messages: must be a non-empty array');
  const messages: ChatMessage[] = [];
  let images = 0;
  for (const [i, m] of msgs.entries()) {
    if (!isObject(m)) throw new HttpError(400, `messages[${i}]: expected an object {role, content}, got ${m === null ? 'null' : Array.isArray(m) ? 'an array' : typeof m}`);
    const role = m.role;
    if (role !== 'system' && role !== 'user' && role !== 'assistant') {
      throw new HttpError(400, `messages[${i}].role: expected system, user or assistant, got ${JSON.stringify(role)}`);
    }
    const content: ChatContent[] = [];
    if (typeof m.content === 'string') content.push({ type: 'text', text: m.content });
    else if (Array.isArray(m.content)) {
      for (const [j, p] of (m.content as unknown[]).entries()) {
        const where = `messages[${i}].content[${j}]`;
        if (!isObject(p)) throw new HttpError(400, `${where}: expected an object {type, …}`);
        if (p.type === 'text') {
          if (p.text !== undefined && typeof p.text !== 'string') throw new HttpError(400, `${where}.text: expected a string`);
          content.push({ type: 'text', text: p.text ?? '' });
        } else if (p.type === 'image_url') {
          if (++images > limits.maxImages) throw new HttpError(400, `${where}: more than ${limits.maxImages} images in one request`);
          const u = isObject(p.image_url) ? p.image_url.url : p.image_url;
          if (typeof u !== 'string') throw new HttpError(400, `${where}.image_url.url: missing`);
          content.push({ type: 'image', image: await imageFrom(u, cache, roots, where, used) });
        } else throw new HttpError(400, `${where}.type: ${JSON.stringify(p.type)} is not supported (text, image_url)`);
      }
    } else if (m.content !== null && m.content !== undefined) throw new HttpError(400, `messages[${i}].content: expected a string or an array`);
    messages.push({ role, content });
  }
  /** A number field, absent → `d`; out of [min, max] → 400 naming the field and the range. */
  const n = (k: string, d: number, min: number, max: number, integer = false, obj: Json = body, name = k): number => {
    const v = obj[k];
    if (v === undefined || v === null) return d;
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) throw new HttpError(400, `${name}: expected ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`);
    if (v < min || v > max) throw new HttpError(400, `${name}: must be between ${min} and ${max}, got ${v}`);
    return v;
  };
  const stopRaw = body.stop;
  const stop = stopRaw === undefined || stopRaw === null ? [] : Array.isArray(stopRaw) ? stopRaw : [stopRaw];
  if (stop.length > 16 || !stop.every((x): x is string => typeof x === 'string' && x.length > 0 && x.length <= 1000)) {
    throw new HttpError(400, 'stop: expected a string or up to 16 non-empty strings');
  }
  if (body.mm_processor_kwargs !== undefined && body.mm_processor_kwargs !== null && !isObject(body.mm_processor_kwargs)) throw new HttpError(400, 'mm_processor_kwargs: expected an object');
  const mmk = (body.mm_processor_kwargs ?? {}) as Json;
  const minPixels = n('min_pixels', NaN, 1, limits.maxPixels, true, mmk, 'mm_processor_kwargs.min_pixels');
  const maxPixels = n('max_pixels', NaN, 1, limits.maxPixels, true, mmk, 'mm_processor_kwargs.max_pixels');
  if (minPixels > maxPixels) throw new HttpError(400, `mm_processor_kwargs.min_pixels (${minPixels}) is above max_pixels (${maxPixels})`);
  const topK = n('top_k', -1, -1, 1_000_000, true);
  if (topK === 0) throw new HttpError(400, 'top_k: use -1 (off) or a positive integer, got 0');
  const seed = n('seed', NaN, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true);
  const req: GenerateRequest = {
    messages,
    maxTokens: n('max_completion_tokens', n('max_tokens', 512, 1, limits.maxTokens, true), 1, limits.maxTokens, true),
    temperature: n('temperature', 1, 0, 2),
    topP: n('top_p', 1, Number.MIN_VALUE, 1),
    topK,
    stop,
    ...(Number.isNaN(seed) ? {} : { seed }),
    ...(Number.isNaN(minPixels) ? {} : { minPixels }),
    ...(Number.isNaN(maxPixels) ? {} : { maxPixels }),
  };
  const so = (isObject(body.stream_options) ? body.stream_options : {}) as Json;
  return { req, stream: body.stream === true, includeUsage: so.include_usage === true };
}

/** How much past the limit is read and dropped so the 413 arrives; a client sending more than that is cut off. */
const DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * The body as a JSON object. Over `max` bytes: the rest is read and dropped (up to a hard cap) so the client gets the
 * 413 instead of a reset connection.
 */
function readBody(r: http.IncomingMessage, max: number): Promise<Json> {
  return new Promise((resolve, reject) => {
    const declared = Number(r.headers['content-length'] ?? NaN);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > max;
    r.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) over = true;
      if (!over) chunks.push(c);
      else if (size > max + DRAIN_BYTES) r.destroy();
    });
    r.on('end', () => {
      if (over) return reject(new HttpError(413, `request body is over the limit of ${max} bytes`));
      try {
        const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        if (!isObject(v)) throw new Error('not an object');
        resolve(v);
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
  // A private folder per server (mkdtemp: 0700, this user's), not one shared /tmp path every user can write to.
  const ownMediaDir = opts.mediaDir === undefined;
  if (ownMediaDir) await removeStaleMediaDirs();
  const mediaDir = opts.mediaDir ?? (await mkdtemp(path.join(os.tmpdir(), MEDIA_DIR_PREFIX)));
  if (ownMediaDir) await writeFile(path.join(mediaDir, OWNER_FILE), String(process.pid), { mode: 0o600 });
  const cache: MediaCache = { dir: mediaDir, written: new Map(), bytes: 0, maxBytes: MEDIA_CACHE_BYTES, inUse: new Map() };
  const roots = await Promise.all((opts.imageRoots ?? []).map(async (r) => path.resolve(await realpath(r).catch(() => r))));
  const allowOrigins = new Set(opts.allowOrigins ?? []);
  const apiKey = opts.apiKey === undefined ? randomBytes(24).toString('hex') : opts.apiKey;
  const limits: RequestLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const queue = new FairQueue(Math.max(1, opts.concurrency ?? 1), limits.maxQueuedPerClient);
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
    // Our own errors and the engine's are meant for the client; anything else is a bug whose text (a raw TypeError,
    // a path) is not.
    const message = e instanceof HttpError || e instanceof EngineError ? e.message : 'internal server error';
    if (!res.headersSent) send(res, status, { error: { message, type, code: status } });
    else res.end();
  };
  const keyMatches = (header: string | undefined): boolean => {
    if (apiKey === null) return true;
    const m = /^Bearer (.+)$/i.exec(header ?? '');
    if (!m) return false;
    const a = createHash('sha256').update(m[1]!).digest();
    const b = createHash('sha256').update(apiKey).digest();
    return timingSafeEqual(a, b);
  };

  const server = http.createServer((rq, res) => {
    void (async () => {
      try {
        let url: URL;
        try {
          url = new URL(rq.url ?? '/', 'http://x');
        } catch {
          throw new HttpError(400, 'malformed request URL');
        }
        // A page on another site may send "simple" requests (text/plain POSTs) without a preflight: refuse any
        // Origin not named, before reading anything.
        const origin = rq.headers.origin;
        if (origin !== undefined && !allowOrigins.has(origin)) throw new HttpError(403, `origin ${origin} is not allowed`, 'permission_error');
        if (!keyMatches(rq.headers.authorization)) {
          res.setHeader('www-authenticate', 'Bearer');
          throw new HttpError(401, 'missing or wrong API key: send the key serve-model printed at start as "Authorization: Bearer KEY"', 'authentication_error');
        }
        if (rq.method === 'GET' && url.pathname === '/v1/models') {
          const info = engine.info();
          send(res, 200, { object: 'list', data: [{ id: modelId, object: 'model', created, owned_by: 'loupe', root: info.model, device: info.device }] });
          return;
        }
        if (url.pathname !== '/v1/chat/completions') throw new HttpError(404, `no route ${rq.method} ${url.pathname}`, 'not_found');
        if (rq.method !== 'POST') throw new HttpError(405, 'use POST');
        const ctype = (rq.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (ctype !== 'application/json') {
          rq.resume();
          throw new HttpError(415, `content-type must be application/json, got ${JSON.stringify(rq.headers['content-type'] ?? '')}`);
        }
        const body = await readBody(rq, maxBody);
        if (body.model !== undefined && body.model !== modelId) throw new HttpError(404, `model ${JSON.stringify(body.model)} is not served here (serving ${modelId})`, 'not_found');
        // Fair turns per client: the OpenAI `user` field when given (several clients on one host), else the address.
        if (body.user !== undefined && (typeof body.user !== 'string' || body.user.length === 0 || body.user.length > 256)) throw new HttpError(400, 'user: expected a non-empty string');
        const client = typeof body.user === 'string' ? `user:${body.user}` : `addr:${rq.socket.remoteAddress ?? ''}`;
        if (queue.waitingFor(client) >= queue.maxWaitingPerClient) {
          throw new HttpError(429, `this client already has ${queue.maxWaitingPerClient} requests waiting; wait for some to finish`, 'rate_limit_error');
        }
        const ac = new AbortController();
        // the client went away: stop generating (or give up its place in line)
        res.on('close', () => {
          if (!res.writableFinished) ac.abort();
        });
        const used: string[] = [];
        let release: (() => void) | null = null;
        try {
          const { req, stream, includeUsage } = await parseRequest(body, cache, roots, limits, used);
          release = await queue.acquire(client, ac.signal);
          await respond(res, req, stream, includeUsage, ac);
        } finally {
          release?.();
          for (const id of used) {
            const left = (cache.inUse.get(id) ?? 1) - 1;
            if (left > 0) cache.inUse.set(id, left);
            else cache.inUse.delete(id);
          }
        }
      } catch (e) {
        sendError(res, e);
      }
    })();
  });

  async function respond(res: http.ServerResponse, req: GenerateRequest, stream: boolean, includeUsage: boolean, ac: AbortController): Promise<void> {
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
  }

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`,
    port,
    apiKey,
    mediaDir,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      // Cleaned on the way out: the private folder entirely, a caller's folder only of what this server wrote.
      if (ownMediaDir) await rm(mediaDir, { recursive: true, force: true });
      else for (const id of cache.written.keys()) await unlink(path.join(mediaDir, id)).catch(() => undefined);
    },
  };
}

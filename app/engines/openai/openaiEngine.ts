/**
 * An engine over any OpenAI-compatible chat completions server (vLLM, SGLang, `loupe serve-model`).
 *
 * Images go as data URLs; a video as its frames (one image part each). Responses are always streamed (SSE) so a
 * stalled server is noticed (`idleTimeoutMs` between chunks) and `onToken` sees text as it comes. Sampling knobs the
 * OpenAI schema lacks (`top_k`) travel in the request body as vLLM/SGLang read them.
 *
 * Retries: 429, 5xx, connection refused/reset, timeouts and streams that drop before any text was handed to `onToken`
 * are retried with exponential backoff (Retry-After honoured) up to `maxRetries`. A stream that drops after text was
 * already streamed to the caller is not retried (the caller has seen it): it fails with EngineError('network').
 * Every failure is an EngineError naming the server, the status and the attempt count.
 *
 * The request is one `node:http(s)` POST of the body `chatCompletionBody` builds (serialized once, whatever the
 * retries) and the SSE stream is read line by line here. The OpenAI SDK's request and stream layers cost ~5 ms per
 * call on this 2-core machine against a raw `fetch` of the same body, and `fetch` itself ~2 ms of client CPU per
 * call more than `node:http` (tests/bench/sweep.bench.ts measures the runner against such a raw client); the
 * SDK's retries and timeouts were already ours. Connections are kept alive (Node's default agents).
 */
import { readFile } from 'node:fs/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { ChatMessage, Engine, EngineImage, EngineInfo, GenerateRequest, GenerateResult } from '../types';
import { EngineError } from '../errors';
import { pause } from '../../sleep';

export interface OpenAIEngineOptions {
  /** e.g. http://127.0.0.1:8000/v1 */
  baseURL: string;
  model: string;
  apiKey?: string;
  /** Requests in flight at once (default 4); more wait their turn. */
  concurrency?: number;
  /** Deadline for one attempt until the first chunk arrives (default 120 s). */
  timeoutMs?: number;
  /** Longest gap between stream chunks before the attempt is abandoned (default = timeoutMs). */
  idleTimeoutMs?: number;
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** First backoff step in ms (default 500; doubles each retry, with jitter; capped at 20 s). */
  retryBaseMs?: number;
  /** Merged into every request body (e.g. `{ repetition_penalty: 1.05 }`, `{ chat_template_kwargs: … }`). */
  extraBody?: Record<string, unknown>;
  /** Also cut at stop strings client-side, in case a server ignores `stop` (default true). */
  enforceStop?: boolean;
}

type Part = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

const MIME: Record<string, string> = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp', '.gif': 'image/gif' };

async function dataUrl(img: EngineImage): Promise<string> {
  // A held image (no file yet) is sent as the PNG bytes its ImageOps encodes once, the same bytes a keep writes.
  if (img.path === undefined) {
    if (!img.bytes) throw new EngineError('bad_request', `image ${img.id} has neither a file nor bytes`);
    const bytes = await img.bytes();
    return `data:${img.mime ?? 'image/png'};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}`;
  }
  const mime = img.mime ?? MIME[path.extname(img.path).toLowerCase()] ?? 'image/png';
  let buf: Buffer;
  try {
    buf = await readFile(img.path);
  } catch {
    throw new EngineError('bad_request', `image ${img.id} not found at ${img.path}`);
  }
  return `data:${mime};base64,${buf.toString('base64')}`;
}

/** OpenAI chat messages for a conversation: text parts as text, images as data URLs, videos as their frames. */
export async function toOpenAIMessages(messages: ChatMessage[]): Promise<Array<{ role: string; content: string | Part[] }>> {
  const out: Array<{ role: string; content: string | Part[] }> = [];
  for (const m of messages) {
    const parts: Part[] = [];
    for (const c of m.content) {
      if (c.type === 'text') parts.push({ type: 'text', text: c.text });
      else if (c.type === 'image') parts.push({ type: 'image_url', image_url: { url: await dataUrl(c.image) } });
      else for (const f of c.frames) parts.push({ type: 'image_url', image_url: { url: await dataUrl(f) } });
    }
    // plain strings for text-only messages: some servers' templates do not accept part lists for system/assistant
    const textOnly = parts.every((p) => p.type === 'text');
    out.push({ role: m.role, content: textOnly ? parts.map((p) => (p as { text: string }).text).join('') : parts });
  }
  return out;
}

/** The streamed chat-completions request body this engine sends for `req` (the sweep benchmark's raw client sends the same). */
export function chatCompletionBody(model: string, req: GenerateRequest, messages: Array<{ role: string; content: string | Part[] }>, extraBody?: Record<string, unknown>): Record<string, unknown> {
  return {
    model,
    messages,
    max_tokens: req.maxTokens,
    temperature: req.temperature,
    top_p: req.topP,
    ...(req.topK > 0 ? { top_k: req.topK } : {}),
    ...(req.stop.length ? { stop: req.stop } : {}),
    ...(req.seed !== undefined ? { seed: req.seed } : {}),
    ...extraBody,
    stream: true,
    stream_options: { include_usage: true },
  };
}

class Semaphore {
  private waiting: Array<() => void> = [];
  private busy = 0;
  constructor(private readonly max: number) {}
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.busy >= this.max) {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          this.waiting = this.waiting.filter((w) => w !== go);
          reject(new EngineError('cancelled', 'cancelled while waiting for a free request slot'));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(go);
      });
    }
    this.busy++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.busy--;
      this.waiting.shift()?.();
    };
  }
}

interface AttemptError {
  error: EngineError;
  retryAfterMs?: number;
}

/** Why an OpenAI-compatible engine has no attention maps (one wording for the engine, the control and the CLI). */
export const ATTENTION_UNAVAILABLE = 'unavailable: the server does not expose attention (maps need a local ONNX model with an analysis decoder)';

export class OpenAIEngine implements Engine {
  private readonly url: URL;
  private readonly headers: Record<string, string>;
  private readonly sem: Semaphore;
  private readonly o: Required<Omit<OpenAIEngineOptions, 'apiKey' | 'extraBody'>> & Pick<OpenAIEngineOptions, 'extraBody'>;

  constructor(opts: OpenAIEngineOptions) {
    const timeoutMs = opts.timeoutMs ?? 120_000;
    this.o = {
      baseURL: opts.baseURL,
      model: opts.model,
      concurrency: opts.concurrency ?? 4,
      timeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs ?? timeoutMs,
      maxRetries: opts.maxRetries ?? 3,
      retryBaseMs: opts.retryBaseMs ?? 500,
      enforceStop: opts.enforceStop ?? true,
      ...(opts.extraBody ? { extraBody: opts.extraBody } : {}),
    };
    // retries and timeouts are ours (the SDK cannot retry a stream that dropped mid-way)
    this.url = new URL(`${opts.baseURL.replace(/\/+$/, '')}/chat/completions`);
    this.headers = { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${opts.apiKey ?? 'EMPTY'}` };
    this.sem = new Semaphore(this.o.concurrency);
  }

  info(): EngineInfo {
    return { id: `openai:${this.o.baseURL}#${this.o.model}`, kind: 'openai', model: this.o.model };
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    const t0 = Date.now();
    const cancelled = (text = ''): GenerateResult => ({
      text,
      promptTokens: 0,
      completionTokens: 0,
      finishReason: 'cancelled',
      latencyMs: Date.now() - t0,
    });
    if (req.signal?.aborted) return cancelled();
    const body = JSON.stringify(chatCompletionBody(this.o.model, req, await toOpenAIMessages(req.messages), this.o.extraBody));
    let release: (() => void) | null = null;
    try {
      release = await this.sem.acquire(req.signal);
    } catch (e) {
      if (req.signal?.aborted) return cancelled();
      throw e;
    }
    try {
      let last: AttemptError | null = null;
      let attempts = 0;
      for (let attempt = 0; attempt <= this.o.maxRetries; attempt++) {
        attempts++;
        if (attempt > 0) {
          const backoff = Math.min(20_000, this.o.retryBaseMs * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5);
          await pause(Math.max(backoff, last?.retryAfterMs ?? 0), req.signal);
          if (req.signal?.aborted) return cancelled();
        }
        const r = await this.attempt(body, req, t0);
        if ('result' in r) return r.result;
        last = r;
        if (!r.error.retryable) break;
      }
      const e = last!.error;
      throw new EngineError(e.kind, `${e.message} (${this.o.baseURL}, model ${this.o.model}; ${attempts === 1 && !e.retryable ? 'not retryable' : `gave up after ${attempts} attempt${attempts > 1 ? 's' : ''}`})`, {
        ...(e.status !== undefined ? { status: e.status } : {}),
        retryable: false,
        cause: e,
      });
    } finally {
      release();
    }
  }

  private async attempt(body: string, req: GenerateRequest, t0: number): Promise<{ result: GenerateResult } | AttemptError> {
    const ac = new AbortController();
    let why: 'timeout' | 'idle' | null = null;
    let timer: ReturnType<typeof setTimeout> = setTimeout(() => ((why = 'timeout'), ac.abort()), this.o.timeoutMs);
    const kick = () => {
      clearTimeout(timer);
      timer = setTimeout(() => ((why = 'idle'), ac.abort()), this.o.idleTimeoutMs);
    };
    const onAbort = () => ac.abort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    let text = '';
    let shown = 0;
    let finish: string | null = null;
    let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
    try {
      let res: IncomingMessage;
      try {
        res = await post(this.url, this.headers, body, ac.signal);
      } catch (e) {
        if (ac.signal.aborted) throw e;
        return this.dropped(text, shown, `connection failed: ${(e as Error).message}`);
      }
      res.setEncoding('utf8');
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        const retryable = status === 429 || status === 408 || status >= 500;
        const ra = res.headers['retry-after'];
        const retryAfterMs = typeof ra === 'string' && ra && Number.isFinite(Number(ra)) ? Number(ra) * 1000 : undefined;
        let errText = '';
        try {
          for await (const part of res) errText += part as string;
        } catch {
          // the status is what counts; a cut-off error body only loses its message
        }
        return {
          error: new EngineError('http', `HTTP ${status}: ${serverMessage(errText, res.statusMessage ?? '')}`, { status, retryable }),
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        };
      }
      kick();
      for await (const chunk of sseChunks(res as AsyncIterable<string>)) {
        kick();
        if (chunk.usage) usage = chunk.usage;
        const ch = chunk.choices?.[0];
        if (!ch) continue;
        const d = ch.delta?.content ?? '';
        if (d) {
          text += d;
          if (this.o.enforceStop && req.stop.length) {
            const cut = firstStop(text, req.stop);
            if (cut >= 0) {
              text = text.slice(0, cut);
              finish = 'stop';
              if (req.onToken && text.length > shown) req.onToken(text.slice(shown));
              shown = text.length;
              ac.abort();
              break;
            }
          }
          if (req.onToken) {
            const safe = this.o.enforceStop ? text.length - heldBack(text, req.stop) : text.length;
            if (safe > shown) {
              req.onToken(text.slice(shown, safe));
              shown = safe;
            }
          }
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
      if (req.onToken && text.length > shown) req.onToken(text.slice(shown));
      if (req.signal?.aborted && finish === null) return { result: this.result(text, 'cancelled', usage, t0) };
      if (finish === null) {
        // the server closed the stream without a finish_reason: a dropped connection
        return this.dropped(text, shown, 'the stream ended without a finish_reason');
      }
      return { result: this.result(text, finish === 'length' ? 'length' : 'stop', usage, t0) };
    } catch (e) {
      if (finish === 'stop' && ac.signal.aborted) return { result: this.result(text, 'stop', usage, t0) };
      if (req.signal?.aborted) return { result: this.result(text, 'cancelled', usage, t0) };
      if (why !== null) {
        const msg = why === 'timeout' ? `no response within ${this.o.timeoutMs} ms` : `the stream stalled for ${this.o.idleTimeoutMs} ms`;
        if (shown > 0) return { error: new EngineError('timeout', `${msg} after ${shown} chars were streamed`, { retryable: false }) };
        return { error: new EngineError('timeout', msg, { retryable: true }) };
      }
      // a socket reset inside the SSE body surfaces as a plain error from the stream reader
      return this.dropped(text, shown, `stream failed: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
  }

  private dropped(text: string, shown: number, why: string): AttemptError {
    if (shown > 0) {
      return { error: new EngineError('network', `${why} after ${shown} chars were streamed (${JSON.stringify(text.slice(-40))}…); not retried`, { retryable: false }) };
    }
    return { error: new EngineError('network', why, { retryable: true }) };
  }

  private result(text: string, finish: GenerateResult['finishReason'], usage: { prompt_tokens?: number; completion_tokens?: number } | undefined, t0: number): GenerateResult {
    return {
      text,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      finishReason: finish,
      latencyMs: Date.now() - t0,
    };
  }

  /** An OpenAI-compatible server returns text, never the model's attention: say so (the UI shows this line). */
  attention(): Promise<never> {
    return Promise.reject(new EngineError('unavailable', ATTENTION_UNAVAILABLE));
  }

  async dispose(): Promise<void> {
    // nothing held: HTTP connections close with their requests
  }
}

interface StreamChunk {
  choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string } | string;
}

/** The message of an error response: the OpenAI shape's `error.message` (or `message`, or `detail`), else the text, else the status text. */
function serverMessage(text: string, statusText: string): string {
  try {
    const v = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const m = typeof v.error === 'string' ? v.error : (v.error?.message ?? v.message ?? v.detail);
    if (typeof m === 'string' && m) return m;
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 500) || statusText || 'no message';
}

/**
 * The JSON chunks of an SSE stream (`data:` lines; an event ends at a blank line; `[DONE]` ends the stream). A chunk
 * that carries `error` (vLLM reports a failure inside the stream that way) throws, as a dropped stream does.
 */
async function* sseChunks(body: AsyncIterable<string>): AsyncGenerator<StreamChunk> {
  let buf = '';
  let data: string[] = [];
  const flush = function* (): Generator<StreamChunk | 'done'> {
    if (!data.length) return;
    const payload = data.join('\n');
    data = [];
    if (payload === '[DONE]') {
      yield 'done';
      return;
    }
    let chunk: StreamChunk;
    try {
      chunk = JSON.parse(payload) as StreamChunk;
    } catch {
      throw new Error(`the server sent a chunk that is not JSON: ${payload.slice(0, 120)}`);
    }
    if (chunk.error) throw new Error(`the server reported an error in the stream: ${typeof chunk.error === 'string' ? chunk.error : (chunk.error.message ?? JSON.stringify(chunk.error))}`);
    yield chunk;
  };
  let ended = false;
  const line = function* (l: string): Generator<StreamChunk> {
    if (l === '') {
      for (const c of flush()) {
        if (c === 'done') ended = true;
        else if (!ended) yield c;
      }
    } else if (l.startsWith('data:')) data.push(l.charCodeAt(5) === 32 ? l.slice(6) : l.slice(5));
    // other fields (event:, id:, retry:) and comments (":") carry nothing the engine uses
  };
  // Read to the end even after [DONE]: a response read to its end leaves its connection to be reused.
  for await (const part of body) {
    buf += part;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const l = buf.charCodeAt(nl - 1) === 13 ? buf.slice(0, nl - 1) : buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      yield* line(l);
    }
  }
  // the stream ended: a last line without its newline, and a last event without its blank line
  if (buf) yield* line(buf);
  yield* line('');
}

/** POST `body` and resolve with the response once its headers arrived (keep-alive: Node's default agents). */
function post(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

function firstStop(text: string, stops: readonly string[]): number {
  let cut = -1;
  for (const s of stops) {
    if (!s) continue;
    const i = text.indexOf(s);
    if (i >= 0 && (cut < 0 || i < cut)) cut = i;
  }
  return cut;
}

/** Length of the longest tail of `text` that could be the start of a stop string (not shown yet). */
function heldBack(text: string, stops: readonly string[]): number {
  let hold = 0;
  for (const s of stops) {
    for (let k = Math.min(s.length - 1, text.length); k > hold; k--) {
      if (text.endsWith(s.slice(0, k))) {
        hold = k;
        break;
      }
    }
  }
  return hold;
}

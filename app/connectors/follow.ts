/**
 * Generic log following by polling `status` + `logs(offset)`. Used by every connector (Ray adds a WebSocket path).
 * Guarantees: text is delivered in whole lines, each byte exactly once (offsets only advance past delivered bytes),
 * transient errors (dropped connections) are retried from the same offset, and it always ends: terminal state,
 * vanished job, dispose, or a non-transient error.
 */
import {
  ConnectorError,
  isTerminal,
  type FollowHandle,
  type FollowOptions,
  type FollowResult,
  type JobStatus,
  type LogSlice,
} from './types';
import { pause } from '../sleep';

export interface Pollable {
  status(id: string): Promise<JobStatus>;
  logs(id: string, offset?: number): Promise<LogSlice>;
  /** Optional: status and log bytes in one round trip (status read first). */
  poll?(id: string, offset: number): Promise<{ status: JobStatus; slice: LogSlice }>;
}

/** Splits a byte stream into whole lines; keeps the partial tail. */
export class LineAssembler {
  private pending: Buffer = Buffer.alloc(0);
  /** Offset of the first byte not yet delivered. */
  delivered: number;
  constructor(offset: number) {
    this.delivered = offset;
  }
  /** Bytes read but not yet delivered (the partial last line). */
  get pendingBytes(): number {
    return this.pending.length;
  }
  /** Add bytes; returns whole lines (possibly '') to deliver. */
  push(data: Buffer): string {
    if (data.length === 0) return '';
    const all = this.pending.length ? Buffer.concat([this.pending, data]) : data;
    const cut = all.lastIndexOf(0x0a);
    if (cut < 0) {
      this.pending = all;
      return '';
    }
    const out = all.subarray(0, cut + 1);
    this.pending = Buffer.from(all.subarray(cut + 1));
    this.delivered += out.length;
    return out.toString('utf8');
  }
  /** Flush the partial tail (at job end). */
  flush(): string {
    if (!this.pending.length) return '';
    const out = this.pending.toString('utf8');
    this.delivered += this.pending.length;
    this.pending = Buffer.alloc(0);
    return out;
  }
}

function asConnectorError(e: unknown, where: string): ConnectorError {
  if (e instanceof ConnectorError) return e;
  return new ConnectorError('backend', where, e instanceof Error ? e.message : String(e));
}

export function pollFollow(source: Pollable, id: string, options: FollowOptions = {}): FollowHandle {
  const ac = new AbortController();
  const pollMs = options.pollMs ?? 1000;
  const maxRetries = options.maxRetries ?? 8;
  const unknownLimit = options.unknownLimit ?? 3;
  const lines = new LineAssembler(options.offset ?? 0);
  let readOffset = options.offset ?? 0;
  let last: JobStatus = { id, state: 'unknown', rawState: '' };

  const emit = (text: string): void => {
    if (text) options.onText?.(text, lines.delivered);
  };
  const readOnce = async (): Promise<number> => {
    const slice = await source.logs(id, readOffset);
    readOffset = slice.nextOffset;
    emit(lines.push(slice.data));
    return slice.data.length;
  };

  const run = async (): Promise<FollowResult> => {
    let failures = 0;
    let unknowns = 0;
    const end = (reason: FollowResult['reason'], error?: ConnectorError): FollowResult => {
      if (reason !== 'disposed') emit(lines.flush());
      return { status: last, offset: lines.delivered, reason, ...(error ? { error } : {}) };
    };
    while (!ac.signal.aborted) {
      try {
        let st: JobStatus;
        if (source.poll) {
          const r = await source.poll(id, readOffset);
          st = r.status;
          readOffset = r.slice.nextOffset;
          if (st.state !== last.state || st.rawState !== last.rawState) options.onStatus?.(st);
          last = st;
          emit(lines.push(r.slice.data));
        } else {
          st = await source.status(id);
          if (st.state !== last.state || st.rawState !== last.rawState) options.onStatus?.(st);
          last = st;
          await readOnce();
        }
        failures = 0;
        if (isTerminal(st.state)) {
          // The backend may still be flushing the log after the state flips (Slurm writes the CANCELLED banner late).
          for (let i = 0; i < 5 && !ac.signal.aborted; i++) {
            await pause(Math.min(pollMs, 250), ac.signal);
            if ((await readOnce()) === 0 && i >= 1) break;
          }
          return end('terminal');
        }
        if (st.state === 'unknown') {
          unknowns += 1;
          if (unknowns >= unknownLimit) return end('vanished');
        } else unknowns = 0;
      } catch (e) {
        const err = asConnectorError(e, `follow ${id}`);
        if (err.code === 'not-found') {
          unknowns += 1;
          last = { id, state: 'unknown', rawState: 'not-found', message: err.message };
          if (unknowns >= unknownLimit) return end('vanished', err);
        } else if (err.transient && failures < maxRetries) {
          failures += 1;
          options.onWarning?.(`${err.message} (retry ${failures}/${maxRetries} from byte ${readOffset})`);
          await pause(Math.min(pollMs * 2 ** (failures - 1), 10_000), ac.signal);
          continue;
        } else {
          return end('error', err);
        }
      }
      await pause(pollMs, ac.signal);
    }
    return end('disposed');
  };

  const done = run().catch((e: unknown) => ({
    status: last,
    offset: lines.delivered,
    reason: 'error' as const,
    error: asConnectorError(e, `follow ${id}`),
  }));
  return { done, dispose: () => ac.abort() };
}

/** Async-iterator view of a follow: yields text chunks; `return()` disposes. The final result is on `.result`. */
export function followIterator(
  start: (handlers: FollowOptions) => FollowHandle,
  options: FollowOptions = {},
): AsyncIterableIterator<string> & { result: Promise<FollowResult> } {
  const queue: string[] = [];
  let wake: (() => void) | null = null;
  let finished = false;
  const handle = start({
    ...options,
    onText: (t, o) => {
      options.onText?.(t, o);
      queue.push(t);
      wake?.();
    },
  });
  const result = handle.done.then((r) => {
    finished = true;
    wake?.();
    return r;
  });
  const it = {
    result,
    [Symbol.asyncIterator]() {
      return it;
    },
    async next(): Promise<IteratorResult<string>> {
      for (;;) {
        const v = queue.shift();
        if (v !== undefined) return { value: v, done: false };
        if (finished) return { value: undefined, done: true };
        await new Promise<void>((r) => (wake = r));
        wake = null;
      }
    },
    async return(): Promise<IteratorResult<string>> {
      handle.dispose();
      await result;
      return { value: undefined, done: true };
    },
  };
  return it;
}

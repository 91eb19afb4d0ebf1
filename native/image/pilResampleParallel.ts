/**
 * Pillow-exact bicubic resize (`pilResample`) split across worker threads: each worker computes a
 * band of output rows (its own horizontal pass over just the source rows that band reads, then the
 * vertical pass) from the source in a SharedArrayBuffer into a shared output. Every output row is
 * computed the same way whatever the split, so the bytes equal `pilResizeBicubicRGB`'s.
 *
 * The pool (one worker per core, at most 4) starts on the first large resize and stays warm; its
 * workers are unref'd (they never keep the process alive) and stop after a while idle. Until the
 * workers answer, and for small images (where posting costs more than it saves), the resize runs on
 * the calling thread in event-loop-friendly slices (`pilResizeBicubicRGBAsync`). A worker crash also
 * falls back to the calling thread, and so does every resize once the pool has failed to start twice.
 */
import os from 'node:os';
import { WorkerCrashError, WorkerPool } from '../workerHost/pool';
import { workerFile } from '../../app/paths';
import { pilResizeBicubicRGB, pilResizeBicubicRGBAsync } from './pilResample';
import type { RowsJob } from './pilResampleWorker';

type Api = { ping: (a: null) => boolean; rows: (a: RowsJob) => boolean };

/**
 * Below this many multiply-adds (about 10 ms on one core with the WebAssembly kernels; a 4K
 * resize is ~280 M) the calling thread does it.
 */
const MIN_PARALLEL_OPS = 40_000_000;

let pool: WorkerPool<Api> | null = null;
/** Resolves when every worker has answered a ping (null: not started or since stopped). */
let warm: Promise<boolean> | null = null;
let ready = false;
/** Failed starts in a row; after MAX_FAILED_STARTS the calling thread does every resize. */
let failedStarts = 0;
const MAX_FAILED_STARTS = 2;

/**
 * The shared copy of the source, kept between resizes while the pool is up: copying into memory
 * already touched is ~6x faster than into fresh pages (page faults dominate on this kind of VM).
 */
let staging: SharedArrayBuffer | null = null;
let stagingBusy = false;
let stagingTimer: ReturnType<typeof setTimeout> | null = null;
const STAGING_MAX = 64 << 20;
const IDLE_MS = 120_000;

/** Drop the staging buffer after IDLE_MS without parallel resizes. */
function armStagingDrop(): void {
  if (stagingTimer) clearTimeout(stagingTimer);
  stagingTimer = setTimeout(() => {
    stagingTimer = null;
    if (!stagingBusy) staging = null;
  }, IDLE_MS);
  stagingTimer.unref();
}

function workerCount(): number {
  const n = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.max(1, Math.min(4, n));
}

function getPool(): WorkerPool<Api> {
  pool ??= new WorkerPool<Api>({
    entry: workerFile('pilResample'),
    size: workerCount(),
    name: 'pil-resample',
    idleMs: IDLE_MS,
  });
  return pool;
}

/** Start the workers (if not started) and resolve true once all of them answer. */
export function warmPilResamplePool(): Promise<boolean> {
  const p = getPool();
  // An idle-stopped worker makes the pool not ready again: calls would wait for a fresh start.
  if (ready && p.liveWorkers === p.size) return Promise.resolve(true);
  if (!warm || p.liveWorkers < p.size) {
    ready = false;
    const w: Promise<boolean> = Promise.all(Array.from({ length: p.size }, () => p.call('ping', null))).then(
      () => {
        if (warm === w) ready = true;
        failedStarts = 0;
        return true;
      },
      () => {
        if (warm === w) warm = null;
        failedStarts++;
        return false;
      },
    );
    warm = w;
  }
  return warm;
}

/** Workers running now, and whether all have answered (resizes go to them only then). */
export function pilResamplePoolState(): { workers: number; ready: boolean } {
  return { workers: pool?.liveWorkers ?? 0, ready: ready && !!pool && pool.liveWorkers === pool.size };
}

/** Stop the workers (tests, shutdown). A later resize starts them again. */
export async function closePilResamplePool(): Promise<void> {
  const p = pool;
  pool = null;
  warm = null;
  ready = false;
  failedStarts = 0;
  staging = null;
  if (stagingTimer) clearTimeout(stagingTimer);
  stagingTimer = null;
  if (p) await p.close();
}

/** Multiply-adds of the resize, as the slicing in `pilResizeBicubicRGBAsync` counts them (roughly). */
function workOf(w: number, h: number, outW: number, outH: number): number {
  const taps = (a: number, b: number) => (a === b ? 0 : Math.ceil(2 * Math.max(1, a / b)) * 2 + 1);
  return 3 * (outW * Math.min(h, outH + 8) * taps(w, outW) + outW * outH * taps(h, outH));
}

export interface ParallelResizeOptions {
  /** Use workers only at or above this many multiply-adds (default about 10 ms of one core's work). */
  minOps?: number;
  /** Wait for the workers to start instead of running on the calling thread meanwhile (tests). */
  waitForWorkers?: boolean;
  /** Bands to split the rows into (default: the pool's size). */
  bands?: number;
}

/**
 * `pilResizeBicubicRGB`'s bytes, computed on worker threads for large images (see the file comment),
 * else on this thread in slices that never block the event loop for long. From the workers, the
 * result is a view of a SharedArrayBuffer that nothing else holds (Buffer.from and sharp take it).
 */
export async function pilResizeBicubicRGBParallel(src: Uint8Array, w: number, h: number, outW: number, outH: number, opts: ParallelResizeOptions = {}): Promise<Uint8Array> {
  // Validate here, so the workers only ever see good arguments.
  if (src.length !== w * h * 3 || !(outW >= 1 && outH >= 1 && Number.isInteger(outW) && Number.isInteger(outH)) || (outW === w && outH === h)) {
    return pilResizeBicubicRGB(src, w, h, outW, outH);
  }
  if (workOf(w, h, outW, outH) < (opts.minOps ?? MIN_PARALLEL_OPS) || (workerCount() < 2 && !opts.waitForWorkers)) {
    return pilResizeBicubicRGBAsync(src, w, h, outW, outH);
  }
  let started: Promise<boolean>;
  try {
    if (failedStarts >= MAX_FAILED_STARTS) throw new Error('the pool failed to start');
    started = warmPilResamplePool();
  } catch {
    // No workers here (e.g. a bundle without the worker file): this thread does it.
    failedStarts = MAX_FAILED_STARTS;
    return pilResizeBicubicRGBAsync(src, w, h, outW, outH);
  }
  if (!ready && !(opts.waitForWorkers && (await started))) return pilResizeBicubicRGBAsync(src, w, h, outW, outH);
  const p = getPool();
  // The staging buffer, unless another resize holds it (then a one-off buffer).
  const own = !stagingBusy;
  let shared: SharedArrayBuffer;
  if (own) {
    if (!staging || staging.byteLength < src.length) staging = new SharedArrayBuffer(src.length);
    shared = staging;
    stagingBusy = true;
  } else {
    shared = new SharedArrayBuffer(src.length);
  }
  try {
    new Uint8Array(shared, 0, src.length).set(src);
    // The workers write the output straight into its final buffer, and fault its fresh pages in
    // on their own threads; the caller gets a view of that shared memory (no copy).
    const out = new SharedArrayBuffer(outW * outH * 3);
    const bands = Math.max(1, Math.min(outH, opts.bands ?? p.size));
    await Promise.all(
      Array.from({ length: bands }, (_, i) => {
        const from = Math.floor((i * outH) / bands);
        const to = Math.floor(((i + 1) * outH) / bands);
        return p.call('rows', { src: shared, w, h, outW, outH, out, from, to });
      }),
    );
    return new Uint8Array(out);
  } catch (err) {
    if (!(err instanceof WorkerCrashError)) throw err;
    ready = false;
    warm = null;
    return pilResizeBicubicRGBAsync(src, w, h, outW, outH);
  } finally {
    if (own) {
      stagingBusy = false;
      if (staging && staging.byteLength > STAGING_MAX) staging = null;
      armStagingDrop();
    }
  }
}

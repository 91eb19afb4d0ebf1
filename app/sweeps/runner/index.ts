/**
 * The sweep runner: runs planned runs (app/sweeps/plan) through the agent loop, scores each sample with its
 * benchmark's reference scorer and appends one record per finished sample (written before it counts as done; fsync'd in the background) to the run's samples.jsonl.
 *
 * - concurrency: samples in flight are limited per engine (runs that share a model share its slots);
 * - resume: on start a run's recorded qids are skipped (the store's writer first repairs a torn tail), so a
 *   crash or `kill -9` loses at most the samples that were in flight and never duplicates one;
 * - retry: with `retryErrors`, records that ended in `engine_error`/`error` are dropped (atomic rewrite of the
 *   file) and their samples run again;
 * - cancel: aborting `signal` stops scheduling; in-flight episodes end as `cancelled` and are NOT recorded
 *   (they were not finished), so the next start runs them;
 * - progress: events with done/total, rate and ETA for the CLI's progress bar and the UI;
 * - look-ahead: while a sample's engine calls run, the next samples' question media are imported and resized
 *   (`prepareEpisodeMedia`, through the same ImageOps), so at concurrency 1 that work is off the critical path.
 *   At most `lookahead` samples (default: the engine's concurrency) are prepared beyond those running; a failing
 *   preparation is that sample's own `error` record; on cancel the prepared media stay unused in the
 *   content-addressed media store (a resume imports the same bytes to the same ids).
 */
import { setMaxListeners } from 'node:events';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunManifest, SampleRecord, Trajectory } from '../../contract/trajectory';
import type { Engine, EngineInfo } from '../../engines/types';
import type { ImageOps } from '../../tools/imageOps';
import type { BenchSample, LoadOptions } from '../../bench/types';
import { getAdapter, getScorer, scorerVersions } from '../../bench';
import { questionForSample } from '../../bench/adapters/options';
import { countCalls, prepareEpisodeMedia, runEpisode, type EpisodeEvent, type EpisodeMedia, type PreparedEpisodeMedia, type RunEpisodeOptions } from '../../agent';
import { getDialect } from '../../protocol';
import { isPyVisionDialect, pyvisionVariantOf, type PyVisionVariant } from '../../protocol/pyvision';
import { runPyVisionEpisode, type PyVisionEpisodeResult } from '../../agent/pyvisionEpisode';
import type { CodeSandboxFactory } from '../../tools/codeSandbox';
import { RunStore, SAMPLES_FILE, type RunHandle } from '../../workspace/runStore';
import { writeFileAtomic } from '../../workspace/fsutil';
import type { TailRepair } from '../../workspace/jsonl';
import { buildManifest, hashFiles, inShard, manifestConflicts, sweepLimits, type ModelSpec, type PlannedRun } from '../plan';

export * from './replay';
export * from './summary';

/** An engine ready for a run. `main/` (or a test) builds these; the runner never starts workers itself. */
export interface EngineLease {
  info: EngineInfo;
  /** The engine that runs `sample` (shared engines return one instance; replay engines one per sample). */
  engineFor(sample: BenchSample): Engine;
  /** Samples in flight at once on this engine. */
  concurrency: number;
  /** Content hash of the model (local folders, replay files). */
  modelHash?: { hash: string; method: string };
  dispose(): Promise<void>;
}

export type EngineFactory = (model: ModelSpec) => Promise<EngineLease>;

export type SweepEvent =
  | { type: 'run-start'; runId: string; name: string; dir: string; total: number; done: number; todo: number; resumed: boolean; repaired?: TailRepair | null; retried?: number }
  | { type: 'sample-start'; runId: string; qid: string }
  | { type: 'episode'; runId: string; qid: string; event: EpisodeEvent }
  | {
      type: 'sample';
      runId: string;
      qid: string;
      correct: boolean;
      score: number;
      stopReason: SampleRecord['stop_reason'];
      done: number;
      total: number;
      /** Samples finished in this session (excludes those already on disk). */
      doneThisSession: number;
      elapsedMs: number;
      samplesPerSec: number;
      /** Estimated time left for this run (null until a sample has finished). */
      etaMs: number | null;
    }
  | { type: 'warning'; runId: string; message: string }
  | { type: 'run-end'; runId: string; done: number; total: number; cancelled: boolean; error?: string };

export interface RunnerOptions {
  store: RunStore;
  imageOps: ImageOps;
  engines: EngineFactory;
  onEvent?: (e: SweepEvent) => void;
  signal?: AbortSignal;
  /** Run samples whose records ended in `engine_error`/`error` again. */
  retryErrors?: boolean;
  /** Default samples in flight per engine when the lease does not say (default 1). */
  concurrency?: number;
  /** Stop a run after this many engine errors in a row (default 5): a dead server must not fill a run with errors. */
  maxConsecutiveEngineErrors?: number;
  /** Extra load options for every adapter (e.g. `mediaCacheDir`). */
  loadOptions?: LoadOptions;
  /** Per engine call timeout (ms). */
  turnTimeoutMs?: number;
  /** Also emit per-episode events (tokens, calls) for live views. */
  episodeEvents?: boolean;
  /**
   * Runs PyVision code (native/pysandbox, wired by `main/`): one isolated Python process per sample, closed
   * (its folder removed) when the sample ends. Without it a pyvision run is refused before anything is written.
   */
  codeSandbox?: CodeSandboxFactory;
  /** PyVision runs: sandboxes (= samples) alive at once, whatever the engine's concurrency (default: CPU cores). */
  maxSandboxes?: number;
  /**
   * Samples whose question media are prepared (imported, resized) ahead of the running ones, so that work overlaps
   * the engine calls (default: the run's concurrency; 0 prepares each sample only when it starts). Not for pyvision.
   */
  lookahead?: number;
}

export interface RunOutcome {
  id: string;
  name: string;
  dir: string;
  manifest: RunManifest;
  /** Samples in this run (after sharding). */
  total: number;
  /** Samples recorded now. */
  done: number;
  cancelled: boolean;
  /** Set when the run stopped on an error (engine failing); the samples recorded so far stay. */
  error?: string;
}

/** Thrown before anything is written when a run cannot start (bad bench, missing data, conflicting manifest). */
export class RunSetupError extends Error {
  override name = 'RunSetupError';
}

const ERROR_STOPS = new Set<SampleRecord['stop_reason']>(['engine_error', 'error']);

/** Semaphore with FIFO order. */
class Slots {
  private free: number;
  private readonly waiters: Array<() => void> = [];
  constructor(n: number) {
    this.free = Math.max(1, n);
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiters.push(r));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.free++;
    };
  }
}

function episodeMedia(s: BenchSample): EpisodeMedia {
  if (s.media.frames && s.media.frames.length) return { videoFrames: s.media.frames };
  if (s.media.images && s.media.images.length) return { images: s.media.images };
  if (s.media.video) throw new Error(`sample ${s.qid} has a video file (${s.media.video}) but no extracted frames; extract frames into the benchmark folder first`);
  throw new Error(`sample ${s.qid} has no images or frames`);
}

/** The answer text the scorer reads: the final turn's text (or the last turn's, when the episode was cut off). */
export function predictionOf(t: Trajectory): string {
  return t.finalText ?? t.turns.at(-1)?.text ?? '';
}

/** Build the sample record for a finished episode, scored with the sample's scorer. */
export function sampleRecord(sample: BenchSample, t: Trajectory): SampleRecord {
  const { calls, toolErrors } = countCalls(t);
  const prediction = predictionOf(t);
  const failed = ERROR_STOPS.has(t.stopReason);
  const scorer = getScorer(sample.scorer);
  const r = failed ? { score: 0, correct: false, extracted: null as unknown, detail: undefined } : scorer.score(prediction, sample);
  return {
    qid: sample.qid,
    bench: sample.bench,
    ...(sample.category !== undefined ? { category: sample.category } : {}),
    question: sample.question,
    ...(sample.options ? { options: sample.options } : {}),
    answer: sample.answer,
    prediction,
    extracted: r.extracted ?? null,
    score: r.score,
    scores: { [scorer.name]: r.score },
    correct: r.correct,
    stop_reason: t.stopReason,
    calls,
    tool_errors: toolErrors,
    ...(t.latencyMs !== undefined ? { latency_ms: t.latencyMs } : {}),
    ...(t.error !== undefined ? { error: t.error } : {}),
    trajectory: t,
    // The image file names, as importers keep theirs: the sample table's search finds a sample by its image.
    extra: { scorer: scorer.name, ...(r.detail ? { scoreDetail: r.detail } : {}), ...(sample.media.images?.length ? { images: sample.media.images.map((f) => path.basename(f)) } : {}) },
  };
}

/** Load a benchmark for a run, with clear errors for an unknown bench or a missing data folder. */
export async function loadBench(run: PlannedRun, loadOptions: LoadOptions = {}): Promise<{ samples: BenchSample[]; all: number; info: import('../../bench/types').LoadInfo; revision: string }> {
  let adapter;
  try {
    adapter = getAdapter(run.bench.id);
  } catch (err) {
    throw new RunSetupError((err as Error).message);
  }
  const data = run.bench.data;
  let st;
  try {
    st = await fsp.stat(data);
  } catch {
    throw new RunSetupError(`benchmark data ${data} does not exist (--data names the ${adapter.id} folder; for loupe-synth make one with \`loupe synth --out DIR\`)`);
  }
  let loaded;
  try {
    loaded = await adapter.load(data, { ...loadOptions, ...(run.bench.options ?? {}), ...(run.settings.limit !== undefined ? { limit: run.settings.limit } : {}), seed: run.settings.seed });
  } catch (err) {
    throw new RunSetupError(`cannot load ${adapter.id} from ${data}: ${(err as Error).message}`);
  }
  const root = st.isDirectory() ? data : path.dirname(data);
  let revision: string;
  try {
    revision = (await hashFiles(root, loaded.info.files)).hash;
  } catch {
    revision = `unhashed:${loaded.info.format}`;
  }
  const samples = loaded.samples.filter((s) => inShard(s.qid, run.shard));
  return { samples, all: loaded.samples.length, info: loaded.info, revision };
}

/**
 * A kill between `createRun`'s mkdir and its manifest write leaves a folder with no manifest. With no samples in
 * it nothing can be lost, so it is removed and the run created again; with samples it is left for a person.
 */
async function clearInterruptedCreate(store: RunStore, id: string): Promise<void> {
  const dir = store.runDir(id);
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return;
  }
  const samples = path.join(dir, SAMPLES_FILE);
  const size = names.includes(SAMPLES_FILE) ? (await fsp.stat(samples)).size : 0;
  if (size > 0) throw new RunSetupError(`run folder ${dir} has samples but no manifest.json; move it away or restore its manifest before resuming`);
  await fsp.rm(dir, { recursive: true, force: true });
}

/** The run's writer lock: `<pid>@<host>`. Hidden, so other tools reading run folders never see it. */
export const WRITER_LOCK = '.writer.lock';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One writer per run: two processes resuming the same run would both run (and record) the missing samples. A lock
 * left by a killed writer on this host (its pid is gone) is taken over; one from another host (a requeued cluster
 * job) is taken over with a warning, since its process cannot be checked from here.
 */
async function lockRun(dir: string, runId: string, warn: (m: string) => void): Promise<() => Promise<void>> {
  const file = path.join(dir, WRITER_LOCK);
  const me = `${process.pid}@${os.hostname()}`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await fsp.open(file, 'wx');
      try {
        await fh.writeFile(me);
      } finally {
        await fh.close();
      }
      return async () => {
        const still = await fsp.readFile(file, 'utf8').catch(() => '');
        if (still === me) await fsp.rm(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const held = (await fsp.readFile(file, 'utf8').catch(() => '')).trim();
    const m = /^(\d+)@(.*)$/.exec(held);
    if (m && m[2] === os.hostname() && Number(m[1]) !== process.pid && pidAlive(Number(m[1]))) {
      throw new RunSetupError(`run ${runId} is being written by another Loupe process (pid ${m[1]}); wait for it or stop it (if none is running, delete ${file})`);
    }
    if (m && m[2] !== os.hostname()) warn(`run ${runId} was last written on host ${m[2]} (pid ${m[1]}); taking it over — make sure that job is no longer running`);
    await fsp.rm(file, { force: true });
  }
  throw new RunSetupError(`run ${runId}: could not take the writer lock ${file}`);
}

/** Drop records that ended in an error (atomically) so their samples run again. Returns how many. */
async function dropErrorRecords(handle: RunHandle): Promise<number> {
  const file = path.join(handle.dir, SAMPLES_FILE);
  const text = await fsp.readFile(file, 'utf8');
  const keep: string[] = [];
  let dropped = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let v: { stop_reason?: unknown } | null = null;
    try {
      v = JSON.parse(line) as { stop_reason?: unknown };
    } catch {
      // a torn or bad line: leave it for the store's reader/repair to judge
    }
    if (v && ERROR_STOPS.has(v.stop_reason as SampleRecord['stop_reason'])) dropped++;
    else keep.push(line);
  }
  if (dropped) await writeFileAtomic(file, keep.map((l) => l + '\n').join(''));
  return dropped;
}

/** Run every planned run; runs go one after another, samples within a run concurrently per engine. */
export async function runSweep(runs: PlannedRun[], opts: RunnerOptions): Promise<RunOutcome[]> {
  const leases = new Map<string, Promise<EngineLease>>();
  const slots = new Map<string, Slots>();
  const out: RunOutcome[] = [];
  try {
    for (const run of runs) {
      if (opts.signal?.aborted) break;
      const key = JSON.stringify(run.model);
      let lease = leases.get(key);
      if (!lease) {
        lease = opts.engines(run.model);
        // awaited in runOne (after the benchmark loads) and in `finally`; keep an early failure from being unhandled
        lease.catch(() => undefined);
        leases.set(key, lease);
      }
      out.push(await runOne(run, lease, slots, opts));
    }
  } finally {
    for (const l of leases.values()) await l.then((x) => x.dispose()).catch(() => undefined);
  }
  return out;
}

/** A pyvision run needs a working sandbox: start one (no images) before the run folder is made, so a machine without isolation refuses with the sandbox's reason and writes nothing. */
async function probeSandbox(variant: PyVisionVariant, factory: CodeSandboxFactory | undefined): Promise<void> {
  if (!factory) throw new RunSetupError('the pyvision dialects run model-written Python, and no code sandbox is wired into this Loupe');
  let sb;
  try {
    sb = await factory({ variant, images: [] });
  } catch (err) {
    throw new RunSetupError(`the code sandbox cannot start: ${(err as Error).message}`);
  }
  await sb.close();
}

/** The question image of a PyVision sample (the reference's prompt carries one image). */
function pyvisionImages(s: BenchSample): string[] {
  const images = s.media.images ?? [];
  if (images.length === 0) throw new Error(`sample ${s.qid} has no image; the pyvision dialects take one question image (not video frames)`);
  return images;
}

async function runOne(run: PlannedRun, leaseP: Promise<EngineLease>, slotMap: Map<string, Slots>, opts: RunnerOptions): Promise<RunOutcome> {
  const emit = (e: SweepEvent) => {
    try {
      opts.onEvent?.(e);
    } catch {
      // listeners must not break the run
    }
  };
  // everything that can fail before the first write happens here, so a bad setup leaves no run folder behind
  const bench = await loadBench(run, opts.loadOptions);
  if (isPyVisionDialect(run.settings.dialect)) await probeSandbox(pyvisionVariantOf(run.settings.dialect), opts.codeSandbox);
  const lease = await leaseP;
  const scorers = scorerVersions(new Set(bench.samples.map((s) => s.scorer)));
  const planned = buildManifest(run, {
    ...(lease.modelHash ? { modelHash: lease.modelHash } : {}),
    engine: { id: lease.info.id, kind: lease.info.kind, model: lease.info.model, ...(lease.info.device ? { device: lease.info.device } : {}), ...(lease.info.dtype ? { dtype: lease.info.dtype } : {}) },
    benchInfo: bench.info,
    benchRevision: bench.revision,
    benchN: bench.all,
    n: bench.samples.length,
    scorers,
  });
  const store = opts.store;
  let handle: RunHandle;
  let resumed = false;
  if (await store.hasRun(run.id)) {
    handle = await store.openRun(run.id);
    const diff = manifestConflicts(handle.manifest, planned);
    if (diff.length) {
      throw new RunSetupError(
        `run ${run.id} already exists with different settings (${diff.join(', ')}); resume it with the same settings, or pick a new name with --run`,
      );
    }
    resumed = true;
  } else {
    await clearInterruptedCreate(store, run.id);
    handle = await store.createRun(planned);
  }

  let unlock: () => Promise<void>;
  try {
    unlock = await lockRun(handle.dir, run.id, (message) => emit({ type: 'warning', runId: run.id, message }));
  } catch (err) {
    await handle.close();
    throw err;
  }
  try {
    return await runLocked(run, handle, resumed, lease, bench, slotMap, opts, emit);
  } finally {
    await unlock();
  }
}

async function runLocked(
  run: PlannedRun,
  handle: RunHandle,
  resumed: boolean,
  lease: EngineLease,
  bench: Awaited<ReturnType<typeof loadBench>>,
  slotMap: Map<string, Slots>,
  opts: RunnerOptions,
  emit: (e: SweepEvent) => void,
): Promise<RunOutcome> {
  const retried = resumed && opts.retryErrors ? await dropErrorRecords(handle) : 0;
  const repaired = await handle.openWriter();
  const existing = await handle.readSamples();
  for (const issue of existing.issues) emit({ type: 'warning', runId: run.id, message: `${SAMPLES_FILE} line ${issue.line}: ${issue.message}` });
  const doneQids = new Set(existing.records.map((r) => r.qid));
  const wanted = new Set(bench.samples.map((s) => s.qid));
  let done = [...doneQids].filter((q) => wanted.has(q)).length;
  const todo = bench.samples.filter((s) => !doneQids.has(s.qid));
  const total = bench.samples.length;
  emit({ type: 'run-start', runId: run.id, name: run.name, dir: handle.dir, total, done, todo: todo.length, resumed, repaired, ...(retried ? { retried } : {}) });

  const key = lease.info.id;
  let slots = slotMap.get(key);
  if (!slots) slotMap.set(key, (slots = new Slots(lease.concurrency || opts.concurrency || 1)));
  const s = run.settings;
  const pv = isPyVisionDialect(s.dialect) ? pyvisionVariantOf(s.dialect) : null;
  const dialect = pv ? null : getDialect(s.dialect);
  const pvLimits = sweepLimits(s);
  const limits = Object.fromEntries(
    Object.entries({ maxCalls: s.maxCalls, maxImages: s.maxImages, tokenBudget: s.tokenBudget, maxTokensPerTurn: s.maxTokensPerTurn }).filter(([, v]) => v !== undefined),
  );
  const started = Date.now();
  let doneThisSession = 0;
  let consecutiveEngineErrors = 0;
  const maxErr = opts.maxConsecutiveEngineErrors ?? 5;
  const stop = new AbortController();
  // every in-flight episode listens on this signal (64 at concurrency 64): not a leak
  setMaxListeners(0, stop.signal);
  let stopError: string | undefined;
  const onOuterAbort = () => stop.abort(opts.signal?.reason);
  if (opts.signal?.aborted) stop.abort(opts.signal.reason);
  else opts.signal?.addEventListener('abort', onOuterAbort, { once: true });

  const episodeSettings: RunEpisodeOptions['settings'] = {
    prompt: s.prompt,
    mode: s.mode,
    ...(s.minPixels !== undefined ? { minPixels: s.minPixels } : {}),
    ...(s.maxPixels !== undefined ? { maxPixels: s.maxPixels } : {}),
    decoding: { temperature: s.temperature, topP: s.topP, topK: s.topK, seed: s.seed },
    limits,
    ...(opts.turnTimeoutMs ? { turnTimeoutMs: opts.turnTimeoutMs } : {}),
  };
  const cores = Math.max(1, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
  const sandboxCap = pv ? Math.max(1, opts.maxSandboxes ?? cores) : Infinity;
  const workers = Math.max(1, Math.min(todo.length, lease.concurrency || opts.concurrency || 1, sandboxCap));
  const lookahead = pv ? 0 : Math.max(0, Math.floor(opts.lookahead ?? workers));

  /** A sample's input, prepared when it starts or ahead of it: its media list (or why it has none) and their preparation. */
  type Input = { media: EpisodeMedia; ready: Promise<PreparedEpisodeMedia> } | { error: Error };
  const ahead = new Map<number, Input>();
  const prepare = (sample: BenchSample, early: boolean): Input => {
    let media: EpisodeMedia;
    try {
      media = episodeMedia(sample);
    } catch (err) {
      return { error: err as Error };
    }
    // Prepared ahead, the images' keeps (writes) start too, off the episode's path; a sample prepared when it starts
    // leaves that to the episode, which overlaps it with the engine call. Either way the episode awaits them.
    const ready = prepareEpisodeMedia({ media, imageOps: opts.imageOps, settings: episodeSettings, signal: stop.signal, keep: early });
    ready.catch(() => undefined); // awaited by the sample's episode (or left unused on cancel)
    return { media, ready };
  };
  /** Start preparing the samples after those taken, up to `lookahead` of them. */
  const fillAhead = () => {
    for (let i = next; i < Math.min(todo.length, next + lookahead); i++) {
      if (stop.signal.aborted) return;
      if (!ahead.has(i)) ahead.set(i, prepare(todo[i]!, true));
    }
  };
  const inputFor = (i: number): Input => {
    const have = ahead.get(i);
    ahead.delete(i);
    return have ?? prepare(todo[i]!, false);
  };

  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (stop.signal.aborted) return;
      const release = await slots.acquire();
      try {
        if (stop.signal.aborted) return;
        const index = next++;
        const sample = todo[index];
        if (!sample) return;
        // This sample's media (prepared ahead, or now); once they are ready the next samples' preparation starts,
        // and runs while this sample waits on the engine.
        const input = pv ? null : inputFor(index);
        if (input && 'ready' in input) void input.ready.then(fillAhead, fillAhead);
        emit({ type: 'sample-start', runId: run.id, qid: sample.qid });
        let t: Trajectory;
        let sandboxFacts: PyVisionEpisodeResult['sandbox'] | undefined;
        try {
          if (pv) {
            // The code runs in its own process (the sandbox); this loop only awaits it, and closes it when the sample ends.
            const r = await runPyVisionEpisode({
              engine: lease.engineFor(sample),
              variant: pv,
              question: questionForSample(sample),
              images: pyvisionImages(sample),
              imageOps: opts.imageOps,
              sandbox: opts.codeSandbox!,
              maxTurns: pvLimits.maxCalls,
              maxTokens: pvLimits.maxTokensPerTurn,
              temperature: s.temperature,
              topP: s.topP,
              signal: stop.signal,
            });
            t = r.trajectory;
            sandboxFacts = r.sandbox;
          } else if (input && 'error' in input) throw input.error;
          else t = await runEpisode({
            engine: lease.engineFor(sample),
            dialect: dialect!,
            media: input!.media,
            prepared: input!.ready,
            question: questionForSample(sample),
            imageOps: opts.imageOps,
            settings: episodeSettings,
            signal: stop.signal,
            ...(opts.episodeEvents ? { onStep: (event: EpisodeEvent) => emit({ type: 'episode', runId: run.id, qid: sample.qid, event }) } : {}),
          });
        } catch (err) {
          // runEpisode returns a trajectory for every failure it knows; anything else is recorded as `error`
          t = { dialect: dialect?.id ?? s.dialect, prompt: s.prompt, media: [], originals: [], isVideo: sample.isVideo, question: sample.question, turns: [], stopReason: 'error', error: (err as Error).message };
        }
        if (t.stopReason === 'cancelled' || stop.signal.aborted) return; // unfinished: not recorded, runs again on resume
        const rec = sampleRecord(sample, t);
        // Per-sample sandbox facts (isolation, limits, each run's wall/CPU time and the limits it hit).
        if (sandboxFacts) rec.extra = { ...rec.extra, sandbox: sandboxFacts };
        await handle.appendSample(rec);
        done++;
        doneThisSession++;
        if (t.stopReason === 'engine_error') {
          consecutiveEngineErrors++;
          if (consecutiveEngineErrors >= maxErr && !stop.signal.aborted) {
            stopError = `the engine failed on ${consecutiveEngineErrors} samples in a row (last: ${t.error ?? 'unknown error'}); stopped. The ${done} finished samples are kept; fix the engine and rerun with --retry-errors`;
            stop.abort(new Error(stopError));
          }
        } else consecutiveEngineErrors = 0;
        const elapsedMs = Date.now() - started;
        const rate = doneThisSession / Math.max(1e-3, elapsedMs / 1000);
        emit({
          type: 'sample',
          runId: run.id,
          qid: sample.qid,
          correct: rec.correct,
          score: rec.score,
          stopReason: rec.stop_reason,
          done,
          total,
          doneThisSession,
          elapsedMs,
          samplesPerSec: rate,
          etaMs: rate > 0 ? ((total - done) / rate) * 1000 : null,
        });
      } finally {
        release();
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, () => worker()));
  } finally {
    opts.signal?.removeEventListener('abort', onOuterAbort);
    // Preparations left unused (cancel, a stop on engine errors) finish before the run is closed: nothing writes
    // into the workspace after the runner returns. Their media files stay, unreferenced and harmless.
    await Promise.allSettled([...ahead.values()].map((i) => ('ready' in i ? i.ready.then((r) => r.writes) : null)));
    ahead.clear();
    await handle.close();
  }
  const cancelled = !!opts.signal?.aborted;
  emit({ type: 'run-end', runId: run.id, done, total, cancelled, ...(stopError ? { error: stopError } : {}) });
  return { id: run.id, name: run.name, dir: handle.dir, manifest: handle.manifest, total, done, cancelled, ...(stopError ? { error: stopError } : {}) };
}

/**
 * The sweep runner's own cost and throughput.
 *
 * - `serve-model` rows: the runner driving the committed tiny random Qwen2.5-VL behind `loupe serve-model` (a child
 *   process on 127.0.0.1, the OpenAI-compatible engine in this process) at 1, 8 and 64 samples in flight. The
 *   served engine runs one request at a time, so samples/s is bounded by the model; the columns split each sample's
 *   wall time into engine time (sum of turn latencies as the client saw them), episode overhead (image import and
 *   resize, parsing, crops: episode latency − engine time) and runner overhead (scoring, the fsync'd append,
 *   scheduling: per-sample wall − episode latency, measured at concurrency 1).
 * - `runner vs raw client` rows: at concurrency 1, interleaved rounds of (a) the runner and (b) a raw client that
 *   POSTs the very request bodies the runner sends (captured once beforehand, images already encoded) to the same
 *   server and reads each stream to its end. Their ratio is the runner's whole cost over the server's: image import
 *   and resize, request building, parsing, scoring, the record append. The runner runs twice per round: with its
 *   default look-ahead (the next sample's media prepared while the current request runs) and with `lookahead: 0`
 *   (each sample's media prepared when it starts), so the look-ahead's gain is measured in the same rounds. The CPU
 *   columns (ms per sample, medians over rounds) are the client's (this process: the runner, or the raw client) and
 *   the server's (its processes, Linux /proc): far steadier than wall time, and they say when the ratio is CPU-bound,
 *   i.e. when client + server CPU per sample exceed what the machine's cores give in one raw request's time.
 * - `replay` rows: the same runner with the replay engine (recorded text, no model): the ceiling the runner itself
 *   reaches with real image work (one crop per sample) and real fsync'd appends.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fsp, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { expandPlan, type ModelSpec } from '../../app/sweeps/plan';
import { runSweep, replayEngine, type EngineFactory, type ReplayBook } from '../../app/sweeps/runner';
import { OpenAIEngine, chatCompletionBody, toOpenAIMessages } from '../../app/engines/openai/openaiEngine';
import { Workspace } from '../../app/workspace';
import type { Engine } from '../../app/engines/types';
import { JsonlAppender, type AppendDurability } from '../../app/workspace/jsonl';
import { SharpImageOps } from '../../native/image/sharpImageOps';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TINY = path.join(REPO, 'models', 'tiny-random-qwen25vl');
const N = 64;

export async function makeBench(dir: string): Promise<string> {
  const data = path.join(dir, 'bench');
  await fsp.mkdir(path.join(data, 'images'), { recursive: true });
  await fsp.writeFile(path.join(data, 'benchmark.json'), JSON.stringify({ id: 'sweep-bench', scorer: 'pr.boxed' }));
  const lines: string[] = [];
  for (let i = 0; i < N; i++) {
    await sharp({ create: { width: 448 + 8 * (i % 8), height: 336, channels: 3, background: { r: (i * 37) % 255, g: 90, b: 160 } } })
      .jpeg()
      .toFile(path.join(data, 'images', `b${i}.jpg`));
    lines.push(JSON.stringify({ qid: `b${i}`, question: `What is the value of item ${i}?`, answer: String(i), image: `images/b${i}.jpg` }));
  }
  await fsp.writeFile(path.join(data, 'samples.jsonl'), lines.join('\n') + '\n');
  return data;
}

/** Start `loupe serve-model` (its command module, in a child process) and wait for its URL. */
/** The bearer key the benchmark's serve-model expects, handed over in the environment (never on argv). */
export const BENCH_KEY = randomBytes(24).toString('hex');

export async function startServeModel(model = TINY, extraArgs: string[] = []): Promise<{ url: string; child: ChildProcess; banner: string }> {
  const code = `import { Command } from 'commander'; import { register } from ${JSON.stringify(path.join(REPO, 'main/cli/commands/serveModel.ts'))};
const p = new Command(); register(p); await p.parseAsync(${JSON.stringify(['node', 'loupe', 'serve-model', model, '--port', '0', ...extraArgs])});`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOUPE_API_KEY: BENCH_KEY } });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve-model did not start in 120 s: ${err}`)), 120_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = / at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    child.on('exit', (c) => reject(new Error(`serve-model exited (${c}): ${err}`)));
  });
  return { url, child, banner: out.split('\n')[0] ?? '' };
}

/** CPU seconds (user + system) of a process and its descendants, from /proc (Linux); 0 where unreadable. */
export function treeCpu(pid: number): number {
  let kids: number[] = [];
  try {
    kids = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    // no children (pgrep exits 1)
  }
  let own = 0;
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    own = (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (100 a second on Linux)
  } catch {
    own = 0;
  }
  return own + kids.reduce((a, k) => a + treeCpu(k), 0);
}

function replayBook(): ReplayBook {
  const byQid = new Map<string, Array<{ text: string }>>();
  for (let i = 0; i < N; i++) {
    byQid.set(`b${i}`, [
      { text: `Let me zoom in.\n<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.2, 0.2, 0.6, 0.6], "target_image": 1}}\n</tool_call>` },
      { text: `It is \\boxed{${i}}.` },
    ]);
  }
  return { file: 'inline', byQid };
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length ? (v[(v.length - 1) >> 1]! + v[v.length >> 1]!) / 2 : NaN;
};

/**
 * The record append the runner awaits per sample: fdatasync awaited on every line (durability `each`, what the runner
 * did) against the line written and synced in the background (`group`, what it does), interleaved rounds.
 */
export async function appendModes(tmp: string, rounds = 6, perRound = 40): Promise<Record<string, string | number>> {
  const rec = { qid: 'q', bench: 'b', question: 'What is the value?', answer: '1', prediction: 'It is \\boxed{1}.', score: 1, correct: true, stop_reason: 'answer', calls: 1, tool_errors: 0, trajectory: { turns: [{ text: 'x'.repeat(2000) }] } };
  const ms: Record<AppendDurability, number[]> = { each: [], group: [] };
  for (let r = 0; r < rounds; r++) {
    for (const mode of ['each', 'group'] as const) {
      const a = await JsonlAppender.open(path.join(tmp, `append-${mode}-${r}.jsonl`), undefined, mode);
      const t0 = performance.now();
      for (let i = 0; i < perRound; i++) {
        await a.append({ ...rec, qid: `q${i}` });
        await new Promise((res) => setImmediate(res)); // the next sample's work, during which a background sync runs
      }
      ms[mode].push((performance.now() - t0) / perRound);
      await a.close();
    }
  }
  return { engine: 'record append awaited per sample (fdatasync each vs background)', samples: rounds * perRound, each_ms: r1(median(ms.each) * 100) / 100, group_ms: r1(median(ms.group) * 100) / 100, 'each max round': r1(Math.max(...ms.each)) };
}

/** CPU milliseconds this process has used (user + system, all its threads). */
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** One timed pass: wall ms per sample, and CPU ms per sample of this process (the client) and of the server's processes. */
interface Pass {
  wall: number;
  cpu: number;
  server: number;
}

/**
 * Concurrency 1: the runner against a raw client sending the runner's own request bodies, interleaved. With the
 * server's pid, each row also gives the CPU per sample of the client (this process: the runner, or the raw client)
 * and of the server: on a machine with few cores the two share them, so a client's CPU beyond what the server leaves
 * free lengthens every request.
 */
export async function runnerVsRaw(tmp: string, data: string, url: string, rounds = 5, perRound = 16, serverPid?: number): Promise<Array<Record<string, string | number>>> {
  const serverMs = () => (serverPid === undefined ? 0 : treeCpu(serverPid) * 1000);
  const model: ModelSpec = { kind: 'openai', url, model: 'tiny-random-qwen25vl', name: 'tiny' };
  const plan = (limit: number, name: string) => expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], settings: { maxTokensPerTurn: 8, limit }, name });
  // 1. Capture the bodies: the runner with an engine that records what it would send and answers at once.
  const bodies: string[] = [];
  {
    const ws = await new Workspace(path.join(tmp, 'capture')).init();
    const capture: Engine = {
      info: () => ({ id: 'capture', kind: 'openai', model: 'tiny-random-qwen25vl' }),
      generate: async (req) => {
        bodies.push(JSON.stringify(chatCompletionBody('tiny-random-qwen25vl', req, await toOpenAIMessages(req.messages))));
        return { text: 'x', promptTokens: 0, completionTokens: 1, finishReason: 'stop', latencyMs: 0 };
      },
      dispose: async () => undefined,
    };
    await runSweep(plan(perRound, 'capture'), { store: ws.runs, imageOps: new SharpImageOps(ws.media), engines: async () => ({ info: capture.info(), engineFor: () => capture, concurrency: 1, dispose: async () => undefined }) });
  }
  const raw = async (): Promise<Pass> => {
    const s0 = serverMs();
    const c0 = ownCpuMs();
    const t0 = performance.now();
    for (const body of bodies) {
      const res = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_KEY}` }, body });
      const text = await res.text();
      if (!res.ok || !text.includes('[DONE]')) throw new Error(`raw client: HTTP ${res.status} ${text.slice(0, 200)}`);
    }
    const n = bodies.length;
    return { wall: (performance.now() - t0) / n, cpu: (ownCpuMs() - c0) / n, server: (serverMs() - s0) / n };
  };
  const runner = async (i: number, lookahead?: number): Promise<Pass> => {
    const ws = await new Workspace(path.join(tmp, `runner-${i}-${lookahead ?? 'default'}`)).init();
    const e = new OpenAIEngine({ baseURL: url, model: 'tiny-random-qwen25vl', apiKey: BENCH_KEY, concurrency: 1, timeoutMs: 600_000 });
    let t0 = 0;
    let c0 = 0;
    let n = 0;
    // the server is idle during the run's setup, so its CPU is read around the whole run
    const s0 = serverMs();
    // timed from the first sample's start (the run's setup: bench load, manifest, lock, is once per run, not per sample)
    await runSweep(plan(perRound, `r${i}`), {
      ...(lookahead !== undefined ? { lookahead } : {}),
      store: ws.runs,
      imageOps: new SharpImageOps(ws.media),
      engines: async () => ({ info: e.info(), engineFor: () => e, concurrency: 1, dispose: () => e.dispose() }),
      onEvent: (ev) => {
        if (ev.type === 'sample-start' && t0 === 0) {
          t0 = performance.now();
          c0 = ownCpuMs();
        }
        if (ev.type === 'sample') n++;
      },
    });
    return { wall: (performance.now() - t0) / n, cpu: (ownCpuMs() - c0) / n, server: (serverMs() - s0) / n };
  };
  await raw(); // warm the server's image cache and both connection paths
  await runner(-1);
  const rawP: Pass[] = [];
  const runP: Pass[] = [];
  const serialP: Pass[] = [];
  for (let i = 0; i < rounds; i++) {
    rawP.push(await raw());
    runP.push(await runner(i));
    serialP.push(await runner(i, 0));
  }
  const med = (ps: Pass[], k: keyof Pass) => r1(median(ps.map((p) => p[k])));
  const row = (engine: string, ps: Pass[]) => {
    const ratios = rawP.map((r, i) => ps[i]!.wall / r.wall);
    return {
      engine,
      concurrency: 1,
      samples: rounds * perRound,
      raw_ms_per_sample: med(rawP, 'wall'),
      wall_ms_per_sample: med(ps, 'wall'),
      runner_over_raw: `${(Math.round(median(ratios) * 100) / 100).toFixed(2)}× (rounds ${ratios.map((x) => x.toFixed(2)).join(' ')})`,
      ...(serverPid !== undefined ? { raw_client_cpu_ms: med(rawP, 'cpu'), runner_cpu_ms: med(ps, 'cpu'), server_cpu_ms: med(ps, 'server'), raw_server_cpu_ms: med(rawP, 'server') } : {}),
    };
  };
  return [row('runner vs raw client (loopback serve-model, c=1)', runP), row('runner vs raw client, no look-ahead (c=1)', serialP)];
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-sweep-bench-'));
  const rows: Array<Record<string, string | number>> = [];
  const cpu = `${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}`;
  let server: { url: string; child: ChildProcess } | null = null;
  try {
    const data = await makeBench(tmp);
    const measure = async (engine: string, model: ModelSpec, factory: EngineFactory, concurrency: number, limit: number) => {
      const ws = await new Workspace(path.join(tmp, `${engine}-${concurrency}`)).init();
      const ops = new SharpImageOps(ws.media);
      const runs = expandPlan({ models: [model], benchmarks: [{ id: 'loupe-synth', data }], settings: { maxTokensPerTurn: 8, limit }, name: 'b' });
      const t0 = performance.now();
      await runSweep(runs, { store: ws.runs, imageOps: ops, engines: factory, concurrency });
      const wall = performance.now() - t0;
      const recs = (await ws.runs.readSamples('b')).records;
      let engineMs = 0;
      let episodeMs = 0;
      for (const r of recs) {
        episodeMs += r.latency_ms ?? 0;
        for (const t of r.trajectory?.turns ?? []) engineMs += t.latencyMs ?? 0;
      }
      const n = recs.length;
      rows.push({
        engine,
        device: cpu,
        concurrency,
        samples: n,
        samples_per_s: r1((n / wall) * 1000 * 10) / 10,
        wall_ms_per_sample: r1(wall / n),
        engine_ms_per_sample: r1(engineMs / n),
        episode_overhead_ms: r1((episodeMs - engineMs) / n),
        // only meaningful when samples do not overlap
        runner_overhead_ms: concurrency === 1 ? r1(wall / n - episodeMs / n) : '',
      });
    };
    const replayModel: ModelSpec = { kind: 'replay', file: 'inline', name: 'replay' };
    for (const c of [1, 8, 64]) {
      const book = replayBook();
      await measure('replay (no model)', replayModel, async () => ({ info: { id: `replay-${c}`, kind: 'scripted', model: 'replay' }, engineFor: (s) => replayEngine(book, s.qid), concurrency: c, dispose: async () => undefined }), c, N);
    }
    rows.push(await appendModes(tmp));
    server = await startServeModel();
    const url = server.url;
    rows.push(...(await runnerVsRaw(tmp, data, url, 5, 16, server.child.pid)));
    for (const c of [1, 8, 64]) {
      const factory: EngineFactory = async () => {
        const e = new OpenAIEngine({ baseURL: url, model: 'tiny-random-qwen25vl', apiKey: BENCH_KEY, concurrency: c, timeoutMs: 600_000 });
        return { info: e.info(), engineFor: () => e, concurrency: c, dispose: () => e.dispose() };
      };
      // fewer samples at concurrency 1: the model is the bottleneck and the mean settles quickly
      await measure('serve-model tiny (loopback)', { kind: 'openai', url, model: 'tiny-random-qwen25vl', name: 'tiny' }, factory, c, c === 1 ? 16 : N);
    }
  } finally {
    server?.child.kill('SIGTERM');
    await fsp.rm(tmp, { recursive: true, force: true });
  }
  return rows;
}

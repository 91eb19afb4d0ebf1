/**
 * The sweep runner's own cost and throughput.
 *
 * - `serve-model` rows: the runner driving the committed tiny random Qwen2.5-VL behind `loupe serve-model` (a child
 *   process on 127.0.0.1, the OpenAI-compatible engine in this process) at 1, 8 and 64 samples in flight. The
 *   served engine runs one request at a time, so samples/s is bounded by the model; the columns split each sample's
 *   wall time into engine time (sum of turn latencies as the client saw them), episode overhead (image import and
 *   resize, parsing, crops: episode latency − engine time) and runner overhead (scoring, the fsync'd append,
 *   scheduling: per-sample wall − episode latency, measured at concurrency 1).
 * - `replay` rows: the same runner with the replay engine (recorded text, no model): the ceiling the runner itself
 *   reaches with real image work (one crop per sample) and real fsync'd appends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { expandPlan, type ModelSpec } from '../../app/sweeps/plan';
import { runSweep, replayEngine, type EngineFactory, type ReplayBook } from '../../app/sweeps/runner';
import { OpenAIEngine } from '../../app/engines/openai/openaiEngine';
import { Workspace } from '../../app/workspace';
import { SharpImageOps } from '../../native/image/sharpImageOps';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TINY = path.join(REPO, 'models', 'tiny-random-qwen25vl');
const N = 64;

async function makeBench(dir: string): Promise<string> {
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
const BENCH_KEY = randomBytes(24).toString('hex');

async function startServeModel(): Promise<{ url: string; child: ChildProcess }> {
  const code = `import { Command } from 'commander'; import { register } from ${JSON.stringify(path.join(REPO, 'main/cli/commands/serveModel.ts'))};
const p = new Command(); register(p); await p.parseAsync(['node', 'loupe', 'serve-model', ${JSON.stringify(TINY)}, '--port', '0']);`;
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
  return { url, child };
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
    server = await startServeModel();
    const url = server.url;
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

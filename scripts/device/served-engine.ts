/**
 * A served engine end to end on one machine, through the same core the app uses: the served-engine launcher
 * (app/engines/served) starts `loupe serve-model` for a model folder, one trajectory runs through it, then a sweep of
 * `--samples` loupe-synth samples (`loupe eval` against the server's URL, as for any OpenAI-compatible engine).
 * Prints one JSON line per step and a summary line; exits non-zero when a step fails.
 *
 *   node --import tsx scripts/device/served-engine.ts [--model DIR] [--device cpu|cuda] [--dtype fp32|fp16|q8]
 *        [--samples 20] [--max-tokens 48] [--loupe "NODE LOUPE_ENTRY"] [--out DIR]
 *
 * On the GPU machine (no Node there) it runs from the node pack (scripts/device/pack-node.sh bundles it as
 * node-pack/served-engine.mjs, with the `loupe` CLI as node-pack/loupe.mjs and its engine worker):
 *   node-pack/node node-pack/served-engine.mjs --device cuda --dtype fp16 --loupe "node-pack/node node-pack/loupe.mjs"
 * with the CUDA provider assembled first (scripts/device/cuda-ep-assemble.sh; models/reports/CUDA-EP.md).
 * Default model: the committed random tiny Qwen2.5-VL (models/tiny-random-qwen25vl).
 */
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { generateSynth } from '../../app/synth';
import { ServedEngineLauncher } from '../../app/engines/served/launcher';
import { runEvalCommand } from '../../main/cli/commands/eval';
import { sharpSynthRaster } from '../../native/image/synthRaster';

const { values: flags } = parseArgs({
  options: {
    model: { type: 'string' },
    device: { type: 'string', default: 'cpu' },
    dtype: { type: 'string', default: 'fp32' },
    samples: { type: 'string', default: '20' },
    'max-tokens': { type: 'string', default: '48' },
    loupe: { type: 'string' },
    out: { type: 'string' },
  },
  strict: true,
  allowPositionals: false,
});

const out = (o: Record<string, unknown>) => console.log(JSON.stringify(o));

async function main(): Promise<number> {
  const root = process.cwd();
  const modelDir = path.resolve(flags.model ?? path.join(root, 'models', 'tiny-random-qwen25vl'));
  const device = flags.device as 'cpu' | 'cuda';
  if (device !== 'cpu' && device !== 'cuda') throw new Error(`--device must be cpu or cuda, got ${device}`);
  const dtype = flags.dtype!;
  const samples = Number(flags.samples);
  if (!Number.isInteger(samples) || samples < 1) throw new Error(`--samples must be a whole number ≥ 1, got ${flags.samples}`);
  const maxTokens = flags['max-tokens']!;
  const loupe = (flags.loupe ?? `${process.execPath} ${path.join(root, 'bin', 'loupe.mjs')}`).split(' ').filter(Boolean);
  const work = path.resolve(flags.out ?? mkdtempSync(path.join(os.tmpdir(), 'loupe-served-')));
  mkdirSync(work, { recursive: true });

  const launcher = new ServedEngineLauncher({ node: loupe[0]!, loupeBin: loupe.slice(1).join(' '), onEvent: (s) => out({ step: 'engine', status: s.status, message: s.message ?? null, baseURL: s.baseURL ?? null }) });
  const t0 = Date.now();
  const served = launcher.start({ backend: 'loupe', modelDir, device, dtype }, { kind: 'local' }, { readyTimeoutMs: 10 * 60_000 });
  const stop = () => void launcher.stopAll().then(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const st = await served.ready;
    const loadLine = served.log.find((l) => l.startsWith('serving '));
    out({ step: 'ready', seconds: (Date.now() - t0) / 1000, baseURL: st.baseURL, server: loadLine ?? null });
    if (device === 'cuda' && loadLine && !/device cuda/.test(loadLine)) throw new Error(`asked for cuda, the server says: ${loadLine}`);

    const data = path.join(work, 'synth');
    await generateSynth({ seed: 29, n: samples, easyFraction: 0 }, data, sharpSynthRaster);
    const model = `${st.baseURL}#${served.spec.modelName}`;
    const common = { model, bench: 'loupe-synth', data, prompt: 'vcot', dialect: 'pixel-reasoner', mode: 'eval', seed: 0, temperature: 0, workspace: path.join(work, 'ws'), apiKey: served.apiKey!, maxTokens: Number(maxTokens), json: true, progress: false };
    const sink = () => {
      let text = '';
      return { stream: new Writable({ write: (c, _e, cb) => ((text += String(c)), cb()) }), text: () => text };
    };

    // One trajectory.
    const one = sink();
    const t1 = Date.now();
    const code1 = await runEvalCommand({ ...common, limit: 1, run: 'one-trajectory' }, { stdout: one.stream, stderr: process.stderr });
    const rec = JSON.parse(readFileSync(path.join(work, 'ws', 'runs', 'one-trajectory', 'samples.jsonl'), 'utf8').split('\n')[0]!) as { qid: string; stop_reason: string; calls: number; latency_ms: number; trajectory: { turns?: unknown[] }; prediction: string };
    out({ step: 'trajectory', exit: code1, seconds: (Date.now() - t1) / 1000, qid: rec.qid, stop_reason: rec.stop_reason, turns: rec.trajectory.turns?.length ?? null, calls: rec.calls, latency_ms: rec.latency_ms, prediction: rec.prediction.slice(0, 120) });
    if (code1 !== 0 || rec.stop_reason === 'engine_error') throw new Error('the trajectory failed');

    // The sweep.
    const sw = sink();
    const t2 = Date.now();
    const code2 = await runEvalCommand({ ...common, limit: samples, run: `sweep-${samples}`, concurrency: 4 }, { stdout: sw.stream, stderr: process.stderr });
    const summary = JSON.parse(sw.text().trim().split('\n').pop()!) as Record<string, unknown>;
    out({ step: 'sweep', exit: code2, seconds: (Date.now() - t2) / 1000, n: summary.n, complete: summary.complete, accuracy: summary.accuracy, stop_reasons: summary.stop_reasons ?? null });
    if (code2 !== 0 || summary.n !== samples) throw new Error('the sweep failed');
    out({ step: 'done', ok: true, device, dtype, model: modelDir, seconds: (Date.now() - t0) / 1000, work });
    return 0;
  } catch (e) {
    out({ step: 'failed', error: e instanceof Error ? e.message : String(e), state: served.state(), log_tail: served.log.slice(-15) });
    return 1;
  } finally {
    await launcher.stopAll();
    out({ step: 'stopped', status: served.state().status });
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    out({ step: 'failed', error: e instanceof Error ? e.message : String(e) });
    process.exit(1);
  },
);

/**
 * `loupe eval` — run one model on one benchmark headless, writing the same run files as the app
 * (`<workspace>/runs/<run>/manifest.json` + `samples.jsonl`). The same `--run` resumes; `--shard i/n` runs one
 * deterministic part (merge with `loupe report NAME`). With `--json` the last stdout line is one JSON object.
 * Heavy modules load inside the action so `loupe --help` stays quick.
 */
import type { Command } from 'commander';
import path from 'node:path';

export interface EvalCliOptions {
  model: string;
  bench: string;
  data?: string;
  prompt: string;
  dialect: string;
  mode: string;
  limit?: number;
  seed: number;
  shard?: string;
  workspace?: string;
  run?: string;
  concurrency?: number;
  json?: boolean;
  retryErrors?: boolean;
  maxTokens?: number;
  maxCalls?: number;
  temperature: number;
  minPixels?: number;
  maxPixels?: number;
  device?: string;
  dtype?: string;
  threads?: number;
  apiKey?: string;
  timeoutMs?: number;
  replayDelayMs?: number;
  progress?: boolean;
  allowUnisolatedCode?: boolean;
  maxSandboxes?: number;
}

function int(name: string, min = 0) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
}

function num(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
    return n;
  };
}

function fmtMs(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '--:--';
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** Run the eval; resolves with the process exit code. Exported so tests and `loupe` share one path. */
export async function runEvalCommand(o: EvalCliOptions, io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WriteStream | NodeJS.WritableStream } = process): Promise<number> {
  const [{ resolveModelRef, parseShard, expandPlan }, { runSweep, RunSetupError, loadRunGroup, summarize, formatSummary }, { Workspace, defaultWorkspaceDir }, { engineFactory, imageOpsFor, codeSandboxFactory }, { isDialectId }, { isPyVisionDialect }] =
    await Promise.all([import('../../../app/sweeps/plan'), import('../../../app/sweeps/runner'), import('../../../app/workspace'), import('../../core/wiring'), import('../../../app/protocol'), import('../../../app/protocol/pyvision')]);
  const err = (s: string) => io.stderr.write(s);
  if (o.prompt !== 'vcot' && o.prompt !== 'notool') throw new Error(`--prompt must be vcot or notool, got ${JSON.stringify(o.prompt)}`);
  if (!isDialectId(o.dialect) && !isPyVisionDialect(o.dialect)) throw new Error(`--dialect ${JSON.stringify(o.dialect)} is unknown: use pixel-reasoner, verl-tool, deepeyes, pyvision or pyvision-rl`);
  if (o.mode !== 'eval' && o.mode !== 'train') throw new Error(`--mode must be eval or train, got ${JSON.stringify(o.mode)}`);
  const wsDir = o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir();
  const { ModelRegistry } = await import('../../../app/engines/modelRegistry');
  const { resourcesRoot } = await import('../../../app/paths');
  const model = await resolveModelRef(o.model, new ModelRegistry(wsDir, { bundledRoot: resourcesRoot() }));
  const shard = o.shard !== undefined ? parseShard(o.shard) : undefined;
  const data = path.resolve(o.data ?? path.join('data', o.bench));
  const runs = expandPlan({
    models: [model],
    benchmarks: [{ id: o.bench, data }],
    settings: {
      dialect: [o.dialect],
      prompt: [o.prompt],
      mode: [o.mode],
      temperature: [o.temperature],
      seed: [o.seed],
      ...(o.minPixels !== undefined ? { minPixels: [o.minPixels] } : {}),
      ...(o.maxPixels !== undefined ? { maxPixels: [o.maxPixels] } : {}),
      ...(o.limit !== undefined ? { limit: o.limit } : {}),
      ...(o.maxTokens !== undefined ? { maxTokensPerTurn: o.maxTokens } : {}),
      ...(o.maxCalls !== undefined ? { maxCalls: o.maxCalls } : {}),
    },
    ...(shard ? { shard } : {}),
    ...(o.run !== undefined ? { name: o.run } : {}),
  });
  const ws = new Workspace(wsDir);
  const ctrl = new AbortController();
  const onSignal = (sig: string) => {
    if (ctrl.signal.aborted) process.exit(130);
    err(`\n${sig}: stopping after the samples in flight (recorded samples are kept; rerun with the same --run to resume)\n`);
    ctrl.abort(new Error(sig));
  };
  const sigint = () => onSignal('SIGINT');
  const sigterm = () => onSignal('SIGTERM');
  process.on('SIGINT', sigint);
  process.on('SIGTERM', sigterm);
  const tty = (io.stderr as NodeJS.WriteStream).isTTY === true && o.progress !== false;
  let lastPct = -1;
  let lastLine = 0;
  let imageOps: Awaited<ReturnType<typeof imageOpsFor>> | null = null;
  try {
    // the workspace folders are created only once the run can start (engine probed, bench loaded)
    imageOps = await imageOpsFor(ws.media);
    const outcomes = await runSweep(runs, {
      store: ws.runs,
      imageOps,
      engines: engineFactory({
        ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
        ...(o.device ? { device: o.device as never } : {}),
        ...(o.dtype ? { dtype: o.dtype as never } : {}),
        ...(o.threads ? { threads: o.threads } : {}),
        ...(o.apiKey ? { apiKey: o.apiKey } : {}),
        ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
        ...(o.replayDelayMs ? { replayDelayMs: o.replayDelayMs } : {}),
      }),
      signal: ctrl.signal,
      ...(isPyVisionDialect(o.dialect) ? { codeSandbox: await codeSandboxFactory({ ...(o.allowUnisolatedCode ? { allowUnisolated: true } : {}) }) } : {}),
      ...(o.maxSandboxes !== undefined ? { maxSandboxes: o.maxSandboxes } : {}),
      ...(o.retryErrors ? { retryErrors: true } : {}),
      onEvent: (e) => {
        if (e.type === 'run-start') {
          err(`run ${e.runId}: ${e.total} samples, ${e.done} already recorded${e.resumed ? ' (resuming)' : ''}${e.retried ? `, ${e.retried} errored ones to retry` : ''}${e.repaired ? ' (repaired a torn last line)' : ''}\n  ${e.dir}\n`);
        } else if (e.type === 'warning') {
          err(`warning: ${e.message}\n`);
        } else if (e.type === 'sample') {
          // --no-progress: the run-start and end lines and the summary only (logs of batch jobs stay short).
          if (o.progress === false) return;
          if (tty) {
            const w = 30;
            const fill = Math.round((w * e.done) / Math.max(1, e.total));
            (io.stderr as NodeJS.WriteStream).write(
              `\r[${'#'.repeat(fill)}${'.'.repeat(w - fill)}] ${e.done}/${e.total}  ${e.samplesPerSec.toFixed(2)}/s  ETA ${fmtMs(e.etaMs)}   `,
            );
          } else {
            const pct = Math.floor((100 * e.done) / Math.max(1, e.total));
            const now = Date.now();
            if (e.total <= 100 || pct !== lastPct || now - lastLine > 10_000 || e.done === e.total) {
              err(`${e.done}/${e.total} ${e.qid} ${e.stopReason} ${e.correct ? 'correct' : 'wrong'}  ${e.samplesPerSec.toFixed(2)}/s  ETA ${fmtMs(e.etaMs)}\n`);
              lastPct = pct;
              lastLine = now;
            }
          }
        } else if (e.type === 'run-end') {
          if (tty) err('\n');
          if (e.error) err(`error: ${e.error}\n`);
          else if (e.cancelled) err(`cancelled at ${e.done}/${e.total}; resume with --run ${runs[0]!.name}\n`);
        }
      },
    });
    const out = outcomes[0];
    if (!out) return 130;
    const group = await loadRunGroup(ws.runs, out.id);
    const summary = summarize(group);
    if (o.json) io.stdout.write(JSON.stringify({ ...summary, run: out.id, name: out.name, dir: out.dir, cancelled: out.cancelled, ...(out.error ? { error: out.error } : {}) }) + '\n');
    else io.stdout.write(formatSummary(summary) + '\n');
    if (out.error) return 1;
    if (out.cancelled) return 130;
    return 0;
  } catch (e) {
    if (e instanceof RunSetupError || e instanceof Error) throw e;
    throw new Error(String(e));
  } finally {
    process.off('SIGINT', sigint);
    process.off('SIGTERM', sigterm);
    await imageOps?.close?.();
  }
}

/** Add `eval`'s options to a command (shared with the kill-test child, which registers only this command). */
export function register(program: Command): void {
  program
    .command('eval')
    .description('evaluate a model on a benchmark (resumable: the same --run continues where it stopped)')
    .requiredOption('--model <m>', 'model name (loupe-tiny, or one added on the Models page), local model folder, OpenAI-compatible URL (http://host:port/v1[#model]) or replay:<file.jsonl>')
    .requiredOption('--bench <id>', 'benchmark id: vstar, tallyqa, infovqa, mvbench, vsibench, hrbench, pixel-reasoner, loupe-synth')
    .option('--data <dir>', 'benchmark data folder (default ./data/<bench>)')
    .option('--prompt <p>', 'vcot (tools) or notool', 'vcot')
    .option('--dialect <d>', 'pixel-reasoner | verl-tool | deepeyes | pyvision | pyvision-rl (the code tool, run in a sandbox)', 'pixel-reasoner')
    .option('--mode <m>', 'resize presets and decoding defaults: eval or train', 'eval')
    .option('--limit <n>', 'first N samples only', int('--limit', 1))
    .option('--seed <n>', 'decoding seed and option-shuffle seed', int('--seed'), 0)
    .option('--shard <i/n>', 'run shard i of n (0-based; qids split by hash); merge with `loupe report NAME`')
    .option('--workspace <dir>', 'workspace folder (default $LOUPE_WORKSPACE or the user data dir)')
    .option('--run <name>', 'run name (default: derived from model, bench and settings); the same name resumes')
    .option('--concurrency <k>', 'samples in flight (default 1 local, 8 for a server)', int('--concurrency', 1))
    .option('--retry-errors', 'run samples recorded as engine_error/error again')
    .option('--max-tokens <n>', 'max new tokens per turn (default: the dialect’s)', int('--max-tokens', 1))
    .option('--max-calls <n>', 'tool-call limit (default: the dialect’s; pyvision: model turns, PVRL 5 with --mode train, 30 in eval)', int('--max-calls', 0))
    .option('--max-sandboxes <n>', 'pyvision: code sandboxes (samples) alive at once (default: CPU cores)', int('--max-sandboxes', 1))
    .option('--allow-unisolated-code', 'pyvision: run model-written code with resource limits only where no namespace isolation exists (recorded in the run)')
    .option('--temperature <t>', 'sampling temperature (0 = greedy)', num('--temperature'), 0)
    .option('--min-pixels <n>', 'engine MIN_PIXELS', int('--min-pixels', 1))
    .option('--max-pixels <n>', 'engine MAX_PIXELS', int('--max-pixels', 1))
    .option('--device <d>', 'local engine device: cpu | cuda | webgpu | dml | coreml')
    .option('--dtype <t>', 'local engine dtype: fp32 | q8 | q4 | fp16 …')
    .option('--threads <n>', 'local engine: ONNX Runtime threads (default: 1 for a small model, else one per core)', int('--threads', 1))
    .option('--api-key <k>', 'API key for the OpenAI-compatible server (better: $LOUPE_API_KEY, since argv is visible in ps)')
    .option('--timeout-ms <n>', 'per-request timeout for a server', int('--timeout-ms', 1))
    .option('--replay-delay-ms <n>', 'replay engines: wait this long per turn', int('--replay-delay-ms'))
    .option('--no-progress', 'no progress bar and no per-sample lines')
    .option('--json', 'print the result as one JSON object on the last stdout line')
    .option('--cluster <connector>', 'run on a cluster through this saved connector: slurm-ssh (one array job, a task per shard) or Ray (one Ray job per shard), merged into the run --run; the same command follows it again')
    .option('--shards <n>', 'with --cluster: array tasks (shards)', int('--shards', 1))
    .option('--cluster-loupe <command>', 'with --cluster: the loupe command on the cluster (default: loupe)')
    .option('--remote-workspace <dir>', "with --cluster: the tasks' workspace on the cluster (slurm-ssh default: loupe-workspace in the connector's folder; required for Ray: a folder the nodes share)")
    .option('--cluster-cwd <dir>', 'with --cluster: working folder of the tasks on the cluster')
    .option('--cluster-cpus <n>', 'with --cluster: CPUs per task', int('--cluster-cpus', 1))
    .action(async (o: EvalCliOptions & import('./evalCluster').EvalClusterOptions) => {
      if (o.cluster) {
        process.exitCode = await (await import('./evalCluster')).runEvalCluster(o);
        return;
      }
      if (o.shards !== undefined) throw new Error('--shards goes with --cluster (for one shard here, use --shard i/n)');
      const code = await runEvalCommand(o);
      process.exitCode = code;
    });
}

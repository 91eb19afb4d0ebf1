/** `loupe serve-model MODEL_DIR` — the local engine as an OpenAI-compatible endpoint on 127.0.0.1. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import type { EngineDevice, EngineDtype } from '../../../app/engines/types';
import { SMALL_MODEL_BYTES } from '../../../app/engines/local/protocol';

export function register(program: Command): void {
  program
    .command('serve-model')
    .description('serve a local Qwen2.5-VL ONNX model folder as an OpenAI-compatible API (/v1/models, /v1/chat/completions)')
    .argument('<model_dir>', 'model folder in the transformers.js layout (see `loupe convert`)')
    .option('--port <n>', 'port (0 = any free port)', '8000')
    .option('--host <addr>', 'address to bind; keep 127.0.0.1 unless you know why', '127.0.0.1')
    .option('--device <d>', 'cpu | cuda | webgpu | dml | coreml (falls back to cpu, and says so)', 'cpu')
    .option('--dtype <t>', 'fp32 | q8 | q4 | fp16 …', 'fp32')
    .option('--name <id>', 'model id clients send (default: the folder name)')
    .option('--threads <n>', 'ONNX Runtime threads (default: 1 for a small model, else one per core)')
    .option('--replicas <n>', 'engine processes serving the model, requests spread over them (default: one per core for a small model without --threads, else 1)')
    .option('--batch <n>', 'requests one engine process decodes together, step by step, each getting exactly the tokens it gets alone (a q8 model on the CPU with one thread; others decode one at a time; 1 = off)', '8')
    .option('--api-key-file <file>', 'read the bearer key clients must send from this file (else $LOUPE_API_KEY, else a new one, printed)')
    .option('--image-root <dir>', 'a folder whose files requests may name as local images (repeatable; default: none, data: URLs only)', (v: string, all: string[]) => [...all, v], [] as string[])
    .option('--allow-origin <origin>', 'a browser page origin allowed to call, e.g. http://127.0.0.1:5173 (repeatable; default: none)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action(async (dir: string, o: { port: string; host: string; device: string; dtype: string; name?: string; threads?: string; replicas?: string; batch: string; apiKeyFile?: string; imageRoot: string[]; allowOrigin: string[] }) => {
      // The key never has to be on the command line (any local user can read argv in ps): a file or the environment.
      const given = readApiKey(o.apiKeyFile);
      for (const r of o.imageRoot) if (!fs.statSync(r, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`--image-root ${JSON.stringify(r)} is not a folder`);
      const threads = o.threads === undefined ? undefined : Number(o.threads);
      if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) throw new Error(`--threads must be an integer ≥ 1, got ${JSON.stringify(o.threads)}`);
      const replicas = o.replicas === undefined ? defaultReplicas(dir, o.device, threads) : Number(o.replicas);
      if (!(Number.isInteger(replicas) && replicas >= 1 && replicas <= 64)) throw new Error(`--replicas must be an integer from 1 to 64, got ${JSON.stringify(o.replicas)}`);
      const batch = Number(o.batch);
      if (!(Number.isInteger(batch) && batch >= 1 && batch <= 64)) throw new Error(`--batch must be an integer from 1 to 64, got ${JSON.stringify(o.batch)}`);
      const [{ serveModel }, { createEngineManager }] = await Promise.all([import('../../../app/engines/serve/serveModel'), import('../../core/wiring')]);
      const engines = await createEngineManager({ isolation: 'process' }); // a crash stays in the child
      const served = await serveModel(
        engines,
        { modelDir: path.resolve(dir), device: o.device as EngineDevice, dtype: o.dtype as EngineDtype, ...(threads ? { threads } : {}), replicas, batch },
        {
          host: o.host,
          port: Number(o.port),
          ...(o.name ? { modelId: o.name } : {}),
          ...(given ? { apiKey: given.key } : {}),
          imageRoots: o.imageRoot.map((r) => path.resolve(r)),
          allowOrigins: o.allowOrigin,
        },
      );
      const { info, server } = served;
      if (info.fallbackReason) console.error(`warning: ${info.fallbackReason}; running on ${info.device}`);
      console.log(`serving ${info.model} (device ${info.device}, dtype ${JSON.stringify(info.dtype)}, threads ${info.threads === 0 ? 'ORT default' : info.threads}${info.replicas ? `, ${info.replicas} engine processes` : ''}${info.batch ? `, up to ${info.batch} requests a decode step` : ''}) at ${server.url}`);
      console.log(given ? `  api key: from ${given.from}` : `  api key: ${server.apiKey}   (clients send "Authorization: Bearer KEY"; set LOUPE_API_KEY or --api-key-file to choose it)`);
      if (o.imageRoot.length) console.log(`  local images readable under: ${o.imageRoot.map((r) => path.resolve(r)).join(', ')}`);
      const stop = async () => {
        await served.close();
        await engines.dispose();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });
}

/** The bearer key from `--api-key-file` (first line) or `$LOUPE_API_KEY`; undefined = generate one. */
export function readApiKey(file: string | undefined, env: NodeJS.ProcessEnv = process.env): { key: string; from: string } | undefined {
  if (file !== undefined) {
    const key = fs.readFileSync(file, 'utf8').split(/\r?\n/)[0]!.trim();
    if (key.length < 16) throw new Error(`--api-key-file ${JSON.stringify(file)}: the first line must hold a key of at least 16 characters`);
    return { key, from: file };
  }
  const fromEnv = env.LOUPE_API_KEY?.trim();
  if (fromEnv) {
    if (fromEnv.length < 16) throw new Error('LOUPE_API_KEY must be at least 16 characters');
    return { key: fromEnv, from: 'LOUPE_API_KEY' };
  }
  return undefined;
}

/**
 * Engine processes by default: one per core for a small model on the CPU (its ONNX files together under
 * SMALL_MODEL_BYTES, where each session runs on one thread, so one process leaves the other cores idle), else one.
 */
export function defaultReplicas(dir: string, device: string, threads: number | undefined): number {
  if (device !== 'cpu' || threads !== undefined) return 1;
  let bytes = 0;
  const onnx = path.join(dir, 'onnx');
  try {
    for (const f of fs.readdirSync(onnx)) if (f.endsWith('.onnx') || f.endsWith('.onnx_data')) bytes += fs.statSync(path.join(onnx, f)).size;
  } catch {
    return 1;
  }
  if (bytes === 0 || bytes >= SMALL_MODEL_BYTES) return 1;
  return Math.max(1, Math.min(8, os.availableParallelism()));
}

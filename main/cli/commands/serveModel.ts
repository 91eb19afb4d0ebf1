/** `loupe serve-model MODEL_DIR` — the local engine as an OpenAI-compatible endpoint on 127.0.0.1. */
import path from 'node:path';
import type { Command } from 'commander';
import { serveModel } from '../../../app/engines/serve/serveModel';
import type { EngineDevice, EngineDtype } from '../../../app/engines/types';
import { createEngineManager } from '../../core/wiring';

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
    .action(async (dir: string, o: { port: string; host: string; device: string; dtype: string; name?: string; threads?: string }) => {
      const threads = o.threads === undefined ? undefined : Number(o.threads);
      if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) throw new Error(`--threads must be an integer ≥ 1, got ${JSON.stringify(o.threads)}`);
      const engines = await createEngineManager({ isolation: 'process' }); // a crash stays in the child
      const served = await serveModel(
        engines,
        { modelDir: path.resolve(dir), device: o.device as EngineDevice, dtype: o.dtype as EngineDtype, ...(threads ? { threads } : {}) },
        { host: o.host, port: Number(o.port), ...(o.name ? { modelId: o.name } : {}) },
      );
      const { info, server } = served;
      if (info.fallbackReason) console.error(`warning: ${info.fallbackReason}; running on ${info.device}`);
      console.log(`serving ${info.model} (device ${info.device}, dtype ${JSON.stringify(info.dtype)}, threads ${info.threads === 0 ? 'ORT default' : info.threads}) at ${server.url}`);
      const stop = async () => {
        await served.close();
        await engines.dispose();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });
}

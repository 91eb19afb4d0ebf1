/** `loupe convert HF_DIR OUT_DIR` — a Hugging Face Qwen2.5-VL / PixelReasoner checkpoint to the ONNX layout Loupe runs. */
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { modelsPath } from '../../../app/paths';

export function register(program: Command): void {
  program
    .command('convert')
    .description('convert a Qwen2.5-VL checkpoint folder to ONNX (transformers.js layout) with python3 + torch + transformers 5')
    .argument('<hf_dir>', 'Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer files)')
    .argument('<out_dir>', 'where to write the ONNX model folder')
    .option('--dtypes <list>', 'fp32 and/or q8', 'fp32,q8')
    .option('--check', 'compare ONNX logits with PyTorch on a one-image and a three-image prompt')
    .option('--python <exe>', 'python interpreter', 'python3')
    .action(async (hf: string, out: string, o: { dtypes: string; check?: boolean; python: string }) => {
      const args = [modelsPath('make_tiny_qwen25vl.py'), '--from', hf, out, '--dtypes', o.dtypes, ...(o.check ? ['--check'] : [])];
      const code = await new Promise<number>((resolve) => {
        const p = spawn(o.python, args, { stdio: 'inherit' });
        p.on('error', (e) => {
          console.error(`could not run ${o.python}: ${e.message} (install Python 3 with torch, transformers>=5, onnx, onnxruntime)`);
          resolve(127);
        });
        p.on('exit', (c) => resolve(c ?? 1));
      });
      if (code !== 0) {
        console.error(`convert failed (exit ${code})`);
        process.exitCode = code;
      }
    });
}

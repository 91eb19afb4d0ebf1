/** `loupe convert HF_DIR OUT_DIR` — a Hugging Face Qwen2.5-VL / PixelReasoner checkpoint to the ONNX layout Loupe runs. */
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { modelsPath } from '../../../app/paths';

export function register(program: Command): void {
  program
    .command('convert')
    .description('convert a Qwen2.5-VL checkpoint folder to ONNX (transformers.js layout) with python3 + torch + transformers 5')
    .argument('<hf_dir>', 'Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer files); with --attention or --fused alone: an ONNX model folder')
    .argument('[out_dir]', 'where to write the ONNX model folder')
    .option('--dtypes <list>', 'fp32 and/or q8', 'fp32,q8')
    .option('--check', 'compare ONNX logits with PyTorch on a one-image and a three-image prompt')
    .option('--attention', 'also write the analysis decoder (decoder_model_merged_attn*.onnx: per-layer attention outputs for attention maps); with no out_dir, add it to the ONNX model folder hf_dir')
    .option('--fused', 'also write the fused decoder (decoder_model_merged_fused*.onnx: the same decoder from onnxruntime fused operators, for CUDA; fp32/fp16 decoders only); with no out_dir, add it to the ONNX model folder hf_dir')
    .option('--fused-attention <kind>', 'attention in the fused decoder: gqa (GroupQueryAttention), ops (plain ONNX operators, the KV heads grouped by reshaping the query) or mha (MultiHeadAttention on the same grouping); ops by default: gqa and mha are 10-15 % faster once warm but decode at about a quarter of the speed the first time a session meets each new KV length, which every longer turn does', 'ops')
    .option('--no-decode-loop', 'with --fused: write the fused decoder without the decode loop. By default it also runs greedy decode steps inside one onnxruntime run (an ONNX Loop over the decoder, tokens embedded in the graph with a copy of the embedding table), so on CUDA the KV cache stays on the GPU between steps; greedy requests use it, with the same tokens')
    .option('--python <exe>', 'python interpreter', 'python3')
    .action(async (hf: string, out: string | undefined, o: { dtypes: string; check?: boolean; attention?: boolean; fused?: boolean; fusedAttention: string; decodeLoop?: boolean; python: string }) => {
      if (o.decodeLoop === false && !o.fused) {
        console.error('convert --no-decode-loop: it is part of the fused decoder; pass --fused too');
        process.exitCode = 2;
        return;
      }
      if (out === undefined && !o.attention && !o.fused) {
        console.error('convert: out_dir is required (or pass --attention / --fused to add the analysis / fused decoder to an ONNX model folder)');
        process.exitCode = 2;
        return;
      }
      if (out !== undefined) {
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
          return;
        }
      }
      if (o.attention) {
        const { addAnalysisDecoders } = await import('../../../native/engine/attentionGraph');
        try {
          for (const f of await addAnalysisDecoders(out ?? hf)) console.log(`wrote ${f.file} (${(f.bytes / 2 ** 20).toFixed(1)} MiB, ${f.layers} attention outputs)`);
        } catch (e) {
          console.error(`convert --attention: ${(e as Error).message}`);
          process.exitCode = 1;
        }
      }
      if (o.fused) {
        const { addFusedDecoders, FUSED_ATTENTIONS } = await import('../../../native/engine/fusedGraph');
        const attention = FUSED_ATTENTIONS.find((a) => a === o.fusedAttention);
        if (!attention) {
          console.error(`convert --fused-attention: expected ${FUSED_ATTENTIONS.join(', ')}, got ${JSON.stringify(o.fusedAttention)}`);
          process.exitCode = 2;
          return;
        }
        try {
          for (const f of await addFusedDecoders(out ?? hf, attention, o.decodeLoop !== false)) {
            console.log(`wrote ${f.file} (${(f.bytes / 2 ** 20).toFixed(1)} MiB${f.externalData ? ', weights read from the exported decoder\'s data file' : ''}, ${f.dtype}, attention ${f.attention}${f.decodeLoop ? `, with the decode loop (${f.loopStepNodes} nodes a step)` : ''}, ${f.nodesAfter} nodes instead of ${f.nodesBefore})`);
          }
        } catch (e) {
          console.error(`convert --fused: ${(e as Error).message}`);
          process.exitCode = 1;
        }
      }
    });
}

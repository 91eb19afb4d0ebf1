/**
 * Local engine throughput on CPU for the committed tiny Qwen2.5-VL (prefill and decode tokens/s, fp32 and q8,
 * one image and a three-image conversation, and a second turn that reuses the KV cache), plus the recorded PyTorch
 * `generate` numbers from the GPU machine (models/reports/device-*.json) for reference.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { QwenVLRuntime } from '../../native/engine/qwenRuntime';
import { addFusedDecoders } from '../../native/engine/fusedGraph';
import { greedy, parity, toMessages, TINY_DIR } from '../integration/engines/parityFixture';

const round = (x: number) => Math.round(x * 10) / 10;

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  const cpu = `${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}`;
  // the fused decoder (loupe convert --fused) beside the exported one, in a copy of the tiny model; on the CPU the
  // runtime keeps the exported one unless asked (LoadOptions.decoder), so its rows are the fused graph's CPU speed
  const fusedDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'loupe-bench-fused-')), 'tiny');
  cpSync(TINY_DIR, fusedDir, { recursive: true });
  await addFusedDecoders(fusedDir);
  // and with the decode loop (greedy tokens made inside one onnxruntime run; the default of `loupe convert --fused`)
  const loopDir = path.join(path.dirname(fusedDir), 'tiny-loop');
  cpSync(TINY_DIR, loopDir, { recursive: true });
  await addFusedDecoders(loopDir, 'ops', true);
  const configs = [
    { dtype: 'fp32', dir: TINY_DIR, label: 'fp32' },
    { dtype: 'fp32', dir: fusedDir, label: 'fp32, fused decoder', decoder: 'fused' },
    { dtype: 'fp32', dir: loopDir, label: 'fp32, fused decoder + decode loop', decoder: 'fused' },
    { dtype: 'q8', dir: TINY_DIR, label: 'q8' },
  ] as const;
  for (const cfg of configs) {
    const { dtype } = cfg;
    const rt = await QwenVLRuntime.load({ modelDir: cfg.dir, dtype, kvCache: false, ...('decoder' in cfg ? { decoder: cfg.decoder } : {}) });
    try {
      for (const [name, c] of Object.entries(parity.cases)) {
        const req = greedy(c, { maxTokens: 64 });
        await rt.generate(req); // warm-up
        let pre = 0, preMs = 0, dec = 0, decMs = 0;
        for (let i = 0; i < 3; i++) {
          const r = await rt.generate(req);
          pre += r.promptTokens;
          preMs += r.prefillMs ?? 0;
          dec += r.completionTokens - 1;
          decMs += r.decodeMs ?? 0;
        }
        rows.push({ source: 'node (this machine)', device: cpu, model: 'tiny-random-qwen25vl', dtype: cfg.label, case: name, prompt_tokens: c.input_ids.length,
          prefill_tok_s: round(pre / (preMs / 1000)), decode_tok_s: round(dec / (decMs / 1000)) });
      }
    } finally {
      await rt.dispose();
    }
  }
  rmSync(path.dirname(fusedDir), { recursive: true, force: true });
  // second turn with the KV cache: the three-image conversation after a turn that ended at the first crop
  const rt = await QwenVLRuntime.load({ modelDir: TINY_DIR, kvCache: true });
  try {
    const c = parity.cases.multi_image;
    let ms = 0, cached = 0, total = 0;
    for (let i = 0; i < 3; i++) {
      rt.resetCache();
      await rt.generate({ ...greedy(c), messages: toMessages(c).slice(0, 4), maxTokens: 4 });
      const r = await rt.generate(greedy(c, { maxTokens: 1 }));
      ms += r.prefillMs ?? 0;
      cached += r.cachedTokens ?? 0;
      total += r.promptTokens;
    }
    rows.push({ source: 'node (this machine)', device: cpu, model: 'tiny-random-qwen25vl', dtype: 'fp32', case: `multi_image 2nd turn (KV reuse ${Math.round((100 * cached) / total)}%)`,
      prompt_tokens: c.input_ids.length, prefill_tok_s: round(total / (ms / 1000)), decode_tok_s: '' });
  } finally {
    await rt.dispose();
  }
  // recorded on the GPU machine by models/make_tiny_qwen25vl.py --bench-gpu (PyTorch generate, bf16)
  for (const [file, model] of [['device-tiny-report.json', 'tiny-random-qwen25vl'], ['device-q3b-report.json', 'random Qwen2.5-VL-3B config']] as const) {
    try {
      const rep = JSON.parse(readFileSync(fileURLToPath(new URL(`../../models/reports/${file}`, import.meta.url)), 'utf8')) as {
        gpu_bench?: { gpu: string; dtype: string; prompt_tokens: number; prefill_tok_s: number; decode_tok_s: number };
      };
      const g = rep.gpu_bench;
      if (g) rows.push({ source: `recorded: PyTorch generate (${file})`, device: g.gpu, model, dtype: g.dtype, case: 'single_image', prompt_tokens: g.prompt_tokens,
        prefill_tok_s: round(g.prefill_tok_s), decode_tok_s: round(g.decode_tok_s) });
    } catch {
      // no recorded report: nothing to show
    }
  }
  return rows;
}

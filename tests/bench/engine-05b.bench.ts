/**
 * Local engine throughput on this CPU for a random-weight Qwen2.5-VL of ~0.5 B parameters (Qwen2.5-0.5B text dims,
 * the real 151,936-token vocabulary, a 4-block vision tower; the tiny model's tokenizer), fp32 and q8, on the same
 * prompts as the tiny bench (parity.json's one-image and three-image conversations), with ratios against the tiny
 * model measured in the same run. The model is 3.2 GB and git-ignored: this bench never makes it, it prints the
 * command that does.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { QwenVLRuntime } from '../../native/engine/qwenRuntime';
import { validateModelFolder } from '../../app/engines/local/modelFolder';
import { greedy, parity, TINY_DIR } from '../integration/engines/parityFixture';

type Row = Record<string, string | number>;

export const MODEL_05B_DIR = fileURLToPath(new URL('../../.cache/models/random-0.5b', import.meta.url));
const MAKE = 'nice python3 models/make_tiny_qwen25vl.py --random-config 0.5b .cache/models/random-0.5b --dtypes fp32,q8 --check   # ~6 min on 2 cores, 3.2 GB';
/** Decoded tokens per run: enough for a stable rate, few enough that fp32 at ~2 tok/s stays under a minute a case. */
const NEW_TOKENS = 16;

const round = (x: number) => Math.round(x * 100) / 100;

interface Measure {
  promptTokens: number;
  newTokens: number;
  prefillTokS: number;
  decodeTokS: number;
}

async function measure(dir: string, dtype: 'fp32' | 'q8'): Promise<{ loadS: number; cases: Record<string, Measure> }> {
  const t0 = performance.now();
  const rt = await QwenVLRuntime.load({ modelDir: dir, dtype, kvCache: false });
  const loadS = (performance.now() - t0) / 1000;
  const cases: Record<string, Measure> = {};
  try {
    await rt.generate(greedy(parity.cases.single_image, { maxTokens: 2 })); // warm-up: first-run session costs
    for (const [name, c] of Object.entries(parity.cases)) {
      const r = await rt.generate(greedy(c, { maxTokens: NEW_TOKENS }));
      cases[name] = {
        promptTokens: r.promptTokens,
        newTokens: r.completionTokens,
        prefillTokS: r.promptTokens / ((r.prefillMs ?? NaN) / 1000),
        decodeTokS: (r.completionTokens - 1) / ((r.decodeMs ?? NaN) / 1000),
      };
    }
  } finally {
    await rt.dispose();
  }
  return { loadS, cases };
}

export async function bench(): Promise<Row[]> {
  const rows: Row[] = [];
  const cpu = `${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}`;
  const report = existsSync(MODEL_05B_DIR) ? await validateModelFolder(MODEL_05B_DIR) : null;
  for (const dtype of ['fp32', 'q8'] as const) {
    if (!report?.dtypes.includes(dtype)) {
      rows.push({ model: 'random-0.5b', dtype, case: `not run: ${report ? `no complete ${dtype} ONNX in .cache/models/random-0.5b` : '.cache/models/random-0.5b is absent'}; make it with: ${MAKE}` });
      continue;
    }
    const tiny = await measure(TINY_DIR, dtype);
    const big = await measure(MODEL_05B_DIR, dtype);
    for (const [name, m] of Object.entries(big.cases)) {
      const t = tiny.cases[name]!;
      rows.push({
        device: cpu,
        model: 'random-0.5b (0.52 B params)',
        dtype,
        case: name,
        prompt_tokens: m.promptTokens,
        new_tokens: m.newTokens,
        load_s: round(big.loadS),
        prefill_tok_s: round(m.prefillTokS),
        decode_tok_s: round(m.decodeTokS),
        tiny_prefill_tok_s: round(t.prefillTokS),
        tiny_decode_tok_s: round(t.decodeTokS),
        // how many times slower than the tiny model (0.52 B vs 0.2 M params)
        'prefill tiny÷0.5b': Math.round((10 * t.prefillTokS) / m.prefillTokS) / 10,
        'decode tiny÷0.5b': Math.round((10 * t.decodeTokS) / m.decodeTokS) / 10,
      });
    }
  }
  const r = rows.find((x) => x.dtype === 'fp32' && x.case === 'single_image');
  if (r && typeof r.decode_tok_s === 'number') {
    // what fp32 decode implies: every step reads the decoder's weights once (KV cache aside)
    const onnx = path.join(MODEL_05B_DIR, 'onnx');
    const dec = readdirSync(onnx).filter((f) => /^decoder_model_merged\.onnx(_data)?$/.test(f)).reduce((s, f) => s + statSync(path.join(onnx, f)).size, 0);
    rows.push({ device: cpu, model: 'random-0.5b', dtype: 'fp32', case: `implied read bandwidth in decode (decoder ${(dec / 1e9).toFixed(2)} GB a token)`,
      decode_tok_s: `${((dec * r.decode_tok_s) / 1e9).toFixed(1)} GB/s` });
  }
  return rows;
}

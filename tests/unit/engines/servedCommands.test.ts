/**
 * The rendered server command lines, checked against each tool's documented CLI:
 * - vLLM (`vllm serve`; flags from vllm/engine/arg_utils.py and the vLLM server-arguments reference): --host, --port,
 *   --served-model-name, --dtype {auto,bfloat16,float16,float32,half,float}, --gpu-memory-utilization,
 *   --limit-mm-per-prompt (JSON, e.g. '{"image": 4}'), --mm-processor-kwargs (JSON forwarded to the HF processor:
 *   min_pixels / max_pixels for Qwen2.5-VL); --api-key defaults to $VLLM_API_KEY.
 * - SGLang (`python -m sglang.launch_server`; docs.sglang.io "Server Arguments"): --model-path, --host, --port,
 *   --served-model-name, --dtype, --mem-fraction-static.
 * - transformers (`transformers serve`; Transformers "Serve CLI" docs): --host, --port, --dtype, --force-model.
 * - loupe (`loupe serve-model DIR`, main/cli/commands/serveModel.ts): --host --port --device --dtype --name --threads.
 * None of vLLM, SGLang or transformers-serve can run on the machines this project tests on, so these are checks of the
 * argv against the documented flags, not runs.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { register as registerServeModel } from '../../../main/cli/commands/serveModel';
import { checkPreprocessorBounds, dialectPixelBounds, parseServedSpec, renderServedCommand, shellLine } from '../../../app/engines/served/commands';

const DIR = '/models/Pixel-Reasoner-7B';
const PX = 28 * 28;

/** Pairs `--flag value` of an argv (flags without a value are not used by any rendered command). */
function flags(argv: string[], from: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = from; i < argv.length; i += 2) {
    expect(argv[i]!.startsWith('--'), `word ${i} (${argv[i]}) should be a flag`).toBe(true);
    out[argv[i]!] = argv[i + 1]!;
  }
  return out;
}

describe('vLLM command line', () => {
  it('renders `vllm serve DIR` with the documented flags and the dialect’s pixel bounds', () => {
    const c = renderServedCommand({ backend: 'vllm', modelDir: DIR, port: 8001, gpuMemory: 0.85, imagesPerPrompt: 6, dtype: 'bfloat16' });
    expect(c.argv.slice(0, 3)).toEqual(['vllm', 'serve', DIR]);
    const f = flags(c.argv, 3);
    expect(f).toEqual({
      '--host': '127.0.0.1',
      '--port': '8001',
      '--served-model-name': 'Pixel-Reasoner-7B',
      '--dtype': 'bfloat16',
      '--gpu-memory-utilization': '0.85',
      '--limit-mm-per-prompt': '{"image":6}',
      '--mm-processor-kwargs': JSON.stringify({ min_pixels: 256 * PX, max_pixels: 8000 * PX }),
    });
    expect(JSON.parse(f['--limit-mm-per-prompt']!)).toEqual({ image: 6 });
    // The key travels in the environment vLLM reads for --api-key, never in argv.
    expect(c.apiKeyEnv).toBe('VLLM_API_KEY');
    expect(c.argv.join(' ')).not.toMatch(/api-key/);
  });

  it('takes the train-mode bounds from the same presets the runs use', () => {
    const c = renderServedCommand({ backend: 'vllm', modelDir: DIR, port: 8001, mode: 'train' });
    expect(JSON.parse(flags(c.argv, 3)['--mm-processor-kwargs']!)).toEqual({ min_pixels: dialectPixelBounds('train').minPixels, max_pixels: dialectPixelBounds('train').maxPixels });
    expect(dialectPixelBounds('train')).toEqual({ minPixels: 4 * PX, maxPixels: 2000 * PX });
  });

  it('refuses pixel bounds that differ from the dialect’s unless insisted on', () => {
    expect(() => renderServedCommand({ backend: 'vllm', modelDir: DIR, port: 8001, maxPixels: 1280 * PX })).toThrow(/differ from the dialect's eval bounds 200704\/6272000/);
    const c = renderServedCommand({ backend: 'vllm', modelDir: DIR, port: 8001, maxPixels: 1280 * PX, allowPixelMismatch: true });
    expect(JSON.parse(flags(c.argv, 3)['--mm-processor-kwargs']!).max_pixels).toBe(1280 * PX);
    expect(() => renderServedCommand({ backend: 'vllm', modelDir: DIR, port: 8001, minPixels: 9000 * PX, allowPixelMismatch: true })).toThrow(/above maxPixels/);
  });
});

describe('SGLang command line', () => {
  it('renders `python3 -m sglang.launch_server --model-path DIR …`', () => {
    const c = renderServedCommand({ backend: 'sglang', modelDir: DIR, port: 30000, gpuMemory: 0.8, dtype: 'float16', modelName: 'pr7b' });
    expect(c.argv.slice(0, 3)).toEqual(['python3', '-m', 'sglang.launch_server']);
    expect(flags(c.argv, 3)).toEqual({ '--model-path': DIR, '--host': '127.0.0.1', '--port': '30000', '--served-model-name': 'pr7b', '--dtype': 'float16', '--mem-fraction-static': '0.8' });
  });
  it('is kept on 127.0.0.1 (its key would be on the command line)', () => {
    expect(() => renderServedCommand({ backend: 'sglang', modelDir: DIR, port: 30000, host: '0.0.0.0' })).toThrow(/127\.0\.0\.1/);
  });
});

describe('transformers serve command line', () => {
  it('renders `transformers serve --force-model DIR`', () => {
    const c = renderServedCommand({ backend: 'transformers', modelDir: DIR, port: 8002 });
    expect(c.argv.slice(0, 2)).toEqual(['transformers', 'serve']);
    expect(flags(c.argv, 2)).toEqual({ '--host': '127.0.0.1', '--port': '8002', '--dtype': 'auto', '--force-model': DIR });
  });
  it('refuses a dtype the CLI does not list', () => {
    expect(() => renderServedCommand({ backend: 'transformers', modelDir: DIR, port: 8002, dtype: 'half' })).toThrow(/dtype "half" is not one transformers accepts/);
  });
});

describe('loupe serve-model command line', () => {
  it('renders options that `loupe serve-model` itself declares', () => {
    const c = renderServedCommand({ backend: 'loupe', modelDir: DIR, port: 8003, device: 'cuda', dtype: 'fp16', threads: 4 }, { node: '/usr/bin/node', loupeBin: '/opt/loupe/bin/loupe.mjs' });
    expect(c.argv.slice(0, 4)).toEqual(['/usr/bin/node', '/opt/loupe/bin/loupe.mjs', 'serve-model', DIR]);
    const f = flags(c.argv, 4);
    expect(f).toEqual({ '--host': '127.0.0.1', '--port': '8003', '--device': 'cuda', '--dtype': 'fp16', '--name': 'Pixel-Reasoner-7B', '--threads': '4' });
    // Every flag rendered is an option of the real command (commander refuses unknown ones).
    const program = new Command();
    registerServeModel(program);
    const known = new Set(program.commands.find((x) => x.name() === 'serve-model')!.options.map((o) => o.long));
    for (const k of Object.keys(f)) expect(known.has(k), `loupe serve-model has no ${k}`).toBe(true);
    expect(c.apiKeyEnv).toBe('LOUPE_API_KEY');
  });
});

describe('hostile specs are refused before anything runs', () => {
  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['relative folder', { modelDir: 'models/x' }, /absolute path/],
    ['newline in folder', { modelDir: '/m/x\n#SBATCH --uid=0' }, /control characters/],
    ['dot-dot', { modelDir: '/m/../etc' }, /'\.\.' segment/],
    ['shell in the model name', { modelName: 'x;rm -rf ~' }, /model name/],
    ['port out of range', { port: 80 }, />=1024|greater than or equal to 1024/],
    ['port not a number', { port: '8000' }, /number/],
    ['public bind elsewhere', { host: '8.8.8.8' }, /host/],
    ['gpu share of 1.5', { gpuMemory: 1.5 }, /gpuMemory/],
    ['unknown key', { extra: 1 }, /Unrecognized key/],
    ['images per prompt 0', { imagesPerPrompt: 0 }, /imagesPerPrompt/],
  ];
  for (const [what, patch, re] of bad) {
    it(what, () => {
      expect(() => parseServedSpec({ backend: 'vllm', modelDir: DIR, port: 8000, ...patch })).toThrow(re);
    });
  }
  it('loupe-only settings are refused for other servers', () => {
    expect(() => parseServedSpec({ backend: 'vllm', modelDir: DIR, port: 8000, device: 'cuda' })).toThrow(/device and threads/);
    expect(() => parseServedSpec({ backend: 'loupe', modelDir: DIR, port: 8000, gpuMemory: 0.5 })).toThrow(/GPU memory/);
  });
});

describe('job-script quoting', () => {
  it('quotes every word so a folder with spaces or quotes stays one word', () => {
    const line = shellLine(['vllm', 'serve', "/m/it's here", '--mm-processor-kwargs', '{"min_pixels":1}']);
    expect(line).toBe(`vllm serve '/m/it'\\''s here' --mm-processor-kwargs '{"min_pixels":1}'`);
  });
});

describe('preprocessor bounds (SGLang / transformers serve read them from the folder)', () => {
  const want = { ...dialectPixelBounds('eval'), backend: 'sglang' as const };
  it('match', () => expect(checkPreprocessorBounds(JSON.stringify({ min_pixels: 256 * PX, max_pixels: 8000 * PX }), want)).toBeNull());
  it('mismatch is named', () => expect(checkPreprocessorBounds(JSON.stringify({ min_pixels: 3136, max_pixels: 12845056 }), want)).toMatch(/3136\/12845056.*200704\/6272000/));
  it('absent or broken', () => {
    expect(checkPreprocessorBounds('{}', want)).toMatch(/names no min_pixels/);
    expect(checkPreprocessorBounds('{', want)).toMatch(/not valid JSON/);
  });
});

/** Model folder validation and the workspace model registry, on real copies of the committed tiny model. */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateModelFolder } from '../../../app/engines/local/modelFolder';
import { ModelRegistry } from '../../../app/engines/modelRegistry';
import { EngineError } from '../../../app/engines/errors';
import { TINY_DIR } from './parityFixture';

const tmps: string[] = [];
function copyTiny(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'loupe-model-'));
  tmps.push(d);
  const dst = path.join(d, 'tiny');
  cpSync(TINY_DIR, dst, { recursive: true });
  return dst;
}
const editJson = (file: string, f: (o: Record<string, unknown>) => void) => {
  const o = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  f(o);
  writeFileSync(file, JSON.stringify(o));
};
afterEach(() => {
  for (const d of tmps.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('validateModelFolder', () => {
  it('accepts the tiny model and reports dtypes, size and a memory estimate', async () => {
    const r = await validateModelFolder(TINY_DIR);
    expect(r.errors).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.modelType).toBe('qwen2_5_vl');
    expect(r.dtypes).toEqual(['fp32', 'q8']);
    expect(r.dtypeBytes.q8!).toBeLessThan(r.dtypeBytes.fp32!);
    expect(r.sizeBytes).toBeGreaterThan(r.dtypeBytes.fp32! + r.dtypeBytes.q8!);
    expect(r.text).toEqual({ layers: 2, kvHeads: 2, headDim: 16, hidden: 64, vocab: expect.any(Number) });
    expect(r.memoryEstimateBytes).toBeGreaterThan(r.dtypeBytes.fp32!);
  });

  it('names a missing folder', async () => {
    const r = await validateModelFolder(path.join(os.tmpdir(), 'loupe-no-such-model'));
    expect(r.ok).toBe(false);
    expect(r.errors[0]).toMatch(/loupe-no-such-model: folder not found/);
  });

  it('names a missing tokenizer.json', async () => {
    const d = copyTiny();
    rmSync(path.join(d, 'tokenizer.json'));
    const r = await validateModelFolder(d);
    expect(r.ok).toBe(false);
    expect(r.errors).toEqual([expect.stringMatching(/^tokenizer\.json: missing/)]);
  });

  it('asks for processor_class when it is absent', async () => {
    const d = copyTiny();
    editJson(path.join(d, 'preprocessor_config.json'), (o) => delete o.processor_class);
    const r = await validateModelFolder(d);
    expect(r.errors.join('\n')).toMatch(/processor_class .*set it to "Qwen2_5_VLProcessor"/);
  });

  it('asks for the chat template in tokenizer_config.json', async () => {
    const d = copyTiny();
    editJson(path.join(d, 'tokenizer_config.json'), (o) => delete o.chat_template);
    expect((await validateModelFolder(d)).errors.join('\n')).toMatch(/tokenizer_config\.json: chat_template missing/);
  });

  it('catches a tokenizer that does not match the model', async () => {
    const d = copyTiny();
    editJson(path.join(d, 'config.json'), (o) => (o.image_token_id = 5));
    expect((await validateModelFolder(d)).errors.join('\n')).toMatch(/<\|image_pad\|> is id \d+ but config\.json image_token_id is 5/);
  });

  it('rejects another architecture by name', async () => {
    const d = copyTiny();
    editJson(path.join(d, 'config.json'), (o) => (o.model_type = 'llava'));
    expect((await validateModelFolder(d)).errors.join('\n')).toMatch(/model_type is "llava"/);
  });

  it('names the ONNX file a requested dtype lacks, and what is present', async () => {
    const d = copyTiny();
    rmSync(path.join(d, 'onnx', 'vision_encoder_quantized.onnx'));
    const ok = await validateModelFolder(d, { dtype: 'fp32' });
    expect(ok.ok).toBe(true);
    expect(ok.dtypes).toEqual(['fp32']);
    const bad = await validateModelFolder(d, { dtype: 'q8' });
    expect(bad.ok).toBe(false);
    expect(bad.errors.join('\n')).toMatch(/dtype "q8" needs onnx\/vision_encoder_quantized\.onnx \(present: fp32; q8: missing onnx\/vision_encoder_quantized\.onnx\)/);
    const mixed = await validateModelFolder(d, { dtype: { vision_encoder: 'fp32', decoder_model_merged: 'q8', embed_tokens: 'q8' } });
    expect(mixed.ok).toBe(true);
  });

  it('requires the external data file config.json announces', async () => {
    const d = copyTiny();
    editJson(path.join(d, 'config.json'), (o) => (o['transformers.js_config'] = { use_external_data_format: { 'decoder_model_merged.onnx': 1 } }));
    const r = await validateModelFolder(d, { dtype: 'fp32' });
    expect(r.errors.join('\n')).toMatch(/onnx\/decoder_model_merged\.onnx_data/);
  });

  it('reports broken JSON with the file name', async () => {
    const d = copyTiny();
    writeFileSync(path.join(d, 'config.json'), '{ not json');
    expect((await validateModelFolder(d)).errors.join('\n')).toMatch(/^config\.json: not valid JSON/m);
  });
});

describe('ModelRegistry', () => {
  it('remembers models across instances, updates on re-add and removes', async () => {
    const settings = mkdtempSync(path.join(os.tmpdir(), 'loupe-settings-'));
    tmps.push(settings);
    const a = new ModelRegistry(settings);
    const { model } = await a.add(TINY_DIR, { name: 'Tiny' });
    expect(model).toMatchObject({ id: 'tiny-random-qwen25vl', name: 'Tiny', path: TINY_DIR, dtypes: ['fp32', 'q8'], modelType: 'qwen2_5_vl' });
    const copy = copyTiny();
    const second = await a.add(copy);
    expect(second.model.id).toBe('tiny');
    const b = new ModelRegistry(settings);
    expect((await b.list()).map((m) => m.id)).toEqual(['tiny-random-qwen25vl', 'tiny']);
    await b.add(TINY_DIR, { name: 'Renamed' });
    expect((await b.get('tiny-random-qwen25vl'))?.name).toBe('Renamed');
    expect(await b.list()).toHaveLength(2);
    expect(await b.remove('tiny')).toBe(true);
    expect(await b.remove('tiny')).toBe(false);
    expect((await new ModelRegistry(settings).list()).map((m) => m.id)).toEqual(['tiny-random-qwen25vl']);
  });

  it('refuses an invalid folder with every problem listed, and stores nothing', async () => {
    const settings = mkdtempSync(path.join(os.tmpdir(), 'loupe-settings-'));
    tmps.push(settings);
    const d = copyTiny();
    rmSync(path.join(d, 'tokenizer.json'));
    editJson(path.join(d, 'preprocessor_config.json'), (o) => delete o.processor_class);
    const reg = new ModelRegistry(settings);
    const err = await reg.add(d).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/tokenizer\.json: missing/);
    expect((err as Error).message).toMatch(/processor_class/);
    expect(await reg.list()).toEqual([]);
  });

  it('says which file is corrupt instead of dropping the list', async () => {
    const settings = mkdtempSync(path.join(os.tmpdir(), 'loupe-settings-'));
    tmps.push(settings);
    writeFileSync(path.join(settings, 'models.json'), '[');
    await expect(new ModelRegistry(settings).list()).rejects.toThrow(/models\.json: not a valid model registry/);
  });
});

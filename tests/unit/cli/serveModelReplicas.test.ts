import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultReplicas } from '../../../main/cli/commands/serveModel';
import { SMALL_MODEL_BYTES } from '../../../app/engines/local/protocol';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-replicas-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function model(name: string, bytes: number): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'onnx', 'decoder_model_merged.onnx'), '');
  fs.truncateSync(path.join(dir, 'onnx', 'decoder_model_merged.onnx'), bytes); // sparse: no disk used
  return dir;
}

describe('serve-model --replicas default', () => {
  const cores = Math.min(8, os.availableParallelism());
  it('one engine process per core (up to 8) for a small model on the CPU', () => {
    expect(defaultReplicas(model('small', 1024 * 1024), 'cpu', undefined)).toBe(cores);
  });
  it('one for a large model, a GPU, chosen threads or a folder without ONNX files', () => {
    expect(defaultReplicas(model('large', SMALL_MODEL_BYTES + 1), 'cpu', undefined)).toBe(1);
    expect(defaultReplicas(model('gpu', 1024), 'cuda', undefined)).toBe(1);
    expect(defaultReplicas(model('threads', 1024), 'cpu', 2)).toBe(1);
    expect(defaultReplicas(path.join(tmp, 'missing'), 'cpu', undefined)).toBe(1);
  });
});

describe('serve-model --batch', () => {
  it('refuses a batch that is not an integer from 1 to 64, before loading anything', async () => {
    const { Command } = await import('commander');
    const { register } = await import('../../../main/cli/commands/serveModel');
    for (const bad of ['0', '65', '2.5', 'eight']) {
      const program = new Command().exitOverride();
      register(program);
      await expect(program.parseAsync(['node', 'loupe', 'serve-model', model('batch', 1024), '--batch', bad]), bad).rejects.toThrow(/--batch must be an integer from 1 to 64/);
    }
  });
});

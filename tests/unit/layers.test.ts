import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(__dirname, '..', '..');
const eslint = new ESLint({ cwd: ROOT });

async function layerErrors(file: string, code: string): Promise<string[]> {
  const [res] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return (res?.messages ?? []).filter((m) => m.ruleId === 'loupe/layers').map((m) => m.message);
}

describe('the layer rule of DESIGN.md §2', () => {
  it('stops app/ from importing main/, native/, Electron or React', async () => {
    expect(await layerErrors('app/agent/x.ts', "import { createCore } from '../../main/core';\nexport const a = createCore;\n")).toEqual([expect.stringContaining('Bad layering')]);
    expect(await layerErrors('app/agent/x.ts', "import { x } from '../../native/image';\nexport const a = x;\n")).toEqual([expect.stringContaining('native/')]);
    expect(await layerErrors('app/tools/x.ts', "import { app } from 'electron';\nexport const a = app;\n")).toHaveLength(1);
    expect(await layerErrors('app/tools/x.ts', "import React from 'react';\nexport const a = React;\n")).toHaveLength(1);
  });
  it('keeps app/contract free of Node and of the rest of app/', async () => {
    expect(await layerErrors('app/contract/x.ts', "import fs from 'node:fs';\nexport const a = fs;\n")).toHaveLength(1);
    expect(await layerErrors('app/contract/x.ts', "import { a } from '../agent/loop';\nexport const b = a;\n")).toHaveLength(1);
    expect(await layerErrors('app/contract/x.ts', "import { z } from 'zod';\nimport { T } from './trajectory';\nexport const b = [z, T];\n")).toEqual([]);
  });
  it('lets the renderer reach the core only through app/contract', async () => {
    expect(await layerErrors('renderer/src/x.ts', "import { a } from '../../app/agent/loop';\nexport const b = a;\n")).toHaveLength(1);
    expect(await layerErrors('renderer/src/x.ts', "import fs from 'node:fs';\nexport const b = fs;\n")).toHaveLength(1);
    expect(await layerErrors('renderer/src/x.ts', "import { calls } from '../../app/contract';\nexport const b = calls;\n")).toEqual([]);
  });
  it('lets main/ wire anything', async () => {
    expect(await layerErrors('main/core/x.ts', "import { a } from '../../native/image';\nimport { b } from '../../app/agent';\nexport const c = [a, b];\n")).toEqual([]);
  });
  it('catches a dynamic import of native/ from app/', async () => {
    expect(await layerErrors('app/sweeps/x.ts', "export const load = () => import('../../native/image');\n")).toEqual([expect.stringContaining('native/')]);
    expect(await layerErrors('app/sweeps/x.ts', "export const load = () => import(`../../native/engine/worker`);\n")).toHaveLength(1);
    expect(await layerErrors('app/sweeps/x.ts', "export type T = import('../../native/image').X;\n")).toHaveLength(1);
  });
  it('keeps sharp, onnxruntime and @huggingface under native/', async () => {
    expect(await layerErrors('app/importers/x.ts', "import sharp from 'sharp';\nexport const a = sharp;\n")).toEqual([expect.stringContaining('only under native/')]);
    expect(await layerErrors('app/importers/x.ts', "export const a = async () => (await import('sharp')).default;\n")).toHaveLength(1);
    expect(await layerErrors('app/engines/x.ts', "import * as ort from 'onnxruntime-node';\nexport const a = ort;\n")).toHaveLength(1);
    expect(await layerErrors('main/core/x.ts', "import { AutoProcessor } from '@huggingface/transformers';\nexport const a = AutoProcessor;\n")).toHaveLength(1);
    expect(await layerErrors('native/image/x.ts', "import sharp from 'sharp';\nimport * as ort from 'onnxruntime-node';\nexport const a = [sharp, ort];\n")).toEqual([]);
  });
  it('keeps ws and Node out of the renderer', async () => {
    expect(await layerErrors('renderer/src/x.ts', "import { WebSocket } from 'ws';\nexport const a = WebSocket;\n")).toEqual([expect.stringContaining('ws')]);
    expect(await layerErrors('renderer/src/x.tsx', "export const a = () => import('node:path');\n")).toHaveLength(1);
    expect(await layerErrors('renderer/src/x.ts', "export * from '../../app/workspace';\n")).toHaveLength(1);
  });
  it('keeps main/core free of the doors', async () => {
    expect(await layerErrors('main/core/x.ts', "import { probeOpenAI } from '../cli/wiring';\nexport const a = probeOpenAI;\n")).toEqual([expect.stringContaining('main/cli')]);
    expect(await layerErrors('main/core/handlers/x.ts', "export const a = () => import('../../cli/commands/eval');\n")).toHaveLength(1);
    expect(await layerErrors('main/core/x.ts', "import { app } from 'electron';\nexport const a = app;\n")).toHaveLength(1);
    expect(await layerErrors('main/cli/x.ts', "import { createCore } from '../core';\nexport const a = createCore;\n")).toEqual([]);
  });
  it('keeps app/ away from every door', async () => {
    expect(await layerErrors('app/training/x.ts', "export const a = () => import('../../main/electron/main');\n")).toHaveLength(1);
    expect(await layerErrors('app/training/x.ts', "const s = require('../../main/server');\nexport const a = s;\n")).toHaveLength(1);
  });
});

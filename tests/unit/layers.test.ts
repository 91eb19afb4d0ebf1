import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(__dirname, '..', '..');
const eslint = new ESLint({ cwd: ROOT });

async function layerErrors(file: string, code: string): Promise<string[]> {
  const [res] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return (res?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
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
});

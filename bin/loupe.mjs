#!/usr/bin/env node
// The `loupe` command. Runs the CLI bundle (dist/cli/loupe.mjs, built by `npm install` through the `prepare`
// script, or by `npm run build:node`) when it is current: every source file it was built from still has the size
// and mtime dist/cli/inputs.json recorded. Otherwise — a clone edited since, or installed without a build — the
// TypeScript sources run through tsx, as they always can.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function bundleIsCurrent() {
  if (process.env.LOUPE_CLI_FROM_SOURCE === '1') return false;
  let inputs;
  try {
    inputs = JSON.parse(fs.readFileSync(path.join(root, 'dist/cli/inputs.json'), 'utf8'));
  } catch {
    return false;
  }
  if (!inputs || !Array.isArray(inputs.files) || inputs.files.length === 0) return false;
  for (const entry of inputs.files) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') return false;
    const [rel, size, mtimeMs] = entry;
    let st;
    try {
      st = fs.statSync(path.join(root, rel));
    } catch {
      return false;
    }
    if (st.size !== size || st.mtimeMs !== mtimeMs) return false;
  }
  return true;
}

if (bundleIsCurrent()) {
  await import(pathToFileURL(path.join(root, 'dist/cli/loupe.mjs')).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../main/cli/run.ts');
}

import path from 'node:path';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package root (where package.json is), whether run from source or from a bundle. */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

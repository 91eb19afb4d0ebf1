/** Find a Python interpreter with Pillow (for reference comparisons in tests and benchmarks). */
import { execFileSync } from 'node:child_process';

let found: string | null | undefined;

/** `$LOUPE_PYTHON`, else the first of python3 / /usr/bin/python3 that can `import PIL`; null if none. */
export function findPillowPython(): string | null {
  if (found !== undefined) return found;
  const candidates = [process.env['LOUPE_PYTHON'], 'python3', '/usr/bin/python3', 'python'].filter((c): c is string => !!c);
  for (const c of candidates) {
    try {
      execFileSync(c, ['-c', 'import PIL'], { stdio: 'ignore', timeout: 10_000 });
      found = c;
      return c;
    } catch {
      // try the next one
    }
  }
  found = null;
  return null;
}

/**
 * The Python that loupe-tiny's scripts run on in tests, by the app's one rule (app/workspace/python.ts): $LOUPE_PYTHON
 * when set, else python3, else /usr/bin/python3 — the first that imports every module asked for. No such Python is a
 * test failure with the install hint, never a skip (CI installs Debian's python3-torch / python3-numpy / python3-pil when the machine's python3 lacks them).
 */
import { probePythonSync } from '../../../app/workspace/python';

export function findPython(modules: string[]): { python: string | null; tried: string[] } {
  return probePythonSync(modules);
}

const DEBIAN: Record<string, string> = { torch: 'python3-torch', numpy: 'python3-numpy', PIL: 'python3-pil' };

/** The Python, or an Error naming what to install. */
export function requirePython(modules: string[]): string {
  const { python, tried } = findPython(modules);
  if (python) return python;
  throw new Error(
    `no python3 with ${modules.join(', ')} (set LOUPE_PYTHON, or apt-get install ${modules.map((m) => DEBIAN[m] ?? m).join(' ')}); tried:\n${tried.join('\n')}`,
  );
}

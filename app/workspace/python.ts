/**
 * Python discovery, one rule for every part that runs Python (the loupe-tiny trainer, Pillow reference checks):
 * `$LOUPE_PYTHON` when set (it chooses, no fallback), else the first of python3, /usr/bin/python3 that
 * imports the module asked for.
 */
import { execFile, execFileSync } from 'node:child_process';

export type FoundPython = { python: string; version: string } | { python: null; tried: string[] };
/** A Python with torch, as the Training page reports it. */
export type TorchPython = { python: string; torch: string } | { python: null; tried: string[] };

export function pythonCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const chosen = env['LOUPE_PYTHON'];
  return chosen ? [chosen] : ['python3', '/usr/bin/python3'];
}

const probe = (module: string) => `import ${module}; print(getattr(${module}, '__version__', ''))`;

/** The first candidate that imports `module`, with the module's version (off the event loop). */
export async function findPython(module: string, env: NodeJS.ProcessEnv = process.env): Promise<FoundPython> {
  const tried = pythonCandidates(env);
  for (const py of tried) {
    const v = await new Promise<string | null>((resolve) => {
      execFile(py, ['-c', probe(module)], { timeout: 60_000 }, (err, stdout) => resolve(err ? null : stdout.trim()));
    });
    if (v !== null) return { python: py, version: v };
  }
  return { python: null, tried };
}

/** The same, blocking (for tests and benchmarks that decide up front whether a reference can run). */
export function findPythonSync(module: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const py of pythonCandidates(env)) {
    try {
      execFileSync(py, ['-c', probe(module)], { stdio: 'ignore', timeout: 10_000 });
      return py;
    } catch {
      // try the next one
    }
  }
  return null;
}

/** A Python with torch (the loupe-tiny driver resolves the same way). */
export async function findTorchPython(env: NodeJS.ProcessEnv = process.env): Promise<TorchPython> {
  const r = await findPython('torch', env);
  return r.python === null ? r : { python: r.python, torch: r.version };
}

/**
 * Python discovery, one rule for every part that runs Python (the loupe-tiny trainer, Pillow reference checks):
 * `$LOUPE_PYTHON` when set (it chooses, no fallback), else the first of python3, /usr/bin/python3 that
 * imports the module asked for.
 */
import { execFile, spawnSync } from 'node:child_process';

export type FoundPython = { python: string; version: string } | { python: null; tried: string[] };

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
  return probePythonSync([module], env).python;
}

/** The first candidate that imports every one of `modules`, blocking; else each candidate with why it failed. */
export function probePythonSync(modules: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 60_000): { python: string | null; tried: string[] } {
  const tried: string[] = [];
  for (const py of pythonCandidates(env)) {
    const r = spawnSync(py, ['-c', `import ${modules.join(', ')}`], { encoding: 'utf8', timeout: timeoutMs });
    if (r.status === 0) return { python: py, tried };
    tried.push(`${py}: ${r.error ? r.error.message : (r.stderr || '').trim().split('\n').pop() || `exit ${r.status}`}`);
  }
  return { python: null, tried };
}

/** Every Python module models/loupe-tiny/train.py (and what it imports: qwen_torch, scene_traj, pr_env, rl) needs for a
 * fine-tune; the ONNX export's transformers/onnx are optional (train.py skips the export without them and says so). */
export const LOUPE_TINY_PY_MODULES = [
  { module: 'torch', install: 'python3-torch / pip install torch' },
  { module: 'numpy', install: 'python3-numpy / pip install numpy' },
  { module: 'PIL', install: 'python3-pil / pip install pillow' },
] as const;

/** The trainer's Python, or which of the trainer's modules each candidate lacks. */
export type TrainerPython = { python: string; torch: string } | { python: null; tried: string[]; missing: Record<string, string[]> };

/** The first candidate that has every module of LOUPE_TINY_PY_MODULES (find_spec, without importing them; torch is then
 * imported for its version and to prove it loads). A slow machine can take a while to import torch: 180 s. */
export async function findTrainerPython(env: NodeJS.ProcessEnv = process.env): Promise<TrainerPython> {
  const tried = pythonCandidates(env);
  const names = LOUPE_TINY_PY_MODULES.map((m) => m.module);
  const code =
    `import importlib.util, json\nm = [n for n in ${JSON.stringify(names)} if importlib.util.find_spec(n) is None]\n` +
    `v = None\nif not m:\n    import torch\n    v = torch.__version__\nprint(json.dumps({"missing": m, "torch": v}))`;
  const missing: Record<string, string[]> = {};
  for (const py of tried) {
    const out = await new Promise<string | null>((resolve) => {
      execFile(py, ['-c', code], { timeout: 180_000 }, (err, stdout) => resolve(err ? null : stdout.trim()));
    });
    let r: { missing: string[]; torch: string | null } | null = null;
    try {
      r = out ? (JSON.parse(out.split('\n').pop() ?? '') as { missing: string[]; torch: string | null }) : null;
    } catch {
      r = null;
    }
    if (r && r.missing.length === 0 && r.torch) return { python: py, torch: r.torch };
    missing[py] = r ? r.missing : ['python3 itself (it did not run)'];
  }
  return { python: null, tried, missing };
}

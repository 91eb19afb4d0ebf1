/**
 * Running model-written Python (the PyVision code tool). `app/` only declares the contract;
 * `native/pysandbox` implements it with a separate, isolated Python process per episode and `main/` (or a
 * test) wires it in.
 */
import type { ExecOutcome, PyVisionVariant } from '../protocol/pyvision';

/** Per-run and per-episode limits. Every one is recorded in the run manifest. */
export interface CodeSandboxLimits {
  /** Wall time of one run; the process is killed and the run reported as a timeout (PV 20 s, PVRL 30 s). */
  wallSeconds: number;
  /** CPU time of one run (RLIMIT_CPU); reported as a timeout, the only time limit the references had. */
  cpuSeconds: number;
  /** Address-space limit of the Python process (RLIMIT_AS): Python raises its own MemoryError. */
  memoryBytes: number;
  /** Characters of printed text kept (head and tail); PV shows only 200 + 200 of them anyway. */
  maxOutputChars: number;
  /** Figures one run may produce; the next `plt.show()` raises RuntimeError. */
  maxFigures: number;
  /** Largest file the code may write in its scratch folder (RLIMIT_FSIZE). */
  fileBytes: number;
  /** Processes the sandbox may hold at once (RLIMIT_NPROC in its own user namespace). */
  maxProcesses: number;
}

export const DEFAULT_CODE_SANDBOX_LIMITS: Readonly<CodeSandboxLimits> = Object.freeze({
  wallSeconds: 30,
  cpuSeconds: 20,
  memoryBytes: 2 * 1024 ** 3,
  maxOutputChars: 1_000_000,
  maxFigures: 32,
  fileBytes: 256 * 1024 ** 2,
  maxProcesses: 32,
});

/** How the process is isolated: `bwrap` = namespaces (no network, read-only images, scratch only). */
export type CodeIsolation = 'bwrap' | 'none';

export interface CodeRunResult extends ExecOutcome {
  /** Paths (on this machine) of the figures this run produced, in order. */
  figures: string[];
  /** Exception class name when `error` is set. */
  errorType: string | null;
  /** Why a run counts as a timeout: 'wall', 'cpu', or the exit the reference would have waited out. */
  timeoutReason: string | null;
  /** Which limits this run hit (e.g. `wall`, `cpu`, `output`, `figures`). */
  limitsHit: string[];
  wallMs: number;
  cpuMs: number | null;
  /** Printed characters before the output cap. */
  stdoutChars: number;
  /** True when the worker was restarted after this run (its variables are gone). */
  restarted: boolean;
}

export interface CodeSandboxInfo {
  isolation: CodeIsolation;
  python: string;
  pythonVersion: string;
  limits: CodeSandboxLimits;
}

export interface CodeSandbox {
  readonly info: CodeSandboxInfo;
  /** Run `source` exactly as given in the episode's persistent namespace. Never throws for user-code errors. */
  run(source: string): Promise<CodeRunResult>;
  close(): Promise<void>;
}

export interface CodeSandboxEpisode {
  variant: PyVisionVariant;
  /** The episode's question images (bound as `image_clue_i`, visible read-only). */
  images: string[];
}

export type CodeSandboxFactory = (episode: CodeSandboxEpisode) => Promise<CodeSandbox>;

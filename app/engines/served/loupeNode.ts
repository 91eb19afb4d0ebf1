/**
 * Which program runs `loupe serve-model` for a served engine of backend `loupe` on this machine (no Command given).
 *
 * Under Node (the CLI, `loupe serve`, tests) it is this process's own Node: `process.execPath bin/loupe.mjs`. Inside
 * Electron the core runs in a utilityProcess whose `process.execPath` is the Electron binary, and the packaged app's
 * RunAsNode fuse is off (electron.config.ts), so that binary cannot run a script. There the launcher uses, in order:
 *   1. `LOUPE_NODE`, when set: that Node (it must be an absolute path to a Node >= 20.19);
 *   2. the first `node` on PATH that is >= 20.19;
 * and only when Loupe's CLI entry is a real file outside the asar (Electron on a clone, `npm start`; a packaged app
 * ships no CLI). Otherwise the core serves the model in-app (launcher `inApp`: the same server, where 'in-app'); a
 * launcher without that refuses the start with a sentence naming what to set (Command, or LOUPE_NODE), before anything
 * is spawned. A LOUPE_NODE that is set but wrong is always refused: it was asked for.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const MIN_NODE: readonly [number, number] = [20, 19];

/** `explicit`: LOUPE_NODE was set and is wrong (refused even where the core could serve in-app: it was asked for). */
export type LoupeNode = { ok: true; node: string; source: 'this-node' | 'LOUPE_NODE' | 'PATH' } | { ok: false; reason: string; explicit?: true };

export interface LoupeNodeEnv {
  /** `process.versions` (Electron sets `electron`). */
  versions: Partial<Record<string, string>>;
  execPath: string;
  env: NodeJS.ProcessEnv;
  /** The CLI entry the server would run (bin/loupe.mjs of this Loupe). */
  loupeBin: string;
  platform?: NodeJS.Platform;
  /** `node --version` of a program (default: run it, 5 s bound); null when it does not answer like Node. */
  probe?: (bin: string) => string | null;
}

function probeVersion(bin: string): string | null {
  try {
    // ELECTRON_RUN_AS_NODE does not matter to a real Node; it is cleared so an Electron binary named node says so.
    const out = execFileSync(bin, ['--version'], { timeout: 5000, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, ELECTRON_RUN_AS_NODE: '' } });
    return out.trim();
  } catch {
    return null;
  }
}

/** `v20.19.0` → true when at least MIN_NODE. */
export function nodeVersionOk(v: string | null): boolean {
  const m = /^v(\d+)\.(\d+)\.(\d+)$/.exec(v ?? '');
  if (!m) return false;
  const [maj, min] = [Number(m[1]), Number(m[2])];
  return maj > MIN_NODE[0] || (maj === MIN_NODE[0] && min >= MIN_NODE[1]);
}

const WANT = `Node >= ${MIN_NODE.join('.')}`;

export function resolveLoupeNode(e: LoupeNodeEnv): LoupeNode {
  if (!e.versions.electron) return { ok: true, node: e.execPath, source: 'this-node' };
  const probe = e.probe ?? probeVersion;
  const head = `loupe serve-model: Loupe runs inside Electron here, whose own binary cannot run Loupe's CLI (its RunAsNode fuse is off)`;
  const inAsar = e.loupeBin.split(/[\\/]/).some((p) => p.toLowerCase().endsWith('.asar'));
  if (inAsar || !fs.existsSync(e.loupeBin)) {
    return { ok: false, reason: `${head}, and this copy of Loupe ships no CLI to run (no ${path.basename(e.loupeBin)} outside the app archive). Fill in Command with a Loupe CLI this machine has, e.g. "loupe" (npm install -g) or "node /path/to/loupe/bin/loupe.mjs"` };
  }
  const fromEnv = e.env.LOUPE_NODE;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!path.isAbsolute(fromEnv)) return { ok: false, explicit: true, reason: `${head}. LOUPE_NODE=${JSON.stringify(fromEnv)} must be an absolute path to a ${WANT}` };
    const v = probe(fromEnv);
    if (!nodeVersionOk(v)) return { ok: false, explicit: true, reason: `${head}. LOUPE_NODE=${JSON.stringify(fromEnv)} is ${v ? `Node ${v}` : 'not a Node that answers --version'}; set it to a ${WANT}, or fill in Command` };
    return { ok: true, node: fromEnv, source: 'LOUPE_NODE' };
  }
  const win = (e.platform ?? process.platform) === 'win32';
  const seen: string[] = [];
  for (const dir of (e.env.PATH ?? e.env.Path ?? '').split(win ? ';' : ':')) {
    if (!dir || !path.isAbsolute(dir)) continue; // a relative PATH entry would depend on the folder the app started in
    const bin = path.join(dir, win ? 'node.exe' : 'node');
    try {
      fs.accessSync(bin, fs.constants.X_OK);
      if (!fs.statSync(bin).isFile()) continue;
    } catch {
      continue;
    }
    const v = probe(bin);
    if (nodeVersionOk(v)) return { ok: true, node: bin, source: 'PATH' };
    seen.push(`${bin} (${v ?? 'no version'})`);
  }
  return { ok: false, reason: `${head}, and no ${WANT} is on PATH${seen.length ? ` (found only ${seen.join(', ')})` : ''}. Install ${WANT}, or set LOUPE_NODE to one and restart Loupe, or fill in Command, e.g. "node /path/to/loupe/bin/loupe.mjs"` };
}

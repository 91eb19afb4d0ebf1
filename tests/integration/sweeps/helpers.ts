/** Shared pieces of the sweep tests: a small loupe-synth benchmark, a replay file for it, and a CLI runner. */
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateSynth, synthTrajectories, type SynthSample } from '../../../app/synth';
import { sharpSynthRaster } from '../../../native/image/synthRaster';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const TINY_MODEL = path.join(REPO, 'models', 'tiny-random-qwen25vl');
/** The full `loupe` entry (bin/loupe.mjs imports it). */
export const CLI = path.join(REPO, 'main', 'cli', 'run.ts');
/** `loupe` with only eval/report/run registered (same command code; see cliChild.ts). */
export const CLI_CHILD = path.join(REPO, 'tests', 'integration', 'sweeps', 'cliChild.ts');

/**
 * Generate a loupe-synth benchmark of `n` images and a replay file of its SFT trajectories (crop then answer;
 * every third sample replays the "recover" trajectory with two crops). Sample 1's answer is replaced by a wrong one
 * so that runs have both correct and wrong samples.
 */
export async function makeSynth(dir: string, n: number, seed = 11): Promise<{ data: string; replay: string; samples: SynthSample[] }> {
  const data = path.join(dir, 'synth');
  const { samples } = await generateSynth({ seed, n, easyFraction: 0 }, data, sharpSynthRaster);
  const lines: string[] = [];
  samples.forEach((s, i) => {
    const all = synthTrajectories(s);
    const t = (i % 3 === 2 ? all.find((x) => x.kind === 'recover') : undefined) ?? all.find((x) => x.kind === 'zoom') ?? all[0]!;
    let turns = t.message_list.filter((m) => m.role === 'assistant').map((m) => m.content.map((p) => (p.type === 'text' ? p.text : '')).join(''));
    if (i === 1) turns = turns.map((x) => x.replace(/\\boxed\{[^}]*\}/g, '\\boxed{wrong}'));
    lines.push(JSON.stringify({ qid: s.qid, turns }));
  });
  const replay = path.join(dir, 'replay.jsonl');
  await fsp.writeFile(replay, lines.join('\n') + '\n');
  return { data, replay, samples };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run `loupe <args>` through tsx (as `npx loupe` does; by default the eval/report/run-only entry) and collect its output. */
export function runCli(args: string[], opts: { entry?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', opts.entry ?? CLI_CHILD, ...args], { cwd: opts.cwd ?? REPO, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The last non-empty stdout line, parsed. */
export function lastJson(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] ?? '') as Record<string, unknown>;
}

export async function readRecords(file: string): Promise<Array<Record<string, unknown>>> {
  const text = await fsp.readFile(file, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

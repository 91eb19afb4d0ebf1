/** Helpers shared by adapters: where the data is, and which files it has. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { BenchDataError, type LoadOptions } from '../types';

/** `dataDir` may name the folder or one data file in it. */
export function splitRoot(dataDir: string): { root: string; file?: string } {
  const abs = path.resolve(dataDir);
  if (!existsSync(abs)) throw new BenchDataError({ file: abs, problem: 'benchmark data not found (no such file or folder)' });
  return statSync(abs).isFile() ? { root: path.dirname(abs), file: abs } : { root: abs };
}

/** Names in `root` (or just the chosen file) that satisfy `pred`, as absolute paths, sorted. */
export function pickFiles(root: string, file: string | undefined, pred: (name: string) => boolean): string[] {
  const names = file ? [path.basename(file)] : readdirSync(root).sort();
  return names.filter(pred).map((n) => path.join(root, n));
}

/** A string option from `opts`, checked against the allowed values. */
export function choice<T extends string>(opts: LoadOptions | undefined, key: string, allowed: readonly T[], dflt: T): T {
  const v = opts?.[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new Error(`option ${key} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  }
  return v as T;
}

/** Throw the "nothing recognised here" error. */
export function noData(bench: string, root: string, formats: readonly string[]): never {
  throw new BenchDataError({ file: root, problem: `no ${bench} data found; expected one of: ${formats.join('; ')}` });
}

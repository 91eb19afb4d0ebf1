/** Benchmark adapter registry. */
import type { BenchmarkAdapter } from '../types';
import { hrbenchAdapter } from './hrbench';
import { infovqaAdapter } from './infovqa';
import { loupeSynthAdapter } from './loupeSynth';
import { mvbenchAdapter } from './mvbench';
import { pixelReasonerAdapter } from './pixelReasoner';
import { tallyqaAdapter } from './tallyqa';
import { vsibenchAdapter } from './vsibench';
import { vstarAdapter } from './vstar';

export const adapters: Readonly<Record<string, BenchmarkAdapter>> = Object.freeze(
  Object.fromEntries(
    [vstarAdapter, tallyqaAdapter, infovqaAdapter, mvbenchAdapter, vsibenchAdapter, hrbenchAdapter, pixelReasonerAdapter, loupeSynthAdapter].map((a) => [a.id, a]),
  ),
);

/** Aliases users type. */
const ALIASES: Record<string, string> = { 'v*': 'vstar', vstar_bench: 'vstar', infographicsvqa: 'infovqa', hrbench4k: 'hrbench', hrbench8k: 'hrbench', pr: 'pixel-reasoner', loupe: 'loupe-synth' };

/** The adapter for `id` (case-insensitive, common aliases accepted); throws listing the known ids. */
export function getAdapter(id: string): BenchmarkAdapter {
  const key = id.toLowerCase();
  const a = adapters[key] ?? adapters[ALIASES[key] ?? ''];
  if (!a) throw new Error(`unknown benchmark '${id}'; known: ${Object.keys(adapters).join(', ')}`);
  return a;
}

export { BenchDataError } from '../types';
export type { BenchmarkAdapter, BenchMedia, BenchSample, LoadInfo, LoadOptions, LoadResult } from '../types';

/** Scorer registry: every scorer by name; a run manifest records `{name: version}` for the ones it used. */
import { anlsScorer } from './anls';
import { mcMvbenchScorer } from './mcMvbench';
import { mcVsiScorer } from './mcVsi';
import { mcVstarScorer } from './mcVstar';
import { mraLmmsEvalScorer, mraTisScorer } from './mra';
import { prBoxedScorer } from './prBoxed';
import { tallyqaScorer } from './tallyqa';
import type { Scorer } from './types';

export type { PyErrorInfo, ScorableSample, ScoreResult, Scorer } from './types';

export const scorers: Readonly<Record<string, Scorer>> = Object.freeze(
  Object.fromEntries(
    [anlsScorer, mraTisScorer, mraLmmsEvalScorer, tallyqaScorer, mcVstarScorer, mcVsiScorer, mcMvbenchScorer, prBoxedScorer].map((s) => [s.name, s]),
  ),
);

/** The scorer called `name`; throws a clear error listing the known names. */
export function getScorer(name: string): Scorer {
  const s = scorers[name];
  if (!s) throw new Error(`unknown scorer '${name}'; known scorers: ${Object.keys(scorers).join(', ')}`);
  return s;
}

/** `{name: version}` for the manifest's `scorers` field. */
export function scorerVersions(names: Iterable<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) out[n] = getScorer(n).version;
  return out;
}

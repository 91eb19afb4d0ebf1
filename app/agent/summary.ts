/** Counts the reference reports per sample, from a Trajectory. */
import type { Trajectory } from '../contract/trajectory';

/**
 * `calls` = tool turns (PR `num_toolcalls`, including a forced-finish turn whose call did not run);
 * `toolErrors` = calls that got an error observation, plus a forced finish (PR `num_toolfails`).
 */
export function countCalls(t: Trajectory): { calls: number; toolErrors: number } {
  let calls = 0;
  let toolErrors = 0;
  for (const turn of t.turns) {
    if (!turn.call) continue;
    calls += 1;
    if (turn.call.error !== undefined) toolErrors += 1;
  }
  const last = t.turns.at(-1)?.call;
  // A forced finish records the call without running it: no geometry, no frames, no error. (A call
  // whose observation was dropped for max_images did run its plan, so it has a box or frames.)
  const forced = !!last && last.cropBox === undefined && last.frameIndices === undefined && last.error === undefined && last.produced.length === 0;
  if (forced && (t.stopReason === 'max_calls' || t.stopReason === 'token_budget' || t.stopReason === 'max_images')) toolErrors += 1;
  return { calls, toolErrors };
}

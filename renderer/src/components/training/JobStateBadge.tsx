import type { TrainingJobState } from '../../../../app/contract';

/** A job state word, coloured. */
export function JobStateBadge({ state, raw }: { state: TrainingJobState; raw?: string }) {
  return (
    <span className={`tr-state tr-state-${state}`} data-testid="job-state" data-state={state} title={raw}>
      {state}
    </span>
  );
}

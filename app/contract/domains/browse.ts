/**
 * Runs, samples, comparison and annotation domain.
 * (Filled in by the Runs/Annotate work; every call here needs a handler in main/core/handlers/browse.ts.)
 */
export const browseCalls = {} as const;
export const browseEvents = {} as const;

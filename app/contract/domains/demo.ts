/**
 * Demo and Models domain: run a model on a question about pixels and stream its trajectory.
 * (Filled in by the Demo work; every call here needs a handler in main/core/handlers/demo.ts.)
 */
export const demoCalls = {} as const;
export const demoEvents = {} as const;

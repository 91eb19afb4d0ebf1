/** Public surface of app/bench: adapters (load benchmarks) and scorers (score predictions). */
export { adapters, getAdapter } from './adapters';
export { getScorer, scorers, scorerVersions } from './scorers';
export type { PyErrorInfo, ScorableSample, ScoreResult, Scorer } from './scorers';
export { BenchDataError } from './types';
export type { BenchmarkAdapter, BenchMedia, BenchSample, LoadInfo, LoadOptions, LoadResult } from './types';

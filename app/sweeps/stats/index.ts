/** Run statistics: accuracy with bootstrap CIs, tables, tool use, paired comparison. */
export * from './rng';
export * from './binomial';
export * from './accuracy';
export * from './paired';

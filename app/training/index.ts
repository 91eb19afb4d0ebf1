/** Training: job templates, metric parsing, data export, job monitoring. */
export * from './types';
export * from './metrics';
export * from './templates';
export * from './export';
export * from './rewards';
export { templateToJobSpec } from './jobSpec';
export { monitorJob, type MonitorHandle, type MonitorOptions } from './monitor';

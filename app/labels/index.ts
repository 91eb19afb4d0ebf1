/** Failure labels: taxonomy, append-only store, fold, exports, agreement, key map. */
export * from './taxonomy';
export * from './events';
export * from './store';
export * from './fold';
export * from './export';
export * from './agreement';
export * from './keymap';
export * from './service';

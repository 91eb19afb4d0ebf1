/**
 * The key map is pure data and functions shared with the renderer, so it lives in the contract;
 * re-exported here for the labels API.
 */
export * from '../contract/keymap';

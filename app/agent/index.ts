/** The agent loop: one episode of a pixel-space reasoning model → a Trajectory. */
export * from './types';
export * from './settings';
export * from './runEpisode';
export * from './scriptedEngine';
export * from './summary';

/** loupe-synth: a seeded synthetic benchmark whose answers need a zoom. See README.md. */
export * from './prng';
export * from './glyphs';
export * from './scene';
export * from './video';
export * from './render';
export * from './generate';
export * from './trajectories';

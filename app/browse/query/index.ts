/** The sample query language, the columnar sample index and saved slices. */
export * from './fields';
export * from './parse';
export * from './compile';
export * from './sampleIndex';
export * from './slices';

import pkg from '../package.json' with { type: 'json' };

/** The core's version, read from package.json so there is one source. */
export const APP_VERSION: string = pkg.version;

// Why Electron can or cannot start here, and what to do about it (used by scripts/start.mjs; unit-tested).
import fs from 'node:fs';

/** The Node that can install Electron 45 (its package's `engines`); browser mode and the CLI need less. */
export const ELECTRON_MIN_NODE = '22.12.0';

function atLeast(version, min) {
  const a = version.replace(/^v/, '').split('.').map(Number);
  const b = min.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) > b[i];
  return true;
}

/**
 * @param {{ nodeVersion: string, resolve: (id: string) => string, load: (id: string) => unknown }} env
 * @returns {{ ok: true, binary: string } | { ok: false, reason: 'node-too-old' | 'not-installed' | 'no-binary', message: string }}
 */
export function electronStatus(env) {
  let pkg = null;
  try {
    pkg = env.resolve('electron/package.json');
  } catch {
    pkg = null;
  }
  if (!pkg) {
    if (!atLeast(env.nodeVersion, ELECTRON_MIN_NODE)) {
      return {
        ok: false,
        reason: 'node-too-old',
        message:
          `Electron is not installed: Electron 45 needs Node ≥ ${ELECTRON_MIN_NODE} to install and this is Node ${env.nodeVersion.replace(/^v/, '')}, ` +
          'so npm skipped the optional `electron` package.\n' +
          `  For the desktop app: switch to Node ${ELECTRON_MIN_NODE} or newer (\`nvm use\` reads .nvmrc), then run \`npm install\` again.`,
      };
    }
    return {
      ok: false,
      reason: 'not-installed',
      message:
        'Electron is not installed: npm skipped the optional `electron` package (installed with --omit=optional, or its install failed).\n' +
        '  For the desktop app: run `npm install` with network access (and without --omit=optional).',
    };
  }
  try {
    // The package exports the binary path; it throws, or points nowhere, when the download was skipped.
    const binary = env.load('electron');
    if (typeof binary === 'string' && fs.existsSync(binary)) return { ok: true, binary };
  } catch {
    // fall through: the binary is missing
  }
  return {
    ok: false,
    reason: 'no-binary',
    message:
      'Electron is installed but its binary was not downloaded (no network during `npm install`, ELECTRON_SKIP_BINARY_DOWNLOAD set, or install scripts turned off).\n' +
      '  For the desktop app: run `node node_modules/electron/install.js` with network access.',
  };
}

/**
 * Where a workspace lives and how it is laid out on disk (DESIGN §4). Files are the truth: other
 * tools must be able to read these folders without Loupe.
 */
import os from 'node:os';
import path from 'node:path';

/** Layout of one workspace folder. */
export interface WorkspaceLayout {
  root: string;
  /** `runs/<run-id>/manifest.json` + `runs/<run-id>/samples.jsonl`. */
  runsDir: string;
  /** `demo/<run-id>/…`: the Demo's scratch space, runs in the same shape, until the user saves them into `runs/`. */
  demoDir: string;
  /** `media/<sha256>.<ext>`: content-addressed images. */
  mediaDir: string;
  /** `labels/*.jsonl`: append-only label events. */
  labelsDir: string;
  /** Downloaded / registered models. */
  modelsDir: string;
  settingsPath: string;
}

export function workspaceLayout(root: string): WorkspaceLayout {
  const abs = path.resolve(root);
  return {
    root: abs,
    runsDir: path.join(abs, 'runs'),
    demoDir: path.join(abs, 'demo'),
    mediaDir: path.join(abs, 'media'),
    labelsDir: path.join(abs, 'labels'),
    modelsDir: path.join(abs, 'models'),
    settingsPath: path.join(abs, 'settings.json'),
  };
}

export interface DefaultDirOptions {
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  home?: string;
}

/**
 * The default workspace folder: `$LOUPE_WORKSPACE` when set; else the per-user data dir —
 * Linux/BSD `$XDG_DATA_HOME/loupe` (default `~/.local/share/loupe`), macOS
 * `~/Library/Application Support/Loupe`, Windows `%APPDATA%\Loupe`.
 */
export function defaultWorkspaceDir(opts: DefaultDirOptions = {}): string {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  const home = opts.home ?? os.homedir();
  const override = env['LOUPE_WORKSPACE'];
  if (override && override.trim() !== '') return path.resolve(override);
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Loupe');
  if (platform === 'win32') {
    const appData = env['APPDATA'] ?? path.join(home, 'AppData', 'Roaming');
    return path.win32.join(appData, 'Loupe');
  }
  const xdg = env['XDG_DATA_HOME'];
  // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(home, '.local', 'share');
  return path.join(base, 'loupe');
}

/**
 * The per-user config folder (never inside a workspace): `$LOUPE_CONFIG_DIR` when set; else Linux/BSD
 * `$XDG_CONFIG_HOME/loupe` (default `~/.config/loupe`), macOS `~/Library/Preferences/Loupe`, Windows
 * `%APPDATA%\Loupe\config`. Machine-local keys live here so that copying a workspace does not copy them.
 */
export function defaultConfigDir(opts: DefaultDirOptions = {}): string {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  const home = opts.home ?? os.homedir();
  const override = env['LOUPE_CONFIG_DIR'];
  if (override && override.trim() !== '') return path.resolve(override);
  if (platform === 'darwin') return path.join(home, 'Library', 'Preferences', 'Loupe');
  if (platform === 'win32') return path.win32.join(env['APPDATA'] ?? path.join(home, 'AppData', 'Roaming'), 'Loupe', 'config');
  const xdg = env['XDG_CONFIG_HOME'];
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(home, '.config'), 'loupe');
}

/**
 * Where a workspace lives and how it is laid out on disk (DESIGN §4). Files are the truth: other
 * tools must be able to read these folders without Loupe.
 */
import fs from 'node:fs';
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
  // The folder chosen on the Settings page (settings:workspace), kept in the per-user config folder.
  const chosen = readWorkspaceChoice(defaultConfigDir(opts));
  if (chosen) return chosen;
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

/** The per-user file that names the workspace chosen on the Settings page. */
export const WORKSPACE_CHOICE_FILE = 'workspace.json';

/** The chosen workspace, or null (no file, or one that does not hold an absolute path: reported, then ignored). */
export function readWorkspaceChoice(configDir: string): string | null {
  const file = path.join(configDir, WORKSPACE_CHOICE_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  try {
    const dir = (JSON.parse(text) as { workspace?: unknown }).workspace;
    if (typeof dir === 'string' && path.isAbsolute(dir) && !dir.includes('\0')) return dir;
  } catch {
    // reported below
  }
  process.stderr.write(`warning: ${file} does not name an absolute workspace folder ({"workspace": "/path"}); using the default\n`);
  return null;
}

/**
 * Choose the workspace the app opens at its next start. The folder is created when missing and must be a writable
 * folder; an empty path forgets the choice (back to the platform default). Returns the folder that will open.
 */
export async function chooseWorkspace(configDir: string, dir: string, opts: DefaultDirOptions = {}): Promise<string> {
  const file = path.join(configDir, WORKSPACE_CHOICE_FILE);
  const trimmed = dir.trim();
  if (trimmed === '') {
    await fs.promises.rm(file, { force: true });
    return defaultWorkspaceDir({ ...opts, env: { ...(opts.env ?? process.env), LOUPE_WORKSPACE: '' } });
  }
  if (trimmed.includes('\0') || /[\r\n]/.test(trimmed)) throw new Error('the workspace folder name holds a control character');
  if (!path.isAbsolute(trimmed)) throw new Error(`the workspace must be an absolute folder path (got ${JSON.stringify(trimmed)})`);
  const abs = path.resolve(trimmed);
  try {
    await fs.promises.mkdir(abs, { recursive: true });
  } catch (err) {
    throw new Error(`cannot create the workspace folder ${abs}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const st = await fs.promises.stat(abs);
  if (!st.isDirectory()) throw new Error(`${abs} is a file, not a folder`);
  try {
    await fs.promises.access(abs, fs.constants.W_OK);
  } catch {
    throw new Error(`the workspace folder ${abs} is not writable`);
  }
  await fs.promises.mkdir(configDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, JSON.stringify({ workspace: abs }, null, 2) + '\n');
  await fs.promises.rename(tmp, file);
  return abs;
}

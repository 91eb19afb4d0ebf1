import os from 'node:os';
import path from 'node:path';

/** The default workspace: the platform's user data dir, overridable with LOUPE_WORKSPACE. */
export function defaultWorkspaceDir(): string {
  if (process.env.LOUPE_WORKSPACE) return path.resolve(process.env.LOUPE_WORKSPACE);
  const home = os.homedir();
  switch (process.platform) {
    case 'darwin':
      return path.join(home, 'Library', 'Application Support', 'Loupe', 'workspace');
    case 'win32':
      return path.join(process.env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Loupe', 'workspace');
    default:
      return path.join(process.env.XDG_DATA_HOME ?? path.join(home, '.local', 'share'), 'loupe', 'workspace');
  }
}

/**
 * Media files as both doors serve them (browser mode's `/media/`, Electron's `loupe-media:`): only regular files
 * that Loupe wrote into the workspace's media folder. A symlink planted in `media/` could point anywhere, so it is
 * never followed (lstat, then open with O_NOFOLLOW so a swap between the two is refused too).
 */
import fs from 'node:fs';

/** A URL component decoded, or null for a malformed `%` escape (callers answer 400/404, never 500). */
export function decodeUrlPart(p: string): string | null {
  try {
    return decodeURIComponent(p);
  } catch {
    return null;
  }
}

/** An open handle on `file` when it is a regular file and not a symlink; null otherwise. */
export async function openMediaFile(file: string | null): Promise<fs.promises.FileHandle | null> {
  if (!file) return null;
  const stat = await fs.promises.lstat(file).catch(() => null);
  if (!stat?.isFile()) return null;
  return fs.promises.open(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0)).catch(() => null);
}

/**
 * The one path-containment helper for every file a request names (exports, runs, media, labels, job folders):
 * names are checked where they become paths, so a `../` in a sample id, run id or any other value from a client or
 * an imported file cannot read or write outside the folder it belongs to.
 */
import path from 'node:path';

export class PathEscapeError extends Error {
  constructor(
    readonly root: string,
    readonly parts: readonly string[],
  ) {
    super(`${JSON.stringify(parts.join('/'))} would leave ${root}; names may not climb out of their folder (no "..", no absolute paths)`);
    this.name = 'PathEscapeError';
  }
}

/**
 * `root` joined with `parts`, guaranteed to lie inside `root` (or be `root` itself only when `allowRoot`).
 * Throws PathEscapeError for absolute parts, `..` that climbs out, or NUL bytes.
 */
export function containedPath(root: string, ...parts: string[]): string {
  const base = path.resolve(root);
  if (parts.some((p) => p.includes('\0') || path.isAbsolute(p))) throw new PathEscapeError(base, parts);
  const full = path.resolve(base, ...parts);
  const rel = path.relative(base, full);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) throw new PathEscapeError(base, parts);
  return full;
}

/**
 * A file name made from data (a sample id, a branch label): path separators, `..`, control and shell-special
 * characters become `_`, so that the name is one plain file name on every OS. Never empty, at most `max` chars.
 */
export function safeFileName(name: string, max = 120): string {
  const s = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_').slice(0, max);
  return s === '' ? '_' : s;
}

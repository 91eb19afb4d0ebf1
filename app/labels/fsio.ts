/**
 * Durable-file helpers for the label store, the taxonomy and saved slices: the workspace's own
 * (atomic write, directory fsync) plus a "file not found" test.
 */
export { fsyncDir, writeFileAtomic } from '../workspace/fsutil';

/** True when the error is "file not found". */
export function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

/** Small durable-write helpers shared by the stores. */
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/** fsync a directory so a new/renamed entry survives a crash (no-op where unsupported, e.g. Windows). */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, 'r');
    await fh.sync();
  } catch {
    // Directories cannot be opened/synced on some platforms; the data itself is already synced.
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/**
 * Write a file atomically: temp file in the same folder, fsync, rename over the target, fsync the folder. A reader
 * (or a crash) sees the old bytes or the new ones, never a part; the temp file never outlives a failed write.
 * `mode` sets the new file's permissions (e.g. 0o600 for secrets), whatever the umask. `durable: false` skips both
 * fsyncs, for caches that nothing needs after a crash (still never a partial file for a reader).
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, opts: { mode?: number; durable?: boolean; dirExists?: boolean } = {}): Promise<void> {
  const durable = opts.durable ?? true;
  const dir = path.dirname(file);
  // `dirExists`: the caller made the folder already (a store writing many files into one), so the mkdir is skipped;
  // should the folder be gone after all, it is made and the open tried once more.
  if (!opts.dirExists) await fsp.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const open = () => fsp.open(tmp, 'wx', opts.mode ?? 0o666);
  try {
    const fh = opts.dirExists
      ? await open().catch(async (err: unknown) => {
          if (!isNotFound(err)) throw err;
          await fsp.mkdir(dir, { recursive: true });
          return open();
        })
      : await open();
    try {
      if (opts.mode !== undefined) await fh.chmod(opts.mode);
      await fh.writeFile(data);
      if (durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  if (durable) await fsyncDir(dir);
}

export function exists(p: string): Promise<boolean> {
  // The callback form: a missing file (the usual answer where this is asked before a write) costs a third of the
  // CPU of a rejected `fsp.access` promise.
  return new Promise((resolve) => fs.access(p, (err) => resolve(!err)));
}

/** True when the error is "file not found". */
export function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

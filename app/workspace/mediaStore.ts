/**
 * Content-addressed media: `media/<sha256>.<ext>`. The id is the file name, so a record that names
 * a media id names exact bytes. Files are written to a temp name and renamed, so a crash never
 * leaves a partial file under a final name.
 *
 * Durability (`MediaDurability`): `each` (the default) fsyncs every file and the folder before
 * `put` resolves. `group` resolves once the file is renamed into place (in the page cache: a
 * killed process loses nothing, since the file is whole before any record can name it) and
 * fsyncs in the background, one pass at a time over every file written before it started (the
 * run store's `group` appends do the same with record lines); `durable()` waits for it. The
 * workspace's store is `group`, and the run store's background record sync waits for it first,
 * so a record line is never durable before the media it names.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import { containedPath } from './contain';
import { exists, fsyncDir, isNotFound, writeFileAtomic } from './fsutil';

const ID_RE = /^([0-9a-f]{64})\.([a-z0-9]{1,8})$/;
/** Hash in slices and yield between them, so a 30 MB image never blocks the event loop for long. */
const HASH_SLICE = 4 * 1024 * 1024;
/** From this size, `put` writes the temp file while it hashes (below, the write would not be worth a wasted one on a duplicate). */
const OVERLAP_BYTES = 1024 * 1024;
/**
 * Below this size, a `group` put hashes, writes and renames with synchronous calls on the calling thread instead of
 * five round trips through libuv's thread pool, and keeps the file open for its background fsync (no reopen). What
 * the agent loop stores is this size (a question's JPEG, a crop's PNG). The calling thread waits for those calls: on
 * ext4 on a 2-core VM, a put took 0.08 ms (6 KB), 0.19 ms (60 KB) and 0.27 ms (250 KB) at the median, about 3 ms at
 * most over 300 puts; a slow or network filesystem makes that longer.
 */
const SYNC_PUT_BYTES = 256 * 1024;
/** Files kept open for their background fsync at most; past it a put closes its file and the sync reopens it. */
const MAX_OPEN_UNSYNCED = 64;

export function isMediaId(id: string): boolean {
  return ID_RE.test(id);
}

/** sha256 hex of bytes, computed in slices with event-loop yields between them. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const h = createHash('sha256');
  for (let off = 0; off < bytes.length; off += HASH_SLICE) {
    h.update(bytes.subarray(off, Math.min(bytes.length, off + HASH_SLICE)));
    if (off + HASH_SLICE < bytes.length) await new Promise<void>((r) => setImmediate(r));
  }
  return h.digest('hex');
}

export interface PutResult {
  id: string;
  path: string;
  /** True when identical bytes were already stored (nothing written). */
  existed: boolean;
}

/** `each`: `put` resolves after fsync; `group`: after the rename, with fsync in the background (file comment). */
export type MediaDurability = 'each' | 'group';

export class MediaStore {
  readonly dir: string;
  readonly durability: MediaDurability;
  /** Files renamed into place but not yet fsync'd (durability `group`), with the descriptor a small put kept open. */
  private unsynced: Array<{ file: string; fd?: number }> = [];
  /** Descriptors in `unsynced` or in the running pass, not yet closed. */
  private openUnsynced = 0;
  /** The background fsync pass, while one runs. */
  private syncing: Promise<void> | null = null;
  /** The first background fsync failure; `durable()` reports it (the files are whole, but maybe not on disk). */
  private syncError: Error | null = null;
  /** Set once a write here has succeeded: the folder exists, so later writes skip their mkdir. */
  private dirMade = false;
  /** Other writers into this folder (a worker thread's store), whose durability `durable()` also waits for. */
  private readonly others = new Set<() => Promise<void>>();

  constructor(dir: string, opts: { durability?: MediaDurability } = {}) {
    this.dir = path.resolve(dir);
    this.durability = opts.durability ?? 'each';
  }

  /**
   * Store bytes under their sha256 with extension `ext` (e.g. 'png', 'jpg'); deduplicates. From OVERLAP_BYTES
   * up, the temp file is written (on libuv's threads) while this thread hashes, and renamed once the name is
   * known (removed instead if that name exists): a 19 MB PNG's write no longer waits for its hash.
   */
  async put(bytes: Uint8Array, ext: string): Promise<PutResult> {
    const e = ext.replace(/^\./, '').toLowerCase();
    if (!/^[a-z0-9]{1,8}$/.test(e)) throw new Error(`MediaStore.put: bad extension ${JSON.stringify(ext)} (use e.g. "png" or "jpg")`);
    if (bytes.length >= OVERLAP_BYTES) return this.putOverlapped(bytes, e);
    if (this.durability === 'group' && bytes.length < SYNC_PUT_BYTES) return this.putSmall(bytes, e);
    const id = `${await sha256Hex(bytes)}.${e}`;
    const file = path.join(this.dir, id);
    if (await exists(file)) return { id, path: file, existed: true };
    if (this.durability === 'each') {
      await writeFileAtomic(file, bytes, { dirExists: this.dirMade });
    } else {
      await writeFileAtomic(file, bytes, { durable: false, dirExists: this.dirMade });
      this.written(file);
    }
    this.dirMade = true;
    return { id, path: file, existed: false };
  }

  /** A small `group` put, with synchronous calls (see SYNC_PUT_BYTES): same file, same temp-and-rename, same id. */
  private async putSmall(bytes: Uint8Array, e: string): Promise<PutResult> {
    const id = `${createHash('sha256').update(bytes).digest('hex')}.${e}`;
    const file = path.join(this.dir, id);
    if (fs.existsSync(file)) return { id, path: file, existed: true };
    const tmp = path.join(this.dir, `.${id}.${randomBytes(6).toString('hex')}.tmp`);
    let fd: number;
    try {
      fd = fs.openSync(tmp, 'wx');
    } catch (err) {
      if (!isNotFound(err)) throw err;
      fs.mkdirSync(this.dir, { recursive: true });
      fd = fs.openSync(tmp, 'wx');
    }
    try {
      for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, bytes.length - off);
      fs.renameSync(tmp, file);
    } catch (err) {
      fs.closeSync(fd);
      fs.rmSync(tmp, { force: true });
      throw err;
    }
    this.dirMade = true;
    if (this.openUnsynced < MAX_OPEN_UNSYNCED) {
      this.openUnsynced++;
      this.written(file, fd);
    } else {
      fs.closeSync(fd);
      this.written(file);
    }
    return { id, path: file, existed: false };
  }

  private async putOverlapped(bytes: Uint8Array, e: string): Promise<PutResult> {
    const tmp = path.join(this.dir, `.put.${randomBytes(6).toString('hex')}.tmp`);
    const writing = (async () => {
      await fsp.mkdir(this.dir, { recursive: true });
      const fh = await fsp.open(tmp, 'wx');
      try {
        await fh.writeFile(bytes);
        if (this.durability === 'each') await fh.sync();
      } finally {
        await fh.close();
      }
    })();
    let id: string;
    try {
      id = `${await sha256Hex(bytes)}.${e}`;
      await writing;
    } catch (err) {
      await writing.catch(() => undefined);
      await fsp.rm(tmp, { force: true });
      throw err;
    }
    const file = path.join(this.dir, id);
    try {
      if (await exists(file)) {
        await fsp.rm(tmp, { force: true });
        return { id, path: file, existed: true };
      }
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err;
    }
    if (this.durability === 'each') await fsyncDir(this.dir);
    else this.written(file);
    return { id, path: file, existed: false };
  }

  /** A file renamed into place without fsync (durability `group`): sync it in the background (through `fd` if open). */
  private written(file: string, fd?: number): void {
    this.unsynced.push(fd === undefined ? { file } : { file, fd });
    this.syncSoon();
  }

  /** fsync one written file (through its open descriptor, closed after, or reopened by name). */
  private async syncOne({ file, fd }: { file: string; fd?: number }): Promise<void> {
    if (fd !== undefined) {
      try {
        await new Promise<void>((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
      } finally {
        this.openUnsynced--;
        await new Promise<void>((resolve) => fs.close(fd, () => resolve()));
      }
      return;
    }
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(file, 'r');
    } catch (err) {
      // Removed since (nothing left to make durable); any other failure is reported by durable().
      if (isNotFound(err)) return;
      throw err;
    }
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  /** Start the background fsync pass unless one runs (it loops while files keep arriving). */
  private syncSoon(): void {
    if (this.syncing) return;
    this.syncing = (async () => {
      try {
        while (this.unsynced.length > 0) {
          const files = this.unsynced;
          this.unsynced = [];
          for (let i = 0; i < files.length; i++) {
            try {
              await this.syncOne(files[i]!);
            } catch (err) {
              // The pass stops at its first failure: the descriptors it did not reach are closed, not leaked.
              for (const rest of files.slice(i + 1)) if (rest.fd !== undefined) this.closeUnsynced(rest.fd);
              throw err;
            }
          }
          await fsyncDir(this.dir);
        }
      } catch (err) {
        this.syncError ??= err instanceof Error ? err : new Error(String(err));
        for (const u of this.unsynced) if (u.fd !== undefined) this.closeUnsynced(u.fd);
        this.unsynced = [];
      } finally {
        this.syncing = null;
      }
      if (this.unsynced.length > 0) this.syncSoon();
    })();
  }

  private closeUnsynced(fd: number): void {
    this.openUnsynced--;
    fs.close(fd, () => undefined);
  }

  /**
   * Resolves once every file `put` so far is on disk (durability `group`; at once for `each`);
   * rejects if a background fsync failed (the files stay whole in place, but a power cut could
   * lose them).
   */
  async durable(): Promise<void> {
    while (this.syncing) await this.syncing;
    if (this.syncError) throw new Error(`media store ${this.dir}: a background fsync failed (${this.syncError.message})`);
    await Promise.all([...this.others].map((f) => f()));
  }

  /**
   * Make `durable()` also wait for `durable`, another writer's (a store in a worker thread writing into this
   * folder); returns the function that stops it.
   */
  addWriter(durable: () => Promise<void>): () => void {
    this.others.add(durable);
    return () => void this.others.delete(durable);
  }

  /** Absolute path of a stored media id; throws on anything that is not a media id (no path tricks). */
  pathOf(id: string): string {
    if (!ID_RE.test(id)) throw new Error(`not a media id: ${JSON.stringify(id)} (expected <sha256>.<ext>)`);
    return containedPath(this.dir, id);
  }

  has(id: string): Promise<boolean> {
    return exists(this.pathOf(id));
  }

  read(id: string): Promise<Buffer> {
    return fsp.readFile(this.pathOf(id));
  }
}

/**
 * Content-addressed media: `media/<sha256>.<ext>`. The id is the file name, so a record that names
 * a media id names exact bytes. Files are written to a temp name, fsync'd and renamed, so a crash
 * never leaves a partial file under a final name.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { containedPath } from './contain';
import { exists, writeFileAtomic } from './fsutil';

const ID_RE = /^([0-9a-f]{64})\.([a-z0-9]{1,8})$/;
/** Hash in slices and yield between them, so a 30 MB image never blocks the event loop for long. */
const HASH_SLICE = 4 * 1024 * 1024;

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

export class MediaStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = path.resolve(dir);
  }

  /** Store bytes under their sha256 with extension `ext` (e.g. 'png', 'jpg'); deduplicates. */
  async put(bytes: Uint8Array, ext: string): Promise<PutResult> {
    const e = ext.replace(/^\./, '').toLowerCase();
    if (!/^[a-z0-9]{1,8}$/.test(e)) throw new Error(`MediaStore.put: bad extension ${JSON.stringify(ext)} (use e.g. "png" or "jpg")`);
    const id = `${await sha256Hex(bytes)}.${e}`;
    const file = path.join(this.dir, id);
    if (await exists(file)) return { id, path: file, existed: true };
    await writeFileAtomic(file, bytes);
    return { id, path: file, existed: false };
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

/**
 * A deterministic zip writer (no dependency) for Ray `working_dir` uploads. Entries are sorted and stamped with a
 * fixed date, so the same files give the same bytes and the same `_ray_pkg_<md5>.zip` name (the server dedupes).
 * Layout mirrors Python's zipfile (version 2.0, made on Unix) so a zip built from the recorded inputs is
 * byte-identical to the one in the Ray transcript.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { deflateRawSync, crc32 as zlibCrc32 } from 'node:zlib';

export interface ZipEntry {
  name: string;
  data: Buffer;
  /** Unix st_mode stored in the external attributes (default 0o100644, a regular file rw-r--r--). */
  mode?: number;
}

export interface ZipOptions {
  /** Stored date (default 2026-01-01 00:00:00). */
  date?: { year: number; month: number; day: number; hour?: number; minute?: number; second?: number };
  /** Deflate entries that shrink (default true). */
  compress?: boolean;
}

/** CRC-32 of the entry (node:zlib has it from Node 20.15; package.json asks for 20.19 or later). */
export function crc32(buf: Buffer): number {
  return zlibCrc32(buf) >>> 0;
}

export function buildZip(entries: ZipEntry[], options: ZipOptions = {}): Buffer {
  const d = options.date ?? { year: 2026, month: 1, day: 1 };
  const dosTime = ((d.hour ?? 0) << 11) | ((d.minute ?? 0) << 5) | Math.floor((d.second ?? 0) / 2);
  const dosDate = ((d.year - 1980) << 9) | (d.month << 5) | d.day;
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of sorted) {
    const name = Buffer.from(e.name, 'utf8');
    const crc = crc32(e.data);
    let method = 0;
    let payload = e.data;
    if (options.compress !== false && e.data.length > 0) {
      const z = deflateRawSync(e.data, { level: 6 });
      if (z.length < e.data.length) {
        method = 8;
        payload = z;
      }
    }
    const flags = /[^\x00-\x7f]/.test(e.name) ? 0x800 : 0;
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(20, 4);
    lh.writeUInt16LE(flags, 6);
    lh.writeUInt16LE(method, 8);
    lh.writeUInt16LE(dosTime, 10);
    lh.writeUInt16LE(dosDate, 12);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(payload.length, 18);
    lh.writeUInt32LE(e.data.length, 22);
    lh.writeUInt16LE(name.length, 26);
    lh.writeUInt16LE(0, 28);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0);
    ch.writeUInt16LE(0x0314, 4); // made by: Unix, 2.0
    ch.writeUInt16LE(20, 6);
    ch.writeUInt16LE(flags, 8);
    ch.writeUInt16LE(method, 10);
    ch.writeUInt16LE(dosTime, 12);
    ch.writeUInt16LE(dosDate, 14);
    ch.writeUInt32LE(crc, 16);
    ch.writeUInt32LE(payload.length, 20);
    ch.writeUInt32LE(e.data.length, 24);
    ch.writeUInt16LE(name.length, 28);
    ch.writeUInt16LE(0, 30);
    ch.writeUInt16LE(0, 32);
    ch.writeUInt16LE(0, 34);
    ch.writeUInt16LE(0, 36);
    ch.writeUInt32LE(((e.mode ?? 0o100644) & 0xffff) * 0x10000, 38); // external attrs: st_mode << 16, as zipfile
    ch.writeUInt32LE(offset, 42);
    locals.push(lh, name, payload);
    centrals.push(ch, name);
    offset += lh.length + name.length + payload.length;
  }
  const central = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(0, 4);
  end.writeUInt16LE(0, 6);
  end.writeUInt16LE(sorted.length, 8);
  end.writeUInt16LE(sorted.length, 10);
  end.writeUInt32LE(central.length, 12);
  end.writeUInt32LE(offset, 16);
  end.writeUInt16LE(0, 20);
  return Buffer.concat([...locals, central, end]);
}

/** Collect a directory's files (relative, `/`-separated), skipping `excludes` (prefixes like `.git/` or names). */
export async function collectDir(root: string, excludes: string[] = ['.git/']): Promise<ZipEntry[]> {
  const out: ZipEntry[] = [];
  const norm = excludes.map((e) => e.replace(/^\/+/, ''));
  const skip = (rel: string, isDir: boolean): boolean => {
    const r = isDir ? `${rel}/` : rel;
    return norm.some((e) => r === e || r.startsWith(e.endsWith('/') ? e : `${e}/`) || path.posix.basename(rel) === e.replace(/\/$/, ''));
  };
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const d of await fs.readdir(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      const full = path.join(dir, d.name);
      if (d.isDirectory()) {
        if (!skip(r, true)) await walk(full, r);
      } else if (d.isFile() && !skip(r, false)) {
        const st = await fs.stat(full);
        out.push({ name: r, data: await fs.readFile(full), mode: 0o100000 | (st.mode & 0o777) });
      }
    }
  };
  await walk(root, '');
  return out;
}

/** Ray's content-addressed package name for a zip. */
export function rayPackageName(zip: Buffer): string {
  return `_ray_pkg_${createHash('md5').update(zip).digest('hex')}.zip`;
}

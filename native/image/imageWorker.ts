/** Worker entry: runs SharpImageOps on a worker thread (see WorkerImageOps). */
import { workerData } from 'node:worker_threads';
import type { MediaRef } from '../../app/contract/trajectory';
import { MediaStore, type MediaDurability } from '../../app/workspace/mediaStore';
import { serveWorker } from '../workerHost/pool';
import { SharpImageOps, type SharpImageOpsOptions } from './sharpImageOps';

const data = workerData as { mediaDir: string; durability?: MediaDurability; options?: SharpImageOpsOptions };
const media = new MediaStore(data.mediaDir, { durability: data.durability ?? 'each' });
const ops = new SharpImageOps(media, data.options ?? {});

/** A copy that owns its whole ArrayBuffer when the view is a slice (postMessage clones the whole buffer of a view). */
function exact(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b);
}

serveWorker({
  importFile: (a: { path: string }) => ops.importFile(a.path),
  importBytes: (a: { bytes: Uint8Array }) => ops.importBytes(a.bytes),
  resize: (a: { src: MediaRef; width: number; height: number }) => ops.resize(a.src, a.width, a.height),
  crop: (a: { src: MediaRef; box: [number, number, number, number]; size?: [number, number] }) => ops.crop(a.src, a.box, a.size),
  keep: (a: { ref: MediaRef }) => ops.keep(a.ref),
  pixels: async (a: { ref: MediaRef }) => {
    const d = await ops.pixelsOf(a.ref);
    return { data: exact(d.data), width: d.width, height: d.height };
  },
  bytes: async (a: { ref: MediaRef }) => exact(await ops.bytesOf(a.ref)),
  durable: async () => {
    await media.durable();
    return true;
  },
});

/** Worker entry: runs SharpImageOps on a worker thread (see WorkerImageOps). */
import { workerData } from 'node:worker_threads';
import type { MediaRef } from '../../app/contract/trajectory';
import { MediaStore } from '../../app/workspace/mediaStore';
import { serveWorker } from '../workerHost/pool';
import { SharpImageOps, type SharpImageOpsOptions } from './sharpImageOps';

const data = workerData as { mediaDir: string; options?: SharpImageOpsOptions };
const ops = new SharpImageOps(new MediaStore(data.mediaDir), data.options ?? {});

serveWorker({
  importFile: (a: { path: string }) => ops.importFile(a.path),
  importBytes: (a: { bytes: Uint8Array }) => ops.importBytes(a.bytes),
  resize: (a: { src: MediaRef; width: number; height: number }) => ops.resize(a.src, a.width, a.height),
  crop: (a: { src: MediaRef; box: [number, number, number, number]; size?: [number, number] }) => ops.crop(a.src, a.box, a.size),
});

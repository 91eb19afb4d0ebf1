/** Worker entry for pilResampleParallel: computes a band of output rows into shared memory. */
import { serveWorker } from '../workerHost/pool';
import { pilResizeBicubicRGBRows } from './pilResample';

export interface RowsJob {
  /** The source, w×h×3 bytes from offset 0 (the buffer may be longer: it is reused). */
  src: SharedArrayBuffer;
  w: number;
  h: number;
  outW: number;
  outH: number;
  out: SharedArrayBuffer;
  from: number;
  to: number;
}

/** The horizontal pass's rows, kept between calls (fresh memory costs page faults). */
const scratch = { bytes: new Uint8Array(0) };

serveWorker({
  ping: () => true,
  rows: (a: RowsJob) => {
    pilResizeBicubicRGBRows(new Uint8Array(a.src, 0, a.w * a.h * 3), a.w, a.h, a.outW, a.outH, new Uint8Array(a.out), a.from, a.to, scratch);
    // Keep it for the next call unless it is huge.
    if (scratch.bytes.length > 64 << 20) scratch.bytes = new Uint8Array(0);
    return true;
  },
});

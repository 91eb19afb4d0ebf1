import { afterAll, describe, expect, it } from 'vitest';
import { pilResizeBicubicRGB } from './pilResample';
import { closePilResamplePool, pilResamplePoolState, pilResizeBicubicRGBParallel } from './pilResampleParallel';
import { noise } from '../../tests/support/noise';

afterAll(() => closePilResamplePool());

describe('pilResizeBicubicRGBParallel', () => {
  it('gives the serial bytes on worker threads, whatever the split, on odd sizes and up/down/mixed/near-1 scales', async () => {
    const cases: Array<[number, number, number, number]> = [
      [331, 217, 336, 196], // near 1: up in x, down in y
      [217, 331, 196, 336], // near 1: down in x, up in y
      [301, 207, 97, 61], // down
      [61, 43, 250, 171], // up
      [129, 77, 129, 303], // vertical only
      [129, 77, 40, 77], // horizontal only
      [45, 400, 47, 3], // few output rows
    ];
    for (const [w, h, ow, oh] of cases) {
      const src = noise(w, h, w * 31 + h);
      const serial = pilResizeBicubicRGB(src, w, h, ow, oh);
      for (const bands of [2, 3, 7]) {
        const par = await pilResizeBicubicRGBParallel(src, w, h, ow, oh, { minOps: 0, waitForWorkers: true, bands });
        // A shared buffer: the workers wrote it (the calling thread's fallback returns plain memory).
        expect([w, h, ow, oh, bands, par.buffer instanceof SharedArrayBuffer, Buffer.compare(Buffer.from(par), Buffer.from(serial))]).toEqual([w, h, ow, oh, bands, true, 0]);
      }
    }
    // The workers did the work (a crash or a start failure would have fallen back to this thread).
    expect(pilResamplePoolState().ready).toBe(true);
    expect(pilResamplePoolState().workers).toBeGreaterThanOrEqual(1);
  });

  it('runs small resizes and bad arguments on the calling thread, with the serial behaviour', async () => {
    const src = noise(23, 17, 5);
    expect(Buffer.compare(Buffer.from(await pilResizeBicubicRGBParallel(src, 23, 17, 31, 9)), Buffer.from(pilResizeBicubicRGB(src, 23, 17, 31, 9)))).toBe(0);
    const same = await pilResizeBicubicRGBParallel(src, 23, 17, 23, 17, { minOps: 0, waitForWorkers: true });
    expect(same).not.toBe(src);
    expect(Buffer.compare(Buffer.from(same), Buffer.from(src))).toBe(0);
    await expect(pilResizeBicubicRGBParallel(src, 23, 18, 5, 5, { minOps: 0, waitForWorkers: true })).rejects.toThrow(/expected 23×18×3/);
    await expect(pilResizeBicubicRGBParallel(src, 23, 17, 0, 5, { minOps: 0, waitForWorkers: true })).rejects.toThrow(/bad output size/);
  });

  it('starts the workers again after the pool is closed', async () => {
    await closePilResamplePool();
    expect(pilResamplePoolState()).toEqual({ workers: 0, ready: false });
    const src = noise(400, 300, 9);
    const par = await pilResizeBicubicRGBParallel(src, 400, 300, 396, 308, { minOps: 0, waitForWorkers: true });
    expect(par.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(Buffer.compare(Buffer.from(par), Buffer.from(pilResizeBicubicRGB(src, 400, 300, 396, 308)))).toBe(0);
    expect(pilResamplePoolState().ready).toBe(true);
  });
});

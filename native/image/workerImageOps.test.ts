import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MediaStore } from '../../app/workspace/mediaStore';
import { ImageError, SharpImageOps } from './sharpImageOps';
import { WorkerImageOps } from './workerImageOps';
import { WorkerCrashError, WorkerPool } from '../workerHost/pool';
import { setTimeout as sleep } from 'node:timers/promises';

const here = path.dirname(fileURLToPath(import.meta.url));
const GLASS = path.join(here, '..', '..', 'tests', 'fixtures', 'images', 'animate_glass.jpg');

let tmp: string;
beforeEach(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-wimg-'));
});
afterEach(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('WorkerImageOps', () => {
  it("writes with its media store's durability, and the store's durable() waits for the worker's files", async () => {
    const media = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    const w = new WorkerImageOps(media);
    const spy = vi.spyOn(w, 'durable');
    try {
      const a = await w.importFile(GLASS);
      const r = await w.keep(await w.resize(a, 350, 151));
      // Whole in place as soon as the keep answers.
      expect((await fsp.stat(w.pathOf(r))).size).toBeGreaterThan(0);
      await media.durable();
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      await w.close();
    }
    // Closed: no longer waited for.
    await media.durable();
    expect(spy).toHaveBeenCalledTimes(2); // once more by close() itself
  });

  it('produces the same media as in-process ops and carries ImageError across', async () => {
    const media = new MediaStore(path.join(tmp, 'media'));
    const w = new WorkerImageOps(media, { workers: 2 });
    try {
      const inline = new SharpImageOps(new MediaStore(path.join(tmp, 'media2')));
      const a = await w.importFile(GLASS);
      const b = await inline.importFile(GLASS);
      expect(a).toEqual(b);
      const [ra, rb] = await Promise.all([w.resize(a, 700, 302), inline.resize(b, 700, 302)]);
      // Held (random ids) until kept; kept, the same content id either way.
      expect(ra.id).not.toBe(rb.id);
      expect(await w.keep(ra)).toEqual(await inline.keep(rb));
      // With 2 workers, an op on a held image reaches the worker that holds it (held by the resize's key).
      const ca = await w.crop(ra, [10, 20, 300, 200]);
      const kca = await w.keep(ca);
      expect(kca).toEqual(await inline.keep(await inline.crop(rb, [10, 20, 300, 200])));
      expect(await fsp.stat(w.pathOf(kca))).toBeTruthy();
      // Crop and zoom in one call crosses the worker boundary with its size.
      const za = await w.crop(ra, [10, 20, 300, 200], [406, 252]);
      expect([za.width, za.height]).toEqual([406, 252]);
      const zb = await inline.crop(rb, [10, 20, 300, 200], [406, 252]);
      // An engine gets identical pixels and PNG bytes from the worker as in-process.
      const [pa, pb] = await Promise.all([w.engineImage(za).pixels!(), inline.engineImage(zb).pixels!()]);
      expect(Buffer.compare(Buffer.from(pa.data), Buffer.from(pb.data))).toBe(0);
      expect([pa.width, pa.height]).toEqual([406, 252]);
      const [ba, bb] = await Promise.all([w.engineImage(za).bytes!(), inline.engineImage(zb).bytes!()]);
      expect(Buffer.compare(Buffer.from(ba), Buffer.from(bb))).toBe(0);
      expect(await w.keep(za)).toEqual(await inline.keep(zb));
      const err = await w.importFile(path.join(tmp, 'missing.jpg')).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(ImageError);
      expect((err as ImageError).code).toBe('not-found');
      expect((err as ImageError).message).toMatch(/missing\.jpg: cannot read the image/);
    } finally {
      await w.close();
    }
  });
});

describe('WorkerImageOps: held images', () => {
  it('writes nothing for a held image until it is kept, and a kept one is found again after its worker stopped', async () => {
    const media = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    const w = new WorkerImageOps(media, { idleMs: 40 });
    const files = async () => (await fsp.readdir(media.dir)).filter((f) => !f.startsWith('.')).sort();
    try {
      const a = await w.importFile(GLASS);
      const r = await w.resize(a, 640, 277);
      const z = await w.crop(r, [10, 10, 330, 210], [480, 300]);
      await w.engineImage(z).pixels!();
      await w.engineImage(r).bytes!();
      expect(() => w.pathOf(r)).toThrow(/held in memory/);
      expect(await files()).toEqual([a.id]);
      const [k1, k2] = await Promise.all([w.keep(r), w.keep(r)]);
      expect(k1).toEqual(k2);
      expect(await files()).toEqual([a.id, k1.id].sort());
      // The worker stops when idle; the held id of a kept image still works (it reads the stored file now).
      const live = () => (w as unknown as { pool: WorkerPool<never> }).pool.liveWorkers;
      for (let i = 0; i < 200 && live() > 0; i++) await sleep(20);
      expect(live()).toBe(0);
      const again = await w.keep(await w.crop(r, [10, 10, 330, 210], [480, 300]));
      expect([again.width, again.height]).toEqual([480, 300]);
      expect(await files()).toContain(again.id);
      expect((await w.engineImage(r).pixels!()).data.length).toBe(640 * 277 * 3);
      // An unkept held image is gone with its worker: a clear error, not a wrong image.
      await expect(w.keep(z)).rejects.toThrow(/no image is held under this id here/);
    } finally {
      await w.close();
    }
  });
});

describe('WorkerPool', () => {
  it('rejects in-flight calls with WorkerCrashError when a worker dies, then recovers', async () => {
    const entry = path.join(tmp, 'crashy.ts');
    const poolUrl = new URL('../workerHost/pool.ts', import.meta.url).href;
    await fsp.writeFile(
      entry,
      `import { serveWorker } from ${JSON.stringify(poolUrl)};\n` +
        `serveWorker({ echo: (x: number) => x, die: () => process.exit(3), boom: () => { throw Object.assign(new Error('bad thing'), { code: 'E_BAD' }); } });\n`,
    );
    const pool = new WorkerPool<{ echo: (x: number) => number; die: (x: null) => never; boom: (x: null) => never }>({ entry, name: 'crashy' });
    try {
      expect(await pool.call('echo', 5)).toBe(5);
      const boom = await pool.call('boom', null).then(() => null, (e: unknown) => e as Error & { code?: string });
      expect(boom?.message).toBe('bad thing');
      expect(boom?.code).toBe('E_BAD');
      const died = await pool.call('die', null).then(() => null, (e: unknown) => e);
      expect(died).toBeInstanceOf(WorkerCrashError);
      expect((died as Error).message).toMatch(/crashy: worker exited with code 3/);
      expect(await pool.call('echo', 7)).toBe(7);
    } finally {
      await pool.close();
    }
    await expect(pool.call('echo', 1)).rejects.toThrow(/pool is closed/);
  });

  it('close lets the calls in flight finish before it stops the workers, and refuses new ones', async () => {
    const entry = path.join(tmp, 'slow.ts');
    await fsp.writeFile(entry, `import { serveWorker } from ${JSON.stringify(new URL('../workerHost/pool.ts', import.meta.url).href)};\nserveWorker({ slow: async (x: number) => { await new Promise((r) => setTimeout(r, 300)); return x * 2; } });\n`);
    const pool = new WorkerPool<{ slow: (x: number) => Promise<number> }>({ entry, name: 'slow', size: 2 });
    const calls = [pool.call('slow', 1), pool.call('slow', 2), pool.call('slow', 3)];
    await sleep(50);
    const closing = pool.close();
    await expect(pool.call('slow', 4)).rejects.toThrow(/pool is closed/);
    expect(await Promise.all(calls)).toEqual([2, 4, 6]);
    await closing;
    expect(pool.liveWorkers).toBe(0);
    // a call that never answers is cut off after the grace period
    const stuck = new WorkerPool<{ slow: (x: number) => Promise<number> }>({ entry, name: 'stuck' });
    const late = stuck.call('slow', 5).then(() => 'answered', (e: unknown) => (e as Error).message);
    await sleep(50);
    await stuck.close(10);
    expect(await late).toMatch(/stuck: the pool was closed/);
  });

  it('stops idle workers and starts them again on demand', async () => {
    const entry = path.join(tmp, 'echo.ts');
    await fsp.writeFile(entry, `import { serveWorker } from ${JSON.stringify(new URL('../workerHost/pool.ts', import.meta.url).href)};\nserveWorker({ echo: (x: number) => x });\n`);
    const pool = new WorkerPool<{ echo: (x: number) => number }>({ entry, name: 'idle', idleMs: 30 });
    try {
      expect(await pool.call('echo', 1)).toBe(1);
      expect(pool.liveWorkers).toBe(1);
      for (let i = 0; i < 200 && pool.liveWorkers > 0; i++) await sleep(25);
      expect(pool.liveWorkers).toBe(0);
      expect(await pool.call('echo', 2)).toBe(2);
      expect(pool.liveWorkers).toBe(1);
      // callLive reaches every running worker and starts none.
      expect(await pool.callLive('echo', 3)).toEqual([3]);
      for (let i = 0; i < 200 && pool.liveWorkers > 0; i++) await sleep(25);
      expect(await pool.callLive('echo', 4)).toEqual([]);
      expect(pool.liveWorkers).toBe(0);
    } finally {
      await pool.close();
    }
  });
});

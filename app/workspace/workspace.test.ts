import fs, { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SampleRecord } from '../contract/trajectory';
import { MediaStore, RunStore, Workspace, defaultWorkspaceDir, isMediaId, parseJsonl, repairJsonlTail, sha256Hex } from './index';
import { JsonlAppender } from './jsonl';

let tmp: string;
beforeEach(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-ws-'));
});
afterEach(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const manifest = { model: { id: 'scripted' }, engine: 'scripted', dialect: 'pixel-reasoner', prompt: 'vcot' };
function sample(i: number, extra: Partial<SampleRecord> = {}): SampleRecord {
  return {
    qid: `q${i}`, bench: 'vstar', question: `Q${i}?`, answer: 'A', prediction: 'B', score: 0, correct: false,
    stop_reason: 'answer', calls: 1, tool_errors: 0, ...extra,
  };
}

describe('defaultWorkspaceDir', () => {
  it('follows XDG on Linux, Application Support on macOS, APPDATA on Windows, and the override', () => {
    expect(defaultWorkspaceDir({ env: {}, platform: 'linux', home: '/users/u' })).toBe('/users/u/.local/share/loupe');
    expect(defaultWorkspaceDir({ env: { XDG_DATA_HOME: '/data/x' }, platform: 'linux', home: '/users/u' })).toBe('/data/x/loupe');
    // A relative XDG_DATA_HOME is invalid per the spec and ignored.
    expect(defaultWorkspaceDir({ env: { XDG_DATA_HOME: 'rel' }, platform: 'linux', home: '/users/u' })).toBe('/users/u/.local/share/loupe');
    expect(defaultWorkspaceDir({ env: {}, platform: 'darwin', home: '/Users/u' })).toBe('/Users/u/Library/Application Support/Loupe');
    expect(defaultWorkspaceDir({ env: { APPDATA: 'C:\\Users\\u\\AppData\\Roaming' }, platform: 'win32', home: 'C:\\Users\\u' })).toBe('C:\\Users\\u\\AppData\\Roaming\\Loupe');
    expect(defaultWorkspaceDir({ env: { LOUPE_WORKSPACE: '/tmp/ws' }, platform: 'linux', home: '/users/u' })).toBe('/tmp/ws');
  });
});

describe('RunStore', () => {
  it('creates a run, appends samples and reads them back identically', async () => {
    const ws = await new Workspace(tmp).init();
    const run = await ws.runs.createRun({ ...manifest, name: 'V* smoke' });
    expect(run.id).toMatch(/^\d{8}-\d{6}Z-v-smoke-[0-9a-f]{6}$/);
    const onDisk = JSON.parse(await fsp.readFile(path.join(tmp, 'runs', run.id, 'manifest.json'), 'utf8'));
    expect(onDisk.engine).toBe('scripted');
    expect(onDisk.appVersion).toMatch(/^\d+\.\d+\.\d+/);
    const written = [];
    for (let i = 0; i < 5; i++) written.push(await run.appendSample(sample(i, { options: ['a', 'b'], scores: { acc: i } })));
    await run.close();
    const back = await ws.runs.readSamples(run.id);
    expect(back.issues).toEqual([]);
    expect(back.records).toEqual(written);
    const lines = (await fsp.readFile(run.samplesPath, 'utf8')).split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[5]).toBe('');
  });

  it('refuses an invalid sample without writing anything, naming the field', async () => {
    const store = new RunStore(path.join(tmp, 'runs'));
    const run = await store.createRun(manifest);
    await expect(run.appendSample({ ...sample(0), stop_reason: 'bogus' } as unknown as SampleRecord)).rejects.toThrow(/stop_reason/);
    await run.close();
    expect(await fsp.readFile(run.samplesPath, 'utf8')).toBe('');
  });

  it('validates manifests on read and write and lists broken runs without throwing', async () => {
    const store = new RunStore(path.join(tmp, 'runs'));
    const a = await store.createRun({ ...manifest, id: 'run-a', createdAt: '2026-01-01T00:00:00.000Z' });
    await store.createRun({ ...manifest, id: 'run-b', createdAt: '2026-02-01T00:00:00.000Z' });
    await expect(store.createRun({ ...manifest, id: 'run-a' })).rejects.toThrow(/already exists/);
    await expect(store.createRun({ ...manifest, id: '../evil' })).rejects.toThrow(/not a valid run id/);
    await expect(a.writeManifest({ ...a.manifest, engine: 42 } as unknown as typeof a.manifest)).rejects.toThrow(/engine/);
    await a.writeManifest({ ...a.manifest, name: 'renamed' });
    expect((await store.readManifest('run-a')).name).toBe('renamed');
    await fsp.mkdir(path.join(tmp, 'runs', 'run-c'));
    await fsp.writeFile(path.join(tmp, 'runs', 'run-c', 'manifest.json'), '{"id": "run-c"');
    const list = await store.listRuns();
    expect(list.map((r) => r.id)).toEqual(['run-b', 'run-a', 'run-c']);
    expect(list[2]?.manifest).toBeNull();
    expect(list[2]?.error).toMatch(/run-c.*manifest\.json is not valid JSON/);
    await expect(store.openRun('run-c')).rejects.toThrow(/not valid JSON/);
    await expect(store.openRun('nope')).rejects.toThrow(/no manifest at/);
  });

  it('reports bad lines with line numbers, skips a torn tail, keeps an unterminated but complete record', async () => {
    const store = new RunStore(path.join(tmp, 'runs'));
    const run = await store.createRun({ ...manifest, id: 'r' });
    await run.appendSample(sample(0));
    await run.close();
    const good1 = JSON.stringify(sample(1));
    await fsp.appendFile(run.samplesPath, `{"qid": broken\n{"qid":"only"}\n${good1}\n${JSON.stringify(sample(2)).slice(0, 30)}`);
    const r1 = await store.readSamples('r');
    expect(r1.records.map((r) => r.qid)).toEqual(['q0', 'q1']);
    expect(r1.issues.map((i) => [i.line, i.kind])).toEqual([[2, 'invalid-json'], [3, 'invalid-record'], [5, 'torn-tail']]);

    // A reopened writer moves the fragment to samples.jsonl.torn and continues on a clean line.
    const again = await store.openRun('r');
    await again.appendSample(sample(3));
    expect(again.repair?.action).toBe('truncated');
    await again.close();
    const torn = (await fsp.readFile(run.samplesPath + '.torn', 'utf8')).trim().split('\n');
    expect(torn).toHaveLength(1);
    expect(JSON.parse(torn[0]!).text).toBe(JSON.stringify(sample(2)).slice(0, 30));
    const r2 = await store.readSamples('r');
    expect(r2.records.map((r) => r.qid)).toEqual(['q0', 'q1', 'q3']);
    expect(r2.issues.map((i) => i.kind)).toEqual(['invalid-json', 'invalid-record']);

    // A complete record that only lacks its newline is kept by both reader and writer.
    await fsp.appendFile(run.samplesPath, JSON.stringify(sample(4)));
    const r3 = await store.readSamples('r');
    expect(r3.records.map((r) => r.qid)).toEqual(['q0', 'q1', 'q3', 'q4']);
    expect(r3.issues.at(-1)?.kind).toBe('unterminated-tail');
    const third = await store.openRun('r');
    await third.appendSample(sample(5));
    expect(third.repair?.action).toBe('kept-unterminated');
    await third.close();
    expect((await store.readSamples('r')).records.map((r) => r.qid)).toEqual(['q0', 'q1', 'q3', 'q4', 'q5']);
  });

  it('serializes concurrent appends into whole lines', async () => {
    const store = new RunStore(path.join(tmp, 'runs'));
    const run = await store.createRun({ ...manifest, id: 'c' });
    await Promise.all(Array.from({ length: 40 }, (_, i) => run.appendSample(sample(i, { prediction: 'p'.repeat(i * 500) }))));
    await run.close();
    const back = await store.readSamples('c');
    expect(back.issues).toEqual([]);
    expect(back.records.map((r) => r.qid).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `q${i}`).sort());
  });
});

describe('JsonlAppender durability', () => {
  /** Counts fdatasync calls on every FileHandle while `fn` runs. */
  async function countingSyncs<T>(fn: () => Promise<T>): Promise<{ value: T; syncs: number }> {
    const probe = await fsp.open(path.join(tmp, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const real = proto.datasync;
    let syncs = 0;
    proto.datasync = function (this: unknown) {
      syncs++;
      return real.call(this);
    };
    try {
      return { value: await fn(), syncs };
    } finally {
      proto.datasync = real;
    }
  }

  it('group: an append resolves once its line is in the file, fsyncs coalesce in the background, flush waits for them', async () => {
    const file = path.join(tmp, 'g.jsonl');
    const { syncs } = await countingSyncs(async () => {
      const a = await JsonlAppender.open(file, undefined, 'group');
      await Promise.all(Array.from({ length: 30 }, (_, i) => a.append({ i })));
      // written: another reader sees every line before any flush
      expect((await fsp.readFile(file, 'utf8')).trim().split('\n')).toHaveLength(30);
      await a.flush();
      await a.close();
    });
    expect(syncs).toBeGreaterThanOrEqual(1);
    expect(syncs).toBeLessThan(30);
  });

  it('each: every append waits for its own fsync', async () => {
    const file = path.join(tmp, 'e.jsonl');
    const a = await JsonlAppender.open(file);
    const { syncs } = await countingSyncs(async () => {
      for (let i = 0; i < 5; i++) await a.append({ i });
    });
    await a.close();
    expect(syncs).toBe(5);
  });

  it('group: a failed background fsync refuses later appends and flush reports it; nothing already written is lost', async () => {
    const file = path.join(tmp, 'f.jsonl');
    const a = await JsonlAppender.open(file, undefined, 'group');
    const value = await (async () => {
      const probe = await fsp.open(path.join(tmp, 'probe2'), 'w');
      const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
      await probe.close();
      const real = proto.datasync;
      proto.datasync = () => Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      try {
        await a.append({ i: 0 });
        return await a.flush().then(() => 'flushed', (e: Error) => e.message);
      } finally {
        proto.datasync = real;
      }
    })();
    expect(value).toMatch(/EIO/);
    await expect(a.append({ i: 1 })).rejects.toThrow(/earlier write failed.*EIO/);
    await a.close();
    expect(await fsp.readFile(file, 'utf8')).toBe('{"i":0}\n');
  });
});

describe('jsonl helpers', () => {
  it('parseJsonl handles CRLF, blank lines and a file without records', () => {
    const ok = (v: unknown) => ({ ok: true as const, value: v });
    expect(parseJsonl(Buffer.from('{"a":1}\r\n\n{"a":2}\n'), ok).records).toEqual([{ a: 1 }, { a: 2 }]);
    expect(parseJsonl(Buffer.alloc(0), ok)).toEqual({ records: [], issues: [] });
  });
  it('repairJsonlTail is a no-op on a clean or missing file', async () => {
    const f = path.join(tmp, 'x.jsonl');
    expect(await repairJsonlTail(f)).toBeNull();
    await fsp.writeFile(f, '{"a":1}\n');
    expect(await repairJsonlTail(f)).toBeNull();
    await fsp.appendFile(f, '{"a":');
    expect(await repairJsonlTail(f)).toMatchObject({ action: 'truncated', offset: 8, removedBytes: 5 });
    expect(await fsp.readFile(f, 'utf8')).toBe('{"a":1}\n');
  });
});

describe('MediaStore', () => {
  it('stores by sha256, dedupes and refuses non-ids', async () => {
    const store = new MediaStore(path.join(tmp, 'media'));
    const bytes = new Uint8Array(9 * 1024 * 1024).map((_, i) => (i * 31) % 251);
    const a = await store.put(bytes, 'PNG');
    expect(a.existed).toBe(false);
    expect(isMediaId(a.id)).toBe(true);
    expect(a.id).toBe(`${await sha256Hex(bytes)}.png`);
    const { createHash } = await import('node:crypto');
    expect(a.id.slice(0, 64)).toBe(createHash('sha256').update(bytes).digest('hex'));
    const b = await store.put(bytes, 'png');
    expect(b).toEqual({ ...a, existed: true });
    expect(Buffer.compare(await store.read(a.id), Buffer.from(bytes))).toBe(0);
    expect((await fsp.readdir(store.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(() => store.pathOf('../../etc/passwd')).toThrow(/not a media id/);
    await expect(store.put(bytes, 'p/ng')).rejects.toThrow(/bad extension/);
  });

  it('small puts after the first skip the mkdir, and make the folder again when it was removed meanwhile', async () => {
    for (const durability of ['each', 'group'] as const) {
      const store = new MediaStore(path.join(tmp, `media-gone-${durability}`), { durability });
      const first = await store.put(new Uint8Array([1, 2, 3]), 'bin');
      expect(first.existed).toBe(false);
      await fsp.rm(store.dir, { recursive: true });
      const again = await store.put(new Uint8Array([4, 5, 6]), 'bin');
      expect(again.existed).toBe(false);
      expect([...(await store.read(again.id))]).toEqual([4, 5, 6]);
      expect(await store.has(first.id)).toBe(false);
      await store.durable();
    }
  });

  it('group durability: put resolves with the whole file in place, fsyncs in the background, and durable() waits for it', async () => {
    const store = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    expect(store.durability).toBe('group');
    const syncs: string[] = [];
    const open = fsp.open;
    const spy = vi.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      const fh = await open(...args);
      const sync = fh.sync.bind(fh);
      fh.sync = async () => {
        syncs.push(path.basename(String(args[0])));
        return sync();
      };
      return fh;
    });
    try {
      // The last two are over 1 MiB: written while hashed, then renamed (MediaStore.putOverlapped).
      const blobs = Array.from({ length: 5 }, (_, k) => new Uint8Array((k >= 3 ? 1_500_000 : 300_000) + k).map((_, i) => (i * (k + 3)) % 253));
      const puts = [];
      for (const b of blobs) {
        const p = await store.put(b, 'png');
        // Whole under its final name as soon as put resolves (a kill now loses nothing), no temp file left.
        expect(Buffer.compare(await fsp.readFile(p.path), Buffer.from(b))).toBe(0);
        puts.push(p);
      }
      // A duplicate (large or small) is found after hashing; its temp file is gone.
      expect(await store.put(blobs[4]!, 'png')).toEqual({ ...puts[4], existed: true });
      expect(await store.put(blobs[0]!, 'png')).toEqual({ ...puts[0], existed: true });
      expect((await fsp.readdir(store.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      expect((await fsp.readdir(store.dir)).sort()).toEqual(puts.map((p) => p.id).sort());
      await store.durable();
      // Every file was fsync'd (and the folder after them), none of them before it was renamed into place.
      for (const p of puts) expect(syncs).toContain(p.id);
      expect(syncs.at(-1)).toBe('media');
      expect(syncs.filter((s) => s.endsWith('.tmp'))).toEqual([]);
      // Durability each: fsync'd before put resolves.
      syncs.length = 0;
      const each = new MediaStore(path.join(tmp, 'media-each'));
      const e = await each.put(blobs[0]!, 'png');
      expect(syncs.some((s) => s.startsWith(`.${e.id}.`))).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('a failed write rejects with the reason and leaves nothing named; durable() still answers', async () => {
    await fsp.writeFile(path.join(tmp, 'media'), 'a file where the folder should be');
    const store = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    await expect(store.put(new Uint8Array([1, 2, 3]), 'png')).rejects.toThrow(/EEXIST|ENOTDIR/);
    await expect(store.put(new Uint8Array(2 << 20), 'png')).rejects.toThrow(/EEXIST|ENOTDIR/);
    await expect(store.durable()).resolves.toBeUndefined();
  });

  it('a file removed before its background fsync is skipped; durable() still resolves', async () => {
    const store = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const open = fsp.open;
    const spy = vi.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      if (args[1] === 'r' && String(args[0]).endsWith('.png')) await gate;
      return open(...args);
    });
    try {
      // Over MediaStore's synchronous-put size: closed after the write, reopened by name for the fsync.
      const p = await store.put(new Uint8Array(300_000).fill(9), 'png');
      await fsp.rm(p.path);
      release();
      await expect(store.durable()).resolves.toBeUndefined();
    } finally {
      spy.mockRestore();
    }
  });

  it.runIf(process.platform === 'linux')('small group puts: whole in place when put resolves, fsync\'d through the file they wrote, at most 64 left open, none after durable()', async () => {
    const store = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    await store.put(new Uint8Array([0]), 'bin');
    await store.durable();
    // The descriptors this process holds on files of the store (Linux: /proc/self/fd).
    const openHere = () =>
      fs.readdirSync('/proc/self/fd').flatMap((fd) => {
        try {
          const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
          return target.startsWith(store.dir + path.sep) ? [target] : [];
        } catch {
          return [];
        }
      });
    expect(openHere()).toEqual([]);
    const synced: string[] = [];
    const fsync = fs.fsync;
    const spy = vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      synced.push(fs.readlinkSync(`/proc/self/fd/${fd}`));
      return fsync(fd, cb);
    }) as typeof fs.fsync);
    try {
      const puts = [];
      let most = 0;
      for (let k = 0; k < 150; k++) {
        const b = new Uint8Array(1000 + k).fill(k);
        const p = await store.put(b, 'png');
        expect(Buffer.compare(fs.readFileSync(p.path), Buffer.from(b))).toBe(0);
        puts.push(p);
        most = Math.max(most, openHere().length);
      }
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(64);
      expect((await fsp.readdir(store.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      await store.durable();
      expect(openHere()).toEqual([]);
      // Each file that stayed open was fsync'd under its final name (renamed before the sync), the others reopened.
      expect(synced.length).toBeGreaterThan(0);
      for (const f of synced) expect(puts.map((p) => p.path)).toContain(f);
      // A duplicate is found by its hash: nothing written, nothing opened.
      expect(await store.put(new Uint8Array(1000).fill(0), 'png')).toEqual({ ...puts[0], existed: true });
      expect(openHere()).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });

  it('durable() also waits for writers registered with addWriter until they are removed', async () => {
    const store = new MediaStore(path.join(tmp, 'media'), { durability: 'group' });
    let release!: () => void;
    const other = vi.fn(() => new Promise<void>((r) => (release = r)));
    const remove = store.addWriter(other);
    let done = false;
    const d = store.durable().then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(other).toHaveBeenCalledTimes(1);
    expect(done).toBe(false);
    release();
    await d;
    remove();
    await store.durable();
    expect(other).toHaveBeenCalledTimes(1);
  });
});

describe('Workspace media and records', () => {
  it("the workspace's media are group-durable, and a run's record sync waits for them first", async () => {
    const ws = await new Workspace(path.join(tmp, 'w')).init();
    expect(ws.media.durability).toBe('group');
    const order: string[] = [];
    const durable = ws.media.durable.bind(ws.media);
    vi.spyOn(ws.media, 'durable').mockImplementation(async () => {
      await durable();
      order.push('media');
    });
    const put = await ws.media.put(new Uint8Array(1000).fill(7), 'png');
    const run = await ws.runs.createRun({ id: 'r', ...manifest });
    await run.appendSample(sample(1, { extra: { media: put.id } }));
    await run.close();
    // close() waited for the background record sync, which waited for the media first.
    expect(order).toContain('media');
    expect((await ws.runs.readSamples('r')).records).toHaveLength(1);
  });
});

describe('Workspace', () => {
  it('creates its layout and round-trips settings, rejecting a broken settings file clearly', async () => {
    const ws = await new Workspace(path.join(tmp, 'w')).init();
    for (const d of ['runs', 'media', 'labels', 'models']) expect((await fsp.stat(path.join(ws.root, d))).isDirectory()).toBe(true);
    expect(await ws.readSettings()).toEqual({});
    await ws.writeSettings({ theme: 'dark', engine: { kind: 'openai' } });
    expect(await ws.readSettings()).toEqual({ theme: 'dark', engine: { kind: 'openai' } });
    await fsp.writeFile(ws.layout.settingsPath, '[1,');
    await expect(ws.readSettings()).rejects.toThrow(/settings\.json is not valid JSON/);
  });
});

describe('the Demo scratch space', () => {
  it('keeps Demo runs out of runs/ until saved; saving moves the folder whole under a unique name', async () => {
    const ws = await new Workspace(tmp).init();
    await ws.runs.createRun({ ...manifest, id: 'kept', name: 'demo What is it?', kind: 'demo' });
    const h = await ws.demo.createRun({ ...manifest, id: 'q1', name: 'demo What is it?', kind: 'demo' });
    await h.appendSample(sample(1));
    await h.close();
    expect((await ws.runs.listRuns()).map((r) => r.id)).toEqual(['kept']);
    const m = await ws.saveDemoRun('q1');
    expect(m.name).toBe('demo What is it? (2)');
    expect((await ws.runs.listRuns()).map((r) => r.id).sort()).toEqual(['kept', 'q1']);
    expect((await ws.runs.readSamples('q1')).records.map((r) => r.qid)).toEqual(['q1']);
    expect(await ws.demo.listRuns()).toEqual([]);
    await expect(ws.saveDemoRun('q1')).rejects.toThrow(/no manifest/);
  });

  it('refuses ids with path tricks and an id runs/ already has, losing nothing', async () => {
    const ws = await new Workspace(tmp).init();
    await expect(ws.saveDemoRun('../runs')).rejects.toThrow(/not a valid run id/);
    await expect(ws.saveDemoRun('a/b')).rejects.toThrow(/not a valid run id/);
    await ws.runs.createRun({ ...manifest, id: 'same', kind: 'eval' });
    await ws.demo.createRun({ ...manifest, id: 'same', kind: 'demo' });
    await expect(ws.saveDemoRun('same')).rejects.toThrow(/already in runs/);
    expect(await ws.demo.hasRun('same')).toBe(true);
    expect((await ws.runs.readManifest('same')).kind).toBe('eval');
    await ws.demo.removeRun('same');
    expect(await ws.demo.hasRun('same')).toBe(false);
    await expect(ws.demo.removeRun('same')).rejects.toThrow(/no such run/);
  });
});

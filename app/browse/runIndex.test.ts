/**
 * RunIndexService with its persisted index (samples.idx): on real files written the way runs are written, the
 * index loaded from disk answers exactly as one built from the samples file, follows a growing run, and is never
 * trusted when the samples file changed or the index file is damaged.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildManifest, generateSamples } from '../../scripts/gen-large-run';
import type { SampleRecord } from '../contract/trajectory';
import { RunIndexService, type RunFiles } from './runIndex';
import { INDEX_FILE } from './runIndexFile';

let root: string;
/** Every service a test makes: their index writes run in the background and must end before the folder is removed. */
const made: RunIndexService[] = [];
function svc(...args: ConstructorParameters<typeof RunIndexService>): RunIndexService {
  const s = new RunIndexService(...args);
  made.push(s);
  return s;
}
const RUN = 'synthetic-400-s3';

function filesAt(dir: string): RunFiles {
  return {
    dir: (id) => path.join(dir, id),
    readManifest: async (id) => JSON.parse(await fsp.readFile(path.join(dir, id, 'manifest.json'), 'utf8')),
    listRunIds: async () => (await fsp.readdir(dir)).sort(),
  };
}

const samples = (n: number, seed = 3): SampleRecord[] => [...generateSamples({ n, seed })];
const lines = (rs: readonly SampleRecord[]): string => rs.map((r) => JSON.stringify(r) + '\n').join('');

async function writeRun(id: string, text: string): Promise<void> {
  await fsp.mkdir(path.join(root, id), { recursive: true });
  await fsp.writeFile(path.join(root, id, 'manifest.json'), JSON.stringify(buildManifest({ n: 400, seed: 3, runId: id })));
  await fsp.writeFile(path.join(root, id, 'samples.jsonl'), text);
}

/** Everything a table, a search and the statistics can see of an index. */
async function view(s: RunIndexService, id = RUN) {
  const t = await s.table(id);
  const ix = t.index;
  const ids = ix.select({ query: 'correct = false and calls >= 1', sort: [{ field: 'latency', dir: 'desc' }] });
  return {
    n: ix.size,
    records: t.records,
    unreadable: t.unreadable,
    rows: [...ix.all()].map((i) => ix.row(i)),
    filtered: [...ids],
    search: [...ix.search('umbrella')],
    phrase: [...ix.search('"traffic light" red')],
    stats: (await s.statRows(id)).slice(0, 50),
  };
}

beforeEach(async () => {
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-runindex-'));
});
afterEach(async () => {
  await Promise.all(made.splice(0).map((s) => s.flush()));
  await fsp.rm(root, { recursive: true, force: true });
});

describe('RunIndexService: the index persisted beside the run', () => {
  it('a loaded index answers exactly as the built one, reads no search text until a search, and opens records', async () => {
    await writeRun(RUN, lines(samples(400)));
    const built = svc(filesAt(root));
    expect((await built.table(RUN)).origin).toBe('built');
    const a = await view(built);
    await built.flush();
    expect((await fsp.stat(path.join(root, RUN, INDEX_FILE))).size).toBeGreaterThan(0);

    const fresh = svc(filesAt(root));
    const t = await fresh.table(RUN);
    expect(t.origin).toBe('loaded');
    expect(t.index.textsLoaded).toBe(false);
    expect(t.index.select({ query: 'bench = vstar' }).length).toBeGreaterThan(0);
    expect(t.index.textsLoaded).toBe(false);
    const b = await view(fresh);
    expect(t.index.textsLoaded).toBe(true);
    expect(b).toEqual(a);
    expect(a.search.length).toBeGreaterThan(0);
    const qid = a.rows[123]!.qid;
    expect(await fresh.get(RUN, qid)).toEqual(await built.get(RUN, qid));
  });

  it('a run that grew is read from where its index stops; a re-recorded qid keeps one row, the last record', async () => {
    const all = samples(400);
    await writeRun(RUN, lines(all.slice(0, 300)));
    const first = svc(filesAt(root));
    await first.table(RUN);
    await first.flush();

    const again = { ...all[10]!, prediction: 'a re-recorded answer', correct: !all[10]!.correct };
    await fsp.appendFile(path.join(root, RUN, 'samples.jsonl'), lines([...all.slice(300), again]));
    const s = svc(filesAt(root));
    const t = await s.table(RUN);
    expect(t.origin).toBe('loaded');
    expect(t.index.size).toBe(400);
    expect(t.records).toBe(401);
    expect((await s.get(RUN, all[10]!.qid)).prediction).toBe('a re-recorded answer');
    expect(t.index.row(t.index.rowOf(RUN, all[10]!.qid)!).correct).toBe(again.correct);

    // The same answers as an index built from scratch over the whole file.
    await fsp.rm(path.join(root, RUN, INDEX_FILE));
    const scratch = svc(filesAt(root), { persist: false });
    expect((await scratch.table(RUN)).origin).toBe('built');
    expect(await view(s)).toEqual(await view(scratch));

    // Grows again while the service holds it: only the new lines are parsed.
    await fsp.appendFile(path.join(root, RUN, 'samples.jsonl'), lines(samples(5, 99).map((r) => ({ ...r, qid: `late-${r.qid}` }))));
    const t2 = await s.table(RUN);
    expect(t2.origin).toBe('extended');
    expect(t2.index.size).toBe(405);
  });

  it('a samples file changed in place (same size) or replaced is re-indexed, never served from the stale index', async () => {
    const rs = samples(400);
    await writeRun(RUN, lines(rs));
    const s1 = svc(filesAt(root));
    await s1.table(RUN);
    await s1.flush();
    // One character of the first record changed: same size, same tail.
    const text = lines(rs);
    const edited = text.replace(/"prediction":"([^"])/, '"prediction":"Z');
    expect(edited.length).toBe(text.length);
    await fsp.writeFile(path.join(root, RUN, 'samples.jsonl'), edited);
    const s2 = svc(filesAt(root));
    const t = await s2.table(RUN);
    expect(t.origin).toBe('built');
    expect((await s2.get(RUN, rs[0]!.qid)).prediction.startsWith('Z')).toBe(true);

    // Shorter: a different, smaller run in its place.
    await s2.flush();
    await fsp.writeFile(path.join(root, RUN, 'samples.jsonl'), lines(rs.slice(0, 50)));
    const s3 = svc(filesAt(root));
    const t3 = await s3.table(RUN);
    expect(t3.origin).toBe('built');
    expect(t3.index.size).toBe(50);
  });

  it('a damaged index (truncated, garbage, another format, oversized header) is rebuilt and replaced', async () => {
    await writeRun(RUN, lines(samples(400)));
    const s = svc(filesAt(root));
    const want = await view(s);
    await s.flush();
    const idx = path.join(root, RUN, INDEX_FILE);
    const good = await fsp.readFile(idx);
    const header = good.readUInt32LE(8);
    const damaged: Array<[string, Buffer]> = [
      ['truncated in the columns', good.subarray(0, Math.floor(good.length / 3))],
      ['truncated in the header', good.subarray(0, 20)],
      ['empty', Buffer.alloc(0)],
      ['garbage', Buffer.from('not an index at all, just text\n'.repeat(50))],
      ['huge header length', Buffer.concat([good.subarray(0, 8), Buffer.from([0xff, 0xff, 0xff, 0x7f]), good.subarray(12)])],
      ['another format', Buffer.from(good.toString('latin1').replace('"format":1', '"format":9'), 'latin1')],
      ['a column cut short', Buffer.from(good.toString('latin1').replace(/"score":\[(\d+),(\d+)\]/, (_m, a: string, b: string) => `"score":[${a},${Number(b) - 8}]`), 'latin1')],
    ];
    expect(header).toBeGreaterThan(0);
    for (const [what, bytes] of damaged) {
      await fsp.writeFile(idx, bytes);
      const fresh = svc(filesAt(root));
      const t = await fresh.table(RUN);
      expect(t.origin, what).toBe('built');
      expect(await view(fresh), what).toEqual(want);
      await fresh.flush();
      // Rewritten: the next start loads it.
      expect((await svc(filesAt(root)).table(RUN)).origin, what).toBe('loaded');
    }
  });

  it('search texts damaged after the columns were read fail the search loudly (and a new service rebuilds)', async () => {
    await writeRun(RUN, lines(samples(100)));
    const s = svc(filesAt(root));
    await s.table(RUN);
    await s.flush();
    const t = await svc(filesAt(root)).table(RUN);
    expect(t.origin).toBe('loaded');
    const idx = path.join(root, RUN, INDEX_FILE);
    const good = await fsp.readFile(idx);
    await fsp.writeFile(idx, good.subarray(0, good.length - 100));
    expect(() => t.index.search('umbrella')).toThrow(/truncated|malformed|rewritten/);
    expect((await svc(filesAt(root)).table(RUN)).origin).toBe('built');
  });

  it('a run folder copied under another id is indexed under its own id', async () => {
    await writeRun(RUN, lines(samples(100)));
    const s = svc(filesAt(root));
    await s.table(RUN);
    await s.flush();
    await fsp.cp(path.join(root, RUN), path.join(root, 'copy-of-run'), { recursive: true });
    const t = await svc(filesAt(root)).table('copy-of-run');
    expect(t.origin).toBe('built');
    expect(t.index.row(0).run).toBe('copy-of-run');
  });

  it('a torn last line and bad lines are skipped and counted; a run ending in a torn line is not persisted', async () => {
    const rs = samples(50);
    await writeRun(RUN, lines(rs.slice(0, 40)) + '{"qid": "broken"\n' + 'not json\n' + lines(rs.slice(40)) + JSON.stringify(rs[0]).slice(0, 30));
    const s = svc(filesAt(root));
    const t = await s.table(RUN);
    expect(t.index.size).toBe(50);
    expect(t.unreadable).toBe(3); // two bad lines and the torn tail
    expect(t.ragged).toBe(true);
    await s.flush();
    await expect(fsp.stat(path.join(root, RUN, INDEX_FILE))).rejects.toThrow();
  });

  it('an index that cannot be written (a folder in its place) costs nothing but the re-read', async () => {
    await writeRun(RUN, lines(samples(30)));
    await fsp.mkdir(path.join(root, RUN, INDEX_FILE));
    const s = svc(filesAt(root));
    expect((await s.table(RUN)).index.size).toBe(30);
    await s.flush();
    expect((await fsp.stat(path.join(root, RUN, INDEX_FILE))).isDirectory()).toBe(true);
    expect((await fsp.readdir(path.join(root, RUN))).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const again = await svc(filesAt(root)).table(RUN);
    expect(again.origin).toBe('built');
    expect(again.index.size).toBe(30);
  });

  it('warm() loads the persisted indexes in the background, leaves runs without one alone, and a request shares the load', async () => {
    await writeRun('a', lines(samples(120, 1)));
    await writeRun('b', lines(samples(80, 2)));
    const first = svc(filesAt(root));
    await first.table('a'); // persists a's index only
    await first.flush();
    let manifests = 0;
    const files = filesAt(root);
    const second = svc({ ...files, readManifest: (id) => (manifests++, files.readManifest(id)) });
    const warming = second.warm();
    const during = second.table('a'); // arrives while the warm-up may be loading it: one load, not two
    await warming;
    const t = await during;
    expect(t.origin).toBe('loaded');
    expect(t.index.size).toBe(120);
    expect(manifests).toBe(1);
    expect(await second.table('a')).toBe(t); // already in memory
    await expect(fsp.access(path.join(root, 'b', INDEX_FILE))).rejects.toThrow(); // b was not indexed by the warm-up
    expect(manifests).toBe(1);
  });

  it('several runs pool into one index with both runs\' rows', async () => {
    await writeRun(RUN, lines(samples(60)));
    await writeRun('other', lines(samples(40, 8)));
    const s = svc(filesAt(root));
    const { index } = await s.index([RUN, 'other', RUN]);
    expect(index.size).toBe(100);
    expect(index.select({ query: 'run = other' }).length).toBe(40);
    expect(index.search('umbrella').length).toBe((await s.table(RUN)).index.search('umbrella').length + (await s.table('other')).index.search('umbrella').length);
  });
});

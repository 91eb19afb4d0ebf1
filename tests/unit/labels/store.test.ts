import { appendFile, mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { foldLabels, LabelStore, parseLabelLines } from '../../../app/labels';

let ws: string;
let store: LabelStore;
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), 'loupe-labels-'));
  store = new LabelStore(ws);
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

const ev = (over: Record<string, unknown> = {}) => ({ who: 'alice', run: 'r1', qid: 'q1', label: 'wrong_region', op: 'add' as const, ...over });

describe('LabelStore', () => {
  it('appends one JSON line per event and reads them back in order', async () => {
    await store.append(ev());
    await store.append(ev({ qid: 'q2', step: 1, note: 'box misses the sign, "left" one' }));
    await store.append(ev({ op: 'remove' }));
    const text = await readFile(join(ws, 'labels', 'alice.jsonl'), 'utf8');
    expect(text.split('\n')).toHaveLength(4);
    expect(text.endsWith('\n')).toBe(true);
    const r = await store.read('alice');
    expect(r.issues).toEqual([]);
    expect(r.tornTail).toBeUndefined();
    expect(r.events.map((e) => [e.qid, e.op, e.step ?? null])).toEqual([
      ['q1', 'add', null],
      ['q2', 'add', 1],
      ['q1', 'remove', null],
    ]);
    expect(r.events[1]!.note).toBe('box misses the sign, "left" one');
    expect(Date.parse(r.events[0]!.at)).not.toBeNaN();
    expect(await store.annotators()).toEqual(['alice']);
  });

  it('keeps call order for concurrent appends', async () => {
    await Promise.all(Array.from({ length: 30 }, (_, i) => store.append(ev({ qid: `q${i}` }))));
    const r = await store.read('alice');
    expect(r.events.map((e) => e.qid)).toEqual(Array.from({ length: 30 }, (_, i) => `q${i}`));
  });

  it('rejects bad events with a message naming the field, writing nothing', async () => {
    await expect(store.append(ev({ op: 'toggle' }))).rejects.toThrow(/op:/);
    await expect(store.append(ev({ step: -1 }))).rejects.toThrow(/step:/);
    await expect(store.append(ev({ who: '../evil' }))).rejects.toThrow(/who:/);
    expect(await store.annotators()).toEqual([]);
  });

  it('rejects unsafe annotator ids as file names', async () => {
    await expect(store.read('../x')).rejects.toThrow(/annotator id '..\/x' is not allowed/);
    await expect(store.read('taxonomy')).rejects.toThrow(/not allowed/);
  });

  it('tolerates a torn last line when reading and reports it', async () => {
    await store.append(ev());
    await store.append(ev({ qid: 'q2' }));
    const file = join(ws, 'labels', 'alice.jsonl');
    await appendFile(file, '{"v":1,"who":"alice","at":"2026-01-01T00:00:00Z","run":"r1","qid":"q3","lab');
    const r = await store.read('alice');
    expect(r.events.map((e) => e.qid)).toEqual(['q1', 'q2']);
    expect(r.issues).toEqual([]);
    expect(r.tornTail).toMatchObject({ line: 3 });
    expect(r.tornTail!.text).toContain('"qid":"q3"');
  });

  it('moves a torn tail aside on the next append so the file stays line-clean and nothing is lost', async () => {
    await store.append(ev());
    const file = join(ws, 'labels', 'alice.jsonl');
    const torn = '{"v":1,"who":"alice","at":"2026-01-01T00:00:00Z","run":"r1","qid":"q9","label":"no_z';
    await appendFile(file, torn);
    const fresh = new LabelStore(ws); // a new process after the crash
    await fresh.append(ev({ qid: 'q2' }));
    const r = await fresh.read('alice');
    expect(r.tornTail).toBeUndefined();
    expect(r.issues).toEqual([]);
    expect(r.events.map((e) => e.qid)).toEqual(['q1', 'q2']);
    const saved = (await readFile(`${file}.torn`, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { text: string; offset: number });
    expect(saved).toHaveLength(1);
    expect(saved[0]!.text).toBe(torn);
    expect(saved[0]!.offset).toBeGreaterThan(0);
  });

  it('keeps a complete last event that only lacks its newline', async () => {
    const file = join(ws, 'labels', 'alice.jsonl');
    await mkdir(join(ws, 'labels'), { recursive: true });
    await writeFile(file, JSON.stringify({ v: 1, who: 'alice', at: '2026-01-01T00:00:00Z', run: 'r1', qid: 'q0', label: 'no_zoom', op: 'add' }));
    expect((await store.read('alice')).events).toHaveLength(1);
    await store.append(ev({ qid: 'q1' }));
    const r = await store.read('alice');
    expect(r.events.map((e) => e.qid)).toEqual(['q0', 'q1']);
    expect(await readFile(`${file}.torn`, 'utf8').catch(() => 'absent')).toBe('absent');
  });

  it('reports a corrupt line in the middle with its line number and keeps the rest', () => {
    const good = (q: string) => JSON.stringify({ v: 1, who: 'alice', at: 't', run: 'r', qid: q, label: 'x', op: 'add' });
    const text = [good('a'), 'garbage{', JSON.stringify({ who: 'alice' }), good('b'), JSON.stringify({ v: 1, who: 'bob', at: 't', run: 'r', qid: 'c', label: 'x', op: 'add' }), ''].join('\n');
    const r = parseLabelLines(text, 'alice', 'labels/alice.jsonl');
    expect(r.events.map((e) => e.qid)).toEqual(['a', 'b']);
    expect(r.issues.map((i) => i.line)).toEqual([2, 3, 5]);
    expect(r.issues[0]!.message).toContain('not valid JSON');
    expect(r.issues[1]!.message).toContain('run');
    expect(r.issues[2]!.message).toContain("event by 'bob'");
    expect(r.tornTail).toBeUndefined();
  });

  it('reads every annotator and folds them', async () => {
    await store.append(ev());
    await store.append(ev({ who: 'bob', label: 'no_zoom' }));
    const all = await store.readAll();
    expect(all.map((r) => r.annotator)).toEqual(['alice', 'bob']);
    const fold = foldLabels(all);
    expect(fold.size).toBe(1);
    const [byWho] = [...fold.values()];
    expect([...byWho!.entries()].map(([w, l]) => [w, l.map((c) => c.label)])).toEqual([
      ['alice', ['wrong_region']],
      ['bob', ['no_zoom']],
    ]);
  });
});

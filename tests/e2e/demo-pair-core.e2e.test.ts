/**
 * Demo pairs through the real core (createCore + dispatch): loupe-tiny vcot vs notool on one example at once on the
 * CPU (one engine process, turns queued in order, so both sides stream before either ends), two different local
 * models at once (neither ends the other's process), hostile pairs (a missing model, the same configuration twice:
 * that side errs, the other runs), save as a pair, the pair's HTML export, bad pair ids. The UI is in
 * demo-pair.e2e.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { createCore, type Core } from '../../main/core';
import type { DemoEvent, DemoPair, DemoRunPairReq, MediaRef } from '../../app/contract';
import { tempWorkspace } from './harness';
import { GLASS, GLASS_QUESTION, RECORDED_QID, RECORDED_RUN, writeRecordedRun } from './demo.fixture';

async function call<T = unknown>(core: Core, method: string, payload: unknown): Promise<T> {
  const r = await core.dispatch(method, payload);
  if (!r.ok) throw new Error(r.error.message);
  return r.result as T;
}

/** Every demo event, in arrival order, from now on. */
function record(core: Core): { events: DemoEvent[]; off(): void } {
  const events: DemoEvent[] = [];
  const off = core.onEvent((name, payload) => {
    if (name === 'demo:event') events.push(payload as DemoEvent);
  });
  return { events, off };
}

/** Resolves once both runs of the pair sent `done`. */
async function bothDone(events: DemoEvent[], pair: DemoPair): Promise<void> {
  for (let i = 0; i < 2400; i++) {
    if ([pair.a, pair.b].every((id) => events.some((e) => e.runId === id && e.type === 'done'))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the pair did not end in 120 s');
}

const doneOf = (events: DemoEvent[], runId: string) => events.find((e): e is Extract<DemoEvent, { type: 'done' }> => e.runId === runId && e.type === 'done')!;

describe('demo pairs in the core', () => {
  let core: Core;
  let workspace: string;
  let scene: MediaRef;
  let glass: MediaRef;
  let question: string;
  const scenes = path.resolve(import.meta.dirname, '../../models/loupe-tiny/examples');

  beforeAll(async () => {
    workspace = tempWorkspace('loupe-demo-pair-');
    await writeRecordedRun(workspace);
    core = await createCore({ workspace, transport: 'browser' });
    const sample = JSON.parse(fs.readFileSync(path.join(scenes, 'samples.jsonl'), 'utf8').split('\n')[1]!) as { image: string; question: string };
    question = sample.question;
    scene = (await call<{ media: MediaRef[] }>(core, 'demo:import', { paths: [path.join(scenes, sample.image)] })).media[0]!;
    glass = (await call<{ media: MediaRef[] }>(core, 'demo:import', { paths: [GLASS] })).media[0]!;
  });
  afterAll(async () => {
    await core?.dispose();
  });

  const tiny = { kind: 'local' as const, modelId: 'loupe-tiny' };
  let vcotPair: DemoPair;

  it('runs loupe-tiny vcot and notool at once on one engine: both stream before either ends, each saved with its pair link', async () => {
    const rec = record(core);
    vcotPair = await call<DemoPair>(core, 'demo:runPair', { media: [scene], question, a: { engine: tiny, prompt: 'vcot' }, b: { engine: tiny, prompt: 'notool' } } satisfies DemoRunPairReq);
    expect(vcotPair.labels).toEqual(['loupe-tiny · vcot', 'loupe-tiny · notool']);
    expect(vcotPair.a).not.toBe(vcotPair.b);
    await bothDone(rec.events, vcotPair);
    rec.off();
    const ev = rec.events;
    const firstDone = Math.min(...[vcotPair.a, vcotPair.b].map((id) => ev.findIndex((e) => e.runId === id && e.type === 'done')));
    // Interleaved: each side had started a turn and streamed text before the first of them ended.
    for (const id of [vcotPair.a, vcotPair.b]) {
      expect(ev.slice(0, firstDone).some((e) => e.runId === id && e.type === 'turn-start')).toBe(true);
      expect(ev.slice(0, firstDone).some((e) => e.runId === id && e.type === 'tokens')).toBe(true);
    }
    // One engine process, turns queued fairly: A's turn, then B's, then A's next (not B's whole episode first).
    const turnOrder = ev.filter((e) => e.type === 'turn' && (e.runId === vcotPair.a || e.runId === vcotPair.b)).map((e) => (e.runId === vcotPair.a ? 'A' : 'B'));
    expect(turnOrder.slice(0, 3)).toEqual(['A', 'B', 'A']);
    const a = doneOf(ev, vcotPair.a).trajectory;
    const b = doneOf(ev, vcotPair.b).trajectory;
    expect(a.prompt).toBe('vcot');
    expect(b.prompt).toBe('notool');
    expect(a.turns[0]?.call?.name).toBe('crop_image_normalized');
    expect(b.turns.every((t) => !t.call)).toBe(true);
    expect(a.error).toBeUndefined();
    expect(b.error).toBeUndefined();
    const p = await call<DemoPair>(core, 'demo:pair', { pairId: vcotPair.pairId });
    expect(p).toEqual({ ...vcotPair, saved: false });
  });

  it('saves both runs as a pair (out of the scratch space, into runs/) and exports it as one offline page', async () => {
    const saved = await call<DemoPair>(core, 'demo:savePair', { pairId: vcotPair.pairId });
    expect(saved.saved).toBe(true);
    for (const [id, side] of [[vcotPair.a, 'A'], [vcotPair.b, 'B']] as const) {
      const m = JSON.parse(fs.readFileSync(path.join(workspace, 'runs', id, 'manifest.json'), 'utf8')) as { name: string; extra: { pair: { id: string; side: string } } };
      expect(m.extra.pair).toMatchObject({ id: vcotPair.pairId, side });
      expect(m.name).toContain(`${side}: loupe-tiny`);
      expect(fs.existsSync(path.join(workspace, 'demo', id))).toBe(false);
    }
    // Saving again changes nothing; Compare reads the two runs like any others.
    expect(await call<DemoPair>(core, 'demo:savePair', { pairId: vcotPair.pairId })).toEqual(saved);
    const cmp = await call<{ shared: number }>(core, 'runs:compare', { a: vcotPair.a, b: vcotPair.b });
    expect(cmp.shared).toBe(1);
    const out = await call<{ path: string; name: string; bytes: number }>(core, 'demo:exportPair', { pairId: vcotPair.pairId });
    expect(out.name).toBe(`${vcotPair.pairId}.html`);
    const html = fs.readFileSync(out.path, 'utf8');
    expect(html).toContain('data-side="A"');
    expect(html).toContain('data-side="B"');
    expect(html).toContain('loupe-tiny · notool');
    expect(html).toContain('data:image/');
    expect(html).not.toMatch(/\b(src|href)="https?:/);
    expect(html).not.toContain('<script');
  });

  it('two different local models at once: neither side ends the other side\'s engine', async () => {
    const rec = record(core);
    // A loads first; B's model then becomes the Demo's kept model while A is between its crop turn and its answer.
    const pair = await call<DemoPair>(core, 'demo:runPair', { media: [scene], question, settings: { temperature: 0, maxTokensPerTurn: 80 }, a: { engine: tiny }, b: { engine: { kind: 'local', modelId: 'tiny-random-qwen25vl' } } });
    await bothDone(rec.events, pair);
    rec.off();
    const errors = rec.events.filter((e) => e.type === 'error' && (e.runId === pair.a || e.runId === pair.b));
    expect(errors).toEqual([]);
    expect(doneOf(rec.events, pair.a).trajectory.turns.length).toBeGreaterThan(1);
    expect(doneOf(rec.events, pair.b).trajectory.turns.length).toBeGreaterThan(0);
  });

  it('hostile pairs: a missing model or a repeated configuration errs on that side only; a bad id or image fails clearly', async () => {
    const replay = { kind: 'replay' as const, runId: RECORDED_RUN, qid: RECORDED_QID };
    const rec = record(core);
    const missing = await call<DemoPair>(core, 'demo:runPair', { media: [glass], question: GLASS_QUESTION, a: { engine: replay }, b: { engine: { kind: 'local', modelId: 'no-such-model' } } });
    const same = await call<DemoPair>(core, 'demo:runPair', { media: [glass], question: GLASS_QUESTION, a: { engine: replay }, b: { engine: replay } });
    await bothDone(rec.events, missing);
    await bothDone(rec.events, same);
    rec.off();
    const errorsOf = (id: string) => rec.events.filter((e): e is Extract<DemoEvent, { type: 'error' }> => e.runId === id && e.type === 'error').map((e) => e.message);
    expect(errorsOf(missing.b).join('\n')).toMatch(/no model "no-such-model"/);
    expect(errorsOf(same.b).join('\n')).toMatch(/B repeats A/);
    for (const p of [missing, same]) {
      expect(errorsOf(p.a)).toEqual([]);
      expect(doneOf(rec.events, p.a).trajectory.finalText).toContain('green');
    }
    await expect(call(core, 'demo:pair', { pairId: '../../etc' })).rejects.toThrow(/no Demo pair/);
    await expect(call(core, 'demo:exportPair', { pairId: 'pair-nope' })).rejects.toThrow(/no Demo pair "pair-nope"/);
    await expect(call(core, 'demo:runPair', { media: [{ ...glass, id: `${'0'.repeat(64)}.jpg` }], question: 'q', a: { engine: replay }, b: { engine: tiny } })).rejects.toThrow(/is not in this workspace/);
    await expect(call(core, 'demo:runPair', { media: [glass], question: 'q', a: { engine: replay } })).rejects.toThrow(/b/);
    // The core still serves.
    expect((await call<DemoPair>(core, 'demo:pair', { pairId: same.pairId })).labels[1]).toContain('replay');
  });
});

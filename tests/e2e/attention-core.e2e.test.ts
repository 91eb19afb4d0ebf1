/**
 * demo:attention through the real core (createCore + dispatch): a replay run says why it has no maps, a turn without
 * a crop says so, and hostile payloads (unknown run, negative turn, extra keys) get an error reply while the core
 * keeps answering. The local model's maps are covered in the browser (attention.e2e.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../main/core';
import type { DemoEvent, MediaRef } from '../../app/contract';
import { tempWorkspace } from './harness';
import { GLASS, GLASS_QUESTION, RECORDED_QID, RECORDED_RUN, writeRecordedRun } from './demo.fixture';

describe('demo:attention in the core', () => {
  let core: Core;
  let runId: string;
  beforeAll(async () => {
    const workspace = tempWorkspace('loupe-attention-core-');
    await writeRecordedRun(workspace);
    core = await createCore({ workspace, transport: 'browser' });
    const imported = await core.dispatch('demo:import', { paths: [GLASS] });
    if (!imported.ok) throw new Error(imported.error.message);
    const glass = (imported.result as { media: MediaRef[] }).media[0]!;
    const done = new Promise<void>((resolve) => {
      const off = core.onEvent((name, payload) => {
        if (name === 'demo:event' && (payload as DemoEvent).type === 'done') {
          off();
          resolve();
        }
      });
    });
    const r = await core.dispatch('demo:run', { media: [glass], question: GLASS_QUESTION, engine: { kind: 'replay', runId: RECORDED_RUN, qid: RECORDED_QID } });
    if (!r.ok) throw new Error(r.error.message);
    runId = (r.result as { runId: string }).runId;
    await done;
  });
  afterAll(async () => {
    await core?.dispose();
  });

  it('a replay has no model to ask; a turn past the crops has no box; bad payloads are error replies', async () => {
    const replay = await core.dispatch('demo:attention', { runId, turnIndex: 0 });
    expect(replay).toEqual({ ok: true, result: { unavailable: 'unavailable: a replay re-runs recorded text, with no model to ask' } });
    const answer = await core.dispatch('demo:attention', { runId, branch: 'b0', turnIndex: 2 });
    expect(answer).toEqual({ ok: true, result: { unavailable: 'turn 3 has no crop box to take attention from' } });
    const unknown = await core.dispatch('demo:attention', { runId: 'no-such-run', turnIndex: 0 });
    expect(unknown.ok).toBe(false);
    for (const bad of [{ runId, turnIndex: -1 }, { runId, turnIndex: 0, extra: 1 }, { runId, turnIndex: 0.5 }, { turnIndex: 0 }]) {
      const r = await core.dispatch('demo:attention', bad);
      expect(r.ok, JSON.stringify(bad)).toBe(false);
    }
    expect((await core.dispatch('demo:get', { runId })).ok).toBe(true);
  });
});

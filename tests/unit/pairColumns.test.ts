import { describe, expect, it } from 'vitest';
import type { DemoEvent, MediaRef, Trajectory } from '../../app/contract';
import { applyPairEvent, emptyColumn, pairRows } from '../../renderer/src/stores/pairColumns';

const img: MediaRef = { id: `${'a'.repeat(64)}.png`, width: 10, height: 20 };
const base = { runId: 'r', branch: 'b0' };
const fold = (events: DemoEvent[], t0 = 1000) => events.reduce((c, ev, i) => applyPairEvent(c, ev, t0 + i), emptyColumn());

describe('side by side columns (renderer/src/stores/pairColumns)', () => {
  it('streams a turn, pauses, resumes on the next turn, and ends with the trajectory and its time', () => {
    const turn0 = { index: 0, text: 'zoom <tool_call>{}</tool_call>', call: { raw: '{}', name: 'crop_image_normalized', produced: [] } } as unknown as Trajectory['turns'][number];
    const done: Trajectory = { dialect: 'pixel-reasoner', prompt: 'vcot', media: [img], originals: [img], isVideo: false, question: 'q', turns: [turn0, { index: 1, text: '\\boxed{1}' }], stopReason: 'answer', finalText: '\\boxed{1}' };
    const c = fold([
      { ...base, type: 'start', media: [img], originals: [img], isVideo: false, system: '', userText: '', engineLabel: 'tiny', replay: false },
      { ...base, type: 'turn-start', turnIndex: 0, at: 0 },
      { ...base, type: 'tokens', turnIndex: 0, delta: 'zo' },
      { ...base, type: 'tokens', turnIndex: 0, delta: 'om' },
    ]);
    expect(c.status).toBe('running');
    expect(c.streaming).toEqual({ turnIndex: 0, text: 'zoom' });
    expect(pairRows(c, emptyColumn())).toBe(1);
    const paused = applyPairEvent(c, { ...base, type: 'paused', proposal: { turnIndex: 0, name: 'crop_image_normalized', raw: '{}', kind: 'crop', bboxNormalized: [0.1, 0.1, 0.5, 0.5] } }, 2000);
    expect(paused.status).toBe('paused');
    expect(paused.editBox).toEqual([0.1, 0.1, 0.5, 0.5]);
    const ran = applyPairEvent(paused, { ...base, type: 'turn', turn: turn0 }, 3000);
    expect(ran.status).toBe('running');
    expect(ran.proposal).toBeNull();
    expect(ran.streaming).toBeNull();
    expect(ran.trajectory.turns).toHaveLength(1);
    const ended = applyPairEvent(ran, { ...base, type: 'done', trajectory: done, branches: [{ id: 'b0', label: 'Original' }] }, 9000);
    expect(ended.status).toBe('done');
    expect(ended.startedAt).toBe(1000);
    expect(ended.endedAt).toBe(9000);
    expect(pairRows(ended, emptyColumn())).toBe(2);
  });

  it('keeps errors, ends in error on an engine error, and ignores a second branch but not its error', () => {
    const c = fold([
      { ...base, type: 'error', message: 'the engine could not start: no model "x"' },
      { ...base, branch: 'b1', type: 'tokens', turnIndex: 0, delta: 'other branch' },
      { ...base, type: 'done', trajectory: { dialect: 'pixel-reasoner', prompt: 'vcot', media: [], originals: [], isVideo: false, question: 'q', turns: [], stopReason: 'engine_error', error: 'no model' }, branches: [] },
    ]);
    expect(c.errors).toEqual(['the engine could not start: no model "x"']);
    expect(c.streaming).toBeNull();
    expect(c.status).toBe('error');
  });
});

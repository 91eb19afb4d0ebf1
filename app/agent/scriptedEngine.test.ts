import { describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../engines/types';
import { resolveSettings } from './settings';
import { ScriptedEngine } from './scriptedEngine';

const req = (extra: Partial<GenerateRequest> = {}): GenerateRequest => ({
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  prompt: 'x'.repeat(40),
  maxTokens: 10,
  temperature: 0,
  topP: 1,
  topK: -1,
  stop: [],
  ...extra,
});

describe('ScriptedEngine', () => {
  it('replays turns in order, streams deltas that add up, and records requests', async () => {
    const e = new ScriptedEngine(['first reply', { text: 'second', finishReason: 'length', promptTokens: 7, completionTokens: 3 }], { chunkSize: 4 });
    const deltas: string[] = [];
    const r1 = await e.generate(req({ onToken: (d) => deltas.push(d) }));
    expect(deltas).toEqual(['firs', 't re', 'ply']);
    expect(r1).toMatchObject({ text: 'first reply', finishReason: 'stop', promptTokens: 10, completionTokens: 3 });
    expect(await e.generate(req())).toMatchObject({ text: 'second', finishReason: 'length', promptTokens: 7, completionTokens: 3 });
    expect(e.requests).toHaveLength(2);
    await expect(e.generate(req())).rejects.toThrow(/no recorded reply for turn 3 \(the script has 2\)/);
  });

  it('fails scripted errors and honours abort during a delay', async () => {
    const e = new ScriptedEngine([{ text: '', error: 'boom' }, { text: 'late', delayMs: 5_000 }]);
    await expect(e.generate(req())).rejects.toThrow('boom');
    const ctrl = new AbortController();
    const p = e.generate(req({ signal: ctrl.signal }));
    ctrl.abort(new Error('stop now'));
    await expect(p).rejects.toThrow('stop now');
  });
});

describe('resolveSettings', () => {
  it('defaults to vcot/eval greedy and to the PR train decoding in train mode', () => {
    expect(resolveSettings()).toMatchObject({ prompt: 'vcot', mode: 'eval', decoding: { temperature: 0, topP: 1, topK: -1 } });
    expect(resolveSettings({ mode: 'train', decoding: { seed: 3 } }).decoding).toEqual({ temperature: 1, topP: 0.95, topK: 40, laterTemperature: 0.9, seed: 3 });
  });
});

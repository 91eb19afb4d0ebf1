/**
 * Decoding values an engine cannot take (a negative token count or temperature) are refused where they enter:
 * serve-model answers 400 naming the field; a sweep plan and `loupe run` refuse them with a sentence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedEngine } from '../../agent/scriptedEngine';
import { expandPlan } from '../../sweeps/plan';
import { startOpenAIServer, type OpenAIServer } from './openaiServer';

describe('negative max_tokens / temperature', () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startOpenAIServer({ engine: new ScriptedEngine(Array.from({ length: 10 }, () => 'ok')), host: '127.0.0.1', port: 0 });
  });
  afterAll(() => server.close());

  const post = async (extra: Record<string, unknown>): Promise<{ status: number; message: string }> => {
    const r = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.apiKey}` },
      body: JSON.stringify({ model: 'scripted', messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });
    const j = (await r.json()) as { error?: { message: string } };
    return { status: r.status, message: j.error?.message ?? '' };
  };

  it('serve-model: 400 naming the field; valid values still answer', async () => {
    expect(await post({ max_tokens: -5 })).toEqual({ status: 400, message: expect.stringMatching(/^max_tokens: must be between 1 and \d+, got -5$/) });
    expect(await post({ max_completion_tokens: 0 })).toEqual({ status: 400, message: expect.stringMatching(/^max_completion_tokens: must be between 1 and \d+, got 0$/) });
    expect(await post({ max_tokens: 2.5 })).toMatchObject({ status: 400 });
    expect(await post({ temperature: -0.1 })).toEqual({ status: 400, message: 'temperature: must be between 0 and 2, got -0.1' });
    expect((await post({ max_tokens: 16, temperature: 0 })).status).toBe(200);
  });

  it('a sweep plan refuses them before any run starts', () => {
    const plan = (settings: Record<string, unknown>) => () =>
      expandPlan({ models: [{ ref: 'replay:x.jsonl' }], benchmarks: [{ id: 'vstar', data: 'd' }], settings } as unknown as Parameters<typeof expandPlan>[0]);
    expect(plan({ temperature: -1 })).toThrow('temperature must be a number ≥ 0 (0 = greedy), got -1');
    expect(plan({ temperature: [0, -0.5] })).toThrow(/got -0\.5/);
    expect(plan({ maxTokensPerTurn: -3 })).toThrow('max tokens per turn must be a whole number ≥ 1, got -3');
  });
});

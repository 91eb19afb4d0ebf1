/**
 * `runs:stats` through the real core: the numbers come from the run's index (persisted beside the run), and a
 * newer request for the same runs — the user changed the filter again — supersedes one still waiting, which
 * answers with an error instead of computing statistics nobody will see.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../../main/core';
import { writeLargeRun } from '../../../scripts/gen-large-run';

let tmp: string;
let core: Core;
let runId: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-browse-stats-'));
  runId = path.basename((await writeLargeRun(tmp, { n: 2000, seed: 4, media: false })).runDir);
  core = await createCore({ workspace: tmp, transport: 'browser' });
});

afterAll(async () => {
  await core?.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

type Reply = { ok: true; result: { overall: { n: number } } } | { ok: false; error: { message: string } };

describe('runs:stats', () => {
  it('counts the filtered rows, and a bad filter is an error reply', async () => {
    const all = (await core.dispatch('runs:stats', { runIds: [runId], query: '' })) as Reply;
    expect(all.ok, JSON.stringify(all)).toBe(true);
    if (all.ok) expect(all.result.overall.n).toBe(2000);
    const some = (await core.dispatch('runs:stats', { runIds: [runId], query: 'calls = 0' })) as Reply;
    const rows = (await core.dispatch('samples:query', { runIds: [runId], query: 'calls = 0', search: '', sort: [], offset: 0, limit: 1 })) as { ok: true; result: { total: number } };
    expect(some.ok && some.result.overall.n).toBe(rows.result.total);
    const bad = (await core.dispatch('runs:stats', { runIds: [runId], query: 'calls >' })) as Reply;
    expect(bad.ok).toBe(false);
  });

  it('a newer request for the same runs supersedes an older one; other run sets are untouched', async () => {
    const first = core.dispatch('runs:stats', { runIds: [runId], query: 'correct = false' }) as Promise<Reply>;
    const second = core.dispatch('runs:stats', { runIds: [runId], query: 'correct = true' }) as Promise<Reply>;
    const [a, b] = await Promise.all([first, second]);
    expect(a.ok).toBe(false);
    if (!a.ok) expect(a.error.message).toMatch(/superseded/);
    expect(b.ok, JSON.stringify(b)).toBe(true);
    // After it, the next request for the run answers normally.
    const c = (await core.dispatch('runs:stats', { runIds: [runId], query: '' })) as Reply;
    expect(c.ok && c.result.overall.n).toBe(2000);
  });
});

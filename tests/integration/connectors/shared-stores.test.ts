/**
 * One secret store and one job store for every door: a secret saved through the contract (what the Training page
 * calls) is the one `loupe train` gives a job, and the job the CLI submits is the one the core lists. Real core,
 * real `loupe` child processes, the real local connector.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../../main/core';
import type { TrainingJob } from '../../../app/contract';
import { callCore as call, runLoupe as loupe } from '../../e2e/harness';

describe('the app and `loupe train` share the workspace stores', () => {
  let ws: string;
  let core: Core;
  beforeAll(async () => {
    ws = mkdtempSync(path.join(os.tmpdir(), 'loupe-shared-stores-'));
    core = await createCore({ workspace: ws, transport: 'browser' });
  });
  afterAll(async () => {
    await core?.dispose();
    rmSync(ws, { recursive: true, force: true });
  });

  it('a secret saved through the contract is the one a CLI job gets, masked in its log', async () => {
    await call(core, 'training:secretSet', { name: 'wandb/key', value: 'v4lue-from-the-page' });
    const script = 'if [ "$WANDB_API_KEY" = "v4lue-from-the-page" ]; then echo token-matches; else echo token-differs; fi\necho "printed: $WANDB_API_KEY"';
    const r = loupe(['train', 'submit', 'custom-script', '--workspace', ws, '--name', 'cli-secret', '--set', `script=${JSON.stringify(script)}`, '--secret-env', 'WANDB_API_KEY=wandb/key', '--follow']);
    expect(r.err).toMatch(/terminal: succeeded/);
    expect(r.code).toBe(0);
    expect(r.out).toContain('token-matches');
    expect(r.out).not.toContain('v4lue-from-the-page');
    expect(r.out).toMatch(/printed: \S*\*/);
    // The CLI's secret list is the page's.
    expect(loupe(['train', 'secret', 'list', '--workspace', ws]).out.split('\n')).toContain('wandb/key');
  });

  it('the job the CLI submitted is in the core’s list; a job the core submitted is in `loupe train list`', async () => {
    const { jobs } = await call<{ jobs: TrainingJob[] }>(core, 'training:jobs', {});
    const cli = jobs.find((j) => j.name === 'cli-secret');
    expect(cli?.connector).toBe('local');
    expect(cli?.state).toBe('succeeded');
    expect(cli?.secretEnv).toEqual({ WANDB_API_KEY: 'wandb/key' });

    const mine = await call<TrainingJob>(core, 'training:submit', { templateId: 'custom-script', params: { script: 'echo from-the-core' }, connector: 'local', name: 'core-job' });
    const list = loupe(['train', 'list', '--workspace', ws]);
    expect(list.code).toBe(0);
    const rows = list.out.trim().split('\n').map((l) => l.split('\t'));
    expect(rows.find((c) => c[0] === mine.key)?.[3]).toBe('core-job');
    expect(rows.find((c) => c[0] === cli?.key)?.[1]).toBe('succeeded');
  });

  it('reports a jobs.jsonl line that is not a job and still lists the others', async () => {
    const { appendFileSync } = await import('node:fs');
    appendFileSync(path.join(ws, 'training', 'jobs.jsonl'), '{"key": 42}\n');
    const r = await call<{ jobs: TrainingJob[]; issues?: string[] }>(core, 'training:jobs', {});
    expect(r.jobs.map((j) => j.name).sort()).toEqual(['cli-secret', 'core-job']);
    expect(r.issues?.[0]).toMatch(/jobs\.jsonl:\d+: not a job record: key: .*\(skipped\)/);
    const list = loupe(['train', 'list', '--workspace', ws]);
    expect(list.code).toBe(0);
    expect(list.err).toMatch(/warning: .*jobs\.jsonl:\d+: not a job record/);
  });
});

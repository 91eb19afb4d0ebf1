/** `loupe eval --no-progress` prints no per-sample lines: the run's start, its end and the summary only. */
import { describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeSynth, runCli } from './helpers';

describe('loupe eval --no-progress', () => {
  it('prints no per-sample lines (and without it, one per sample on a non-TTY)', async () => {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-noprogress-'));
    const { data, replay } = await makeSynth(tmp, 3);
    const base = ['eval', '--model', `replay:${replay}`, '--bench', 'loupe-synth', '--data', data, '--workspace', path.join(tmp, 'ws')];
    const quiet = await runCli([...base, '--run', 'quiet', '--no-progress']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toMatch(/run quiet: 3 samples/);
    expect(quiet.stderr).not.toMatch(/^\d+\/3 /m);
    const loud = await runCli([...base, '--run', 'loud']);
    expect(loud.code).toBe(0);
    expect(loud.stderr.match(/^\d+\/3 /gm)).toHaveLength(3);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunStore } from './runStore';

const here = path.dirname(fileURLToPath(import.meta.url));
const child = path.join(here, '..', '..', 'tests', 'support', 'appendChild.ts');

let tmp: string;
beforeEach(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-kill-'));
});
afterEach(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** Start the child; resolve with the acked indices once `until(lines)` holds, then SIGKILL it. */
function runChild(args: string[], until: (lines: string[]) => boolean): Promise<{ acks: number[]; lines: string[]; proc: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let buf = '';
    let err = '';
    let done = false;
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts);
      if (!done && until(lines)) {
        done = true;
        proc.kill('SIGKILL');
      }
    });
    proc.on('exit', (code, signal) => {
      if (!done) return reject(new Error(`child exited early (code ${code}, signal ${signal}): ${err}`));
      const acks = lines.filter((l) => l.startsWith('ack ')).map((l) => Number(l.slice(4)));
      resolve({ acks, lines, proc });
    });
  });
}

describe('kill safety', () => {
  it('a SIGKILLed writer leaves a torn line the reader skips; the next writer repairs and continues', async () => {
    const store = new RunStore(path.join(tmp, 'runs'));
    await store.createRun({ id: 'k', model: { id: 'm' }, engine: 'e', dialect: 'pixel-reasoner', prompt: 'vcot' });

    const first = await runChild([store.runsDir, 'k', 'torn', '5'], (l) => l.includes('torn'));
    expect(first.proc.signalCode).toBe('SIGKILL');
    expect(first.acks).toEqual([0, 1, 2, 3, 4]);
    const afterKill = await store.readSamples('k');
    expect(afterKill.records.map((r) => r.qid)).toEqual(['q-0', 'q-1', 'q-2', 'q-3', 'q-4']);
    expect(afterKill.issues).toHaveLength(1);
    expect(afterKill.issues[0]).toMatchObject({ line: 6, kind: 'torn-tail' });

    // A second process reopens (repairs the tail) and appends more, then is killed mid-flood.
    const second = await runChild([store.runsDir, 'k', 'flood', '3'], (l) => l.filter((x) => x.startsWith('ack ')).length >= 6);
    expect(second.lines[0]).toMatch(/^repair .*"action":"truncated"/);
    const after = await store.readSamples('k');
    const qids = after.records.map((r) => r.qid);
    // Every acknowledged record of both processes is there, in order, with nothing in between.
    for (const i of [...first.acks, ...second.acks]) expect(qids).toContain(`q-${i}`);
    expect(qids.slice(0, 8)).toEqual(['q-0', 'q-1', 'q-2', 'q-3', 'q-4', 'q-5', 'q-6', 'q-7']);
    expect(after.issues.every((i) => i.kind === 'torn-tail' && i.line === after.records.length + 1)).toBe(true);

    // Whatever the kill left, a third writer leaves a clean file.
    const run = await store.openRun('k');
    await run.appendSample({ qid: 'final', bench: 'b', question: 'q', answer: 'a', prediction: 'p', score: 1, correct: true, stop_reason: 'answer', calls: 0, tool_errors: 0 });
    await run.close();
    const last = await store.readSamples('k');
    expect(last.issues).toEqual([]);
    expect(last.records.at(-1)?.qid).toBe('final');
    expect(last.records.length).toBe(after.records.length + 1);
  });
});

/**
 * Child process for the kill-safety test. Usage:
 *   node --import tsx appendChild.ts <runsDir> <runId> <mode> <count>
 * Appends `count` sample records through RunHandle, printing `ack <i>` after each one is durable.
 * mode 'torn': then writes half of one more line straight to the file and prints `torn`, and waits
 * to be killed. mode 'flood': keeps appending large records until killed.
 */
import { promises as fsp } from 'node:fs';
import type { SampleRecord } from '../../app/contract/trajectory';
import { RunStore } from '../../app/workspace/runStore';

function record(i: number, pad: number): SampleRecord {
  return {
    qid: `q-${i}`, bench: 'kill-test', question: `question ${i}`, answer: 'A', prediction: 'x'.repeat(pad),
    score: i % 2, correct: i % 2 === 1, stop_reason: 'answer', calls: 0, tool_errors: 0,
  };
}

async function main(): Promise<void> {
  const [runsDir, runId, mode, countArg] = process.argv.slice(2);
  if (!runsDir || !runId || !mode || !countArg) throw new Error('usage: appendChild <runsDir> <runId> <torn|flood> <count>');
  const store = new RunStore(runsDir);
  const run = await store.openRun(runId);
  const repair = await run.openWriter();
  process.stdout.write(`repair ${JSON.stringify(repair)}\n`);
  const existing = (await run.readSamples()).records.length;
  const count = Number(countArg);
  for (let i = 0; i < count; i++) {
    await run.appendSample(record(existing + i, 100));
    process.stdout.write(`ack ${existing + i}\n`);
  }
  if (mode === 'torn') {
    const line = JSON.stringify(record(existing + count, 100)) + '\n';
    await fsp.appendFile(run.samplesPath, line.slice(0, Math.floor(line.length / 2)));
    process.stdout.write('torn\n');
    setInterval(() => undefined, 1000);
    return;
  }
  for (let i = existing + count; ; i++) {
    await run.appendSample(record(i, 256 * 1024));
    process.stdout.write(`ack ${i}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(String((err as Error).stack ?? err) + '\n');
  process.exit(1);
});

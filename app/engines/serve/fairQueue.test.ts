import { describe, expect, it } from 'vitest';
import { FairQueue } from './fairQueue';

/** Run `script` through a one-slot queue, each job finishing when the next is asked for; returns the start order. */
async function order(arrivals: Array<{ client: string; afterStarts: number }>): Promise<string[]> {
  const q = new FairQueue(1, 100);
  const started: string[] = [];
  const releases: Array<() => void> = [];
  const pending: Array<Promise<void>> = [];
  const enqueue = (client: string, n: number) =>
    pending.push(
      q.acquire(client).then((release) => {
        started.push(`${client}${n}`);
        releases.push(release);
      }),
    );
  const counts = new Map<string, number>();
  const byStart = new Map<number, string[]>();
  for (const a of arrivals) byStart.set(a.afterStarts, [...(byStart.get(a.afterStarts) ?? []), a.client]);
  for (let step = 0; step <= arrivals.length; step++) {
    for (const c of byStart.get(step) ?? []) {
      const n = counts.get(c) ?? 0;
      counts.set(c, n + 1);
      enqueue(c, n);
    }
    await new Promise((r) => setImmediate(r));
    releases.shift()?.();
    await new Promise((r) => setImmediate(r));
  }
  while (releases.length) {
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(pending);
  return started;
}

describe('FairQueue', () => {
  it('serves a late client right after the request now running, ahead of another client’s backlog', async () => {
    const s = await order([...Array.from({ length: 6 }, () => ({ client: 'sweep', afterStarts: 0 })), { client: 'me', afterStarts: 2 }]);
    // me arrives while sweep2 runs: it goes next, not after sweep3 as plain round-robin would have it
    expect(s.indexOf('me0')).toBe(3);
    expect(s.filter((x) => x.startsWith('sweep'))).toEqual(['sweep0', 'sweep1', 'sweep2', 'sweep3', 'sweep4', 'sweep5']);
  });

  it('alternates between two backlogged clients', async () => {
    const s = await order([...Array.from({ length: 3 }, () => ({ client: 'a', afterStarts: 0 })), ...Array.from({ length: 3 }, () => ({ client: 'b', afterStarts: 0 }))]);
    expect(s).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
  });

  it('gives up the place of a request whose client went away', async () => {
    const q = new FairQueue(1, 10);
    const first = await q.acquire('a');
    const ac = new AbortController();
    const gone = q.acquire('b', ac.signal);
    const third = q.acquire('c');
    ac.abort(new Error('client closed'));
    await expect(gone).rejects.toThrow('client closed');
    expect(q.waitingFor('b')).toBe(0);
    first();
    (await third)();
  });
});

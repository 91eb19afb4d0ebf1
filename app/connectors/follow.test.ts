/** pollFollow's guarantees with injected faults: each byte once, whole lines, retries, and it always ends. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineAssembler, pollFollow, type Pollable } from './follow';
import { ConnectorError, type JobStatus } from './types';

/** A job whose log grows by `growth` bytes per poll; `faults[i]` makes call i fail with that code. */
function scripted(log: string, growth: number, faults: Record<number, ConnectorError['code']>): Pollable & { calls: number } {
  const bytes = Buffer.from(log);
  let visible = 0;
  const src = {
    calls: 0,
    async status(id: string): Promise<JobStatus> {
      const n = src.calls++;
      const f = faults[n];
      if (f) throw new ConnectorError(f, 'fake', `injected ${f}`);
      visible = Math.min(bytes.length, visible + growth);
      return { id, state: visible >= bytes.length ? 'succeeded' : 'running', rawState: 'X' };
    },
    async logs(_id: string, offset = 0) {
      const n = src.calls++;
      const f = faults[n];
      if (f) throw new ConnectorError(f, 'fake', `injected ${f}`);
      const data = Buffer.from(bytes.subarray(offset, visible));
      return { data, offset, nextOffset: offset + data.length };
    },
  };
  return src;
}

describe('pollFollow', () => {
  it('delivers every byte exactly once, in whole lines, across any pattern of dropped connections', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 12 }).map((s) => s.replace(/\n/g, ' ')), { minLength: 1, maxLength: 15 }),
        fc.integer({ min: 1, max: 40 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 6 }),
        async (lines, growth, faultAt) => {
          const log = `${lines.join('\n')}\nlast line without newline ü`;
          const src = scripted(log, growth, Object.fromEntries(faultAt.map((i) => [i, 'connection-lost' as const])));
          const chunks: string[] = [];
          const warnings: string[] = [];
          const res = await pollFollow(src, 'j', { pollMs: 0, maxRetries: 10, onText: (t) => chunks.push(t), onWarning: (w) => warnings.push(w) }).done;
          expect(res.reason).toBe('terminal');
          expect(chunks.join('')).toBe(log);
          expect(res.offset).toBe(Buffer.byteLength(log));
          chunks.slice(0, -1).forEach((c) => expect(c.endsWith('\n')).toBe(true));
          expect(warnings.length).toBeLessThanOrEqual(faultAt.length);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gives up after maxRetries consecutive transient failures with the error, and ends "vanished" after repeated not-found', async () => {
    const dead = scripted('x\n', 1, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [i, 'unreachable' as const])));
    const r = await pollFollow(dead, 'j', { pollMs: 0, maxRetries: 3 }).done;
    expect(r.reason).toBe('error');
    expect(r.error?.code).toBe('unreachable');
    expect(dead.calls).toBe(4);
    const gone = scripted('x\n', 1, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [i, 'not-found' as const])));
    const g = await pollFollow(gone, 'j', { pollMs: 0, unknownLimit: 2 }).done;
    expect(g.reason).toBe('vanished');
    expect(g.status.state).toBe('unknown');
    const auth = scripted('x\n', 1, { 0: 'auth' });
    expect((await pollFollow(auth, 'j', { pollMs: 0 }).done).error?.code).toBe('auth');
  });

  it('LineAssembler keeps a split UTF-8 character until its line completes', () => {
    const la = new LineAssembler(0);
    const b = Buffer.from('é\n');
    expect(la.push(b.subarray(0, 1))).toBe('');
    expect(la.push(b.subarray(1))).toBe('é\n');
    expect(la.delivered).toBe(3);
  });
});

import { describe, expect, it } from 'vitest';
import { freeNow } from './qwenRuntime';

describe('freeNow', () => {
  it('detaches the buffers and gives their memory back without waiting for a GC', async () => {
    const held = () => process.memoryUsage().arrayBuffers;
    const before = held();
    const buffers = Array.from({ length: 16 }, () => new Float32Array(1 << 20).buffer);
    expect(held() - before).toBeGreaterThanOrEqual(60 << 20);
    freeNow(buffers);
    expect(buffers.every((b) => b.byteLength === 0)).toBe(true);
    // the dropped message releases the memory on the next turns of the event loop, with no GC in between
    for (let i = 0; i < 50 && held() - before > 8 << 20; i++) await new Promise((r) => setTimeout(r, 10));
    expect(held() - before).toBeLessThan(8 << 20);
    freeNow([]);
  });

  it('leaves a buffer it cannot transfer to the GC instead of throwing', () => {
    const shared = new SharedArrayBuffer(16);
    const plain = new ArrayBuffer(16);
    // a SharedArrayBuffer in a transfer list makes postMessage throw: the whole call is skipped, nothing detached
    expect(() => freeNow([shared as unknown as ArrayBuffer, plain])).not.toThrow();
    expect(shared.byteLength).toBe(16);
  });
});

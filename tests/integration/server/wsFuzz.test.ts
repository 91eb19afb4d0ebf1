/**
 * The browser-mode WebSocket against hostile frames: the messages that used to kill the server (`null`, a frame over
 * the size limit, invalid UTF-8, JSON of the wrong shape), then 10^4 random and mutated frames from fast-check
 * (text, binary, oversized, invalid UTF-8, wrong shapes, real method names with random payloads). A real server on
 * loopback, a real `ws` client, a replay demo run paused in step mode on another connection the whole time: afterwards
 * the server answers a normal call and the paused run continues to its answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import WebSocket from 'ws';
import { createCore, type Core } from '../../../main/core';
import { startServer, type RunningServer } from '../../../main/server';
import { WS_MAX_MESSAGE_BYTES } from '../../../main/server/wire';
import { calls, type DemoEvent, type MediaRef, type WireMessage } from '../../../app/contract';
import { GLASS, GLASS_QUESTION, RECORDED_QID, RECORDED_RUN, writeRecordedRun } from '../../e2e/demo.fixture';
import { tempWorkspace } from '../../e2e/harness';
import { setTimeout as sleep } from 'node:timers/promises';

type Result = Extract<WireMessage, { type: 'result' }>;

async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met in ${timeoutMs} ms`);
    await sleep(20);
  }
}

function connect(server: RunningServer): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Results by id, and the close code if the server closed this connection. */
function track(ws: WebSocket) {
  const results = new Map<number, Result[]>();
  const waiters = new Map<number, (r: Result) => void>();
  let closed: { code: number; reason: string } | null = null;
  const onClose: Array<() => void> = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as WireMessage;
    if (m.type !== 'result') return;
    const list = results.get(m.id) ?? [];
    list.push(m);
    results.set(m.id, list);
    waiters.get(m.id)?.(m);
  });
  ws.on('close', (code, reason) => {
    closed = { code, reason: String(reason) };
    for (const f of onClose.splice(0)) f();
  });
  return {
    results,
    get closed() {
      return closed;
    },
    /** Send a normal call and wait for its result (or reject when the connection closes first). */
    call(id: number, method: string, payload: unknown): Promise<Result> {
      return new Promise((resolve, reject) => {
        waiters.set(id, (r) => {
          waiters.delete(id);
          resolve(r);
        });
        onClose.push(() => reject(new Error(`connection closed before result ${id}`)));
        ws.send(JSON.stringify({ type: 'call', id, method, payload }));
      });
    },
    waitClose(): Promise<{ code: number; reason: string }> {
      return new Promise((resolve) => {
        if (closed) resolve(closed);
        else onClose.push(() => resolve(closed!));
      });
    },
  };
}

describe('browser-mode WebSocket: hostile frames', () => {
  let core: Core;
  let server: RunningServer;
  let glass: MediaRef;
  let observer: WebSocket;
  let observed: ReturnType<typeof track>;
  const demoEvents: DemoEvent[] = [];
  let runId = '';

  beforeAll(async () => {
    const workspace = tempWorkspace('loupe-wsfuzz-');
    await writeRecordedRun(workspace);
    core = await createCore({ workspace, transport: 'browser' });
    server = await startServer({ core, rendererDir: workspace });
    observer = await connect(server);
    observed = track(observer);
    observer.on('message', (d) => {
      const m = JSON.parse(String(d)) as WireMessage;
      if (m.type === 'event' && m.event === 'demo:event') demoEvents.push(m.payload as DemoEvent);
    });
    const imported = await observed.call(1, 'demo:import', { paths: [GLASS] });
    if (!imported.ok) throw new Error(imported.error.message);
    glass = (imported.result as { media: MediaRef[] }).media[0]!;
    // A run in flight for the whole suite: a replay paused before its first tool call.
    const started = await observed.call(2, 'demo:run', { media: [glass], question: GLASS_QUESTION, engine: { kind: 'replay', runId: RECORDED_RUN, qid: RECORDED_QID }, stepMode: true });
    expect(started.ok).toBe(true);
    runId = (started as { result: { runId: string } }).result.runId;
    await until(() => demoEvents.some((e) => e.runId === runId && e.type === 'paused'), 20_000);
  });
  afterAll(async () => {
    observer?.close();
    await server?.close();
    await core?.dispose();
  });

  it('answers the JSON text `null` with an error to that client, and keeps the connection', async () => {
    const ws = await connect(server);
    const t = track(ws);
    ws.send('null');
    ws.send('[1,2]');
    ws.send('{"type":"call","id":"x","method":7}');
    ws.send('{"type":"call","id":5,"method":"app:info","payload":null}');
    const ok = await t.call(6, 'app:info', {});
    expect(ok.ok).toBe(true);
    const anon = t.results.get(-1) ?? [];
    expect(anon).toHaveLength(3);
    for (const r of anon) expect(r).toMatchObject({ ok: false, error: { code: 'invalid_payload' } });
    expect(anon.map((r) => (r.ok ? '' : r.error.message)).join('\n')).toMatch(/id/);
    // payload null is the same as no payload: app:info takes none.
    expect(t.results.get(5)?.[0]?.ok).toBe(true);
    ws.close();
  });

  it('closes only the sender of a frame over the size limit (1009), and the server stays up', async () => {
    const ws = await connect(server);
    const t = track(ws);
    ws.send(Buffer.alloc(WS_MAX_MESSAGE_BYTES + 1, 0x61), { binary: false });
    expect((await t.waitClose()).code).toBe(1009);
    const again = track(await connect(server));
    expect((await again.call(1, 'app:info', {})).ok).toBe(true);
    expect((await observed.call(1001, 'app:info', {})).ok).toBe(true);
  });

  it('answers a text frame of invalid UTF-8 and a binary frame with an error, and keeps the connection', async () => {
    const ws = await connect(server);
    const t = track(ws);
    ws.send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]), { binary: false });
    ws.send(Buffer.from(JSON.stringify({ type: 'call', id: 3, method: 'app:info', payload: {} })), { binary: true });
    const ok = await t.call(4, 'app:info', {});
    expect(ok.ok).toBe(true);
    expect(t.closed).toBeNull();
    const errors = [...(t.results.get(-1) ?? []), ...(t.results.get(3) ?? [])].map((r) => (r.ok ? 'ok' : r.error.message));
    expect(errors).toHaveLength(2);
    expect(errors.join('\n')).toMatch(/UTF-8/);
    expect(errors.join('\n')).toMatch(/binary/);
    ws.close();
  });

  it('survives 10^4 random and mutated frames; then answers a normal call and the run in flight finishes', async () => {
    const methods = Object.keys(calls);
    const json = fc.jsonValue({ maxDepth: 3, depthSize: 'small' });
    const valid = fc.record({ type: fc.constant('call'), id: fc.integer({ min: 0, max: 1e6 }), method: fc.constantFrom(...methods), payload: fc.constant({}) });
    // Each frame: what to send, and whether it goes as a binary frame.
    const frame: fc.Arbitrary<{ data: string | Buffer; binary: boolean }> = fc.oneof(
      // random text, including lone surrogates (sent as replacement characters by the client)
      fc.string({ unit: 'binary', maxLength: 200 }).map((s) => ({ data: s, binary: false })),
      // valid JSON of any shape
      json.map((v) => ({ data: JSON.stringify(v) ?? 'null', binary: false })),
      // a valid call with one field replaced by random JSON, or real method names with random payloads
      fc.tuple(valid, fc.constantFrom('type', 'id', 'method', 'payload', 'extra'), json).map(([v, k, x]) => ({ data: JSON.stringify({ ...v, [k]: x }), binary: false })),
      // a valid call cut short or with bytes flipped
      fc.tuple(valid, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([v, at, byte]) => {
        const b = Buffer.from(JSON.stringify(v));
        const cut = at % (b.length + 1);
        return byte % 2 ? { data: b.subarray(0, cut).toString('latin1'), binary: false } : { data: Buffer.from(b.map((x, i) => (i === cut ? byte : x))), binary: false };
      }),
      // invalid UTF-8 in a text frame
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => ({ data: Buffer.concat([Buffer.from(a), Buffer.from([0xc3, 0x28, 0xff])]), binary: false })),
      // binary frames
      fc.uint8Array({ maxLength: 256 }).map((a) => ({ data: Buffer.from(a), binary: true })),
      valid.map((v) => ({ data: Buffer.from(JSON.stringify(v)), binary: true })),
    );
    const frames = fc.sample(frame, { numRuns: 10_000, seed: 2026 });
    // A few oversized frames among them: each closes its sender, so the fuzzer reconnects.
    const oversized = new Set([1234, 5678, 9012]);

    let ws = await connect(server);
    let t = track(ws);
    let seq = 2_000_000;
    let sent = 0;
    let closedForSize = 0;
    for (let i = 0; i < frames.length; i++) {
      if (oversized.has(i)) {
        ws.send(Buffer.alloc(WS_MAX_MESSAGE_BYTES + 1 + i, 0x7b), { binary: i % 2 === 0 });
        expect((await t.waitClose()).code).toBe(1009);
        closedForSize++;
        ws = await connect(server);
        t = track(ws);
      }
      const f = frames[i]!;
      ws.send(f.data, { binary: f.binary });
      sent++;
      // Every 500 frames: a normal call on the same connection must still be answered.
      if (i % 500 === 499) expect((await t.call(seq++, 'app:info', {})).ok).toBe(true);
    }
    expect(sent).toBe(10_000);
    expect(closedForSize).toBe(3);
    expect(t.closed).toBeNull();
    expect((await t.call(seq++, 'app:info', {})).ok).toBe(true);
    ws.close();

    // The observer's connection was never touched, and its paused run carries on to the recorded answer.
    expect(observed.closed).toBeNull();
    const info = await observed.call(3, 'app:info', {});
    expect(info.ok).toBe(true);
    const paused = demoEvents.find((e): e is Extract<DemoEvent, { type: 'paused' }> => e.runId === runId && e.type === 'paused')!;
    const cont = await observed.call(4, 'demo:continue', { runId, turnIndex: paused.proposal.turnIndex, action: 'run', keepStepping: false });
    expect(cont.ok).toBe(true);
    await expect.poll(() => demoEvents.some((e) => e.runId === runId && e.type === 'done'), { timeout: 30_000 }).toBe(true);
    const done = demoEvents.find((e): e is Extract<DemoEvent, { type: 'done' }> => e.runId === runId && e.type === 'done')!;
    expect(done.trajectory.stopReason).toBe('answer');
    expect(done.trajectory.finalText).toContain('\\boxed{green}');
  });
});

/**
 * The local engine worker: a worker_threads entry or a forked child process (both wired below); Electron's
 * utilityProcess can host the same `serveEngine` over `process.parentPort`. Owns one QwenVLRuntime; speaks
 * app/engines/local/protocol.
 */
import { parentPort } from 'node:worker_threads';
import type { WorkerEvent, WorkerRequest } from '../../app/engines/local/protocol';
import { EngineError } from '../../app/engines/errors';
import { QwenVLRuntime } from './qwenRuntime';

export interface Port {
  post(msg: WorkerEvent): void;
  onMessage(cb: (msg: WorkerRequest) => void): void;
}

/** Runs the engine protocol over any message port. */
export function serveEngine(port: Port): void {
  let rt: QwenVLRuntime | null = null;
  const cancelled = new Set<number>();
  const fail = (id: number, e: unknown) => {
    const kind = e instanceof EngineError ? e.kind : 'load';
    port.post({ type: 'error', id, kind, message: e instanceof Error ? e.message : String(e) });
  };
  port.onMessage((msg) => {
    switch (msg.type) {
      case 'load':
        void (async () => {
          try {
            if (rt) await rt.dispose();
            rt = null;
            rt = await QwenVLRuntime.load(msg.options);
            port.post({ type: 'loaded', id: msg.id, info: rt.info });
          } catch (e) {
            fail(msg.id, e);
          }
        })();
        return;
      case 'generate':
        void (async () => {
          try {
            if (!rt) throw new EngineError('load', 'no model loaded in the engine worker');
            const result = await rt.generate(msg.request, {
              onToken: (delta) => port.post({ type: 'token', id: msg.id, delta }),
              isCancelled: () => cancelled.has(msg.id),
            });
            port.post({ type: 'done', id: msg.id, result });
          } catch (e) {
            fail(msg.id, e);
          } finally {
            cancelled.delete(msg.id);
          }
        })();
        return;
      case 'cancel':
        cancelled.add(msg.id);
        return;
      case 'tokenize':
        try {
          if (!rt) throw new EngineError('load', 'no model loaded in the engine worker');
          port.post({ type: 'tokens', id: msg.id, ids: rt.tokenizer.encode(msg.text, { add_special_tokens: false }) });
        } catch (e) {
          fail(msg.id, e);
        }
        return;
      case 'attention':
        void (async () => {
          try {
            if (!rt) throw new EngineError('load', 'no model loaded in the engine worker');
            port.post({ type: 'attention', id: msg.id, result: await rt.attention(msg.request) });
          } catch (e) {
            fail(msg.id, e);
          }
        })();
        return;
      case 'dispose':
        void (async () => {
          try {
            if (rt) await rt.dispose();
          } finally {
            rt = null;
            port.post({ type: 'disposed', id: msg.id });
          }
        })();
        return;
    }
  });
}

if (parentPort) {
  const pp = parentPort;
  serveEngine({ post: (m) => pp.postMessage(m), onMessage: (cb) => pp.on('message', cb) });
} else if (process.send) {
  // forked child process (childProcessTransport): same protocol over the IPC channel; leave when the parent does
  const send = process.send.bind(process);
  serveEngine({ post: (m) => void send(m), onMessage: (cb) => process.on('message', (m) => cb(m as WorkerRequest)) });
  process.on('disconnect', () => process.exit(0));
}

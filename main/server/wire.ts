/**
 * The one way a WebSocket message from a browser-mode client becomes a contract call: size limit, text frames only,
 * strict UTF-8, JSON, and the call's shape. Every failure is a reply for that client; nothing here throws.
 */
import { z } from 'zod';
import type { ContractError, WireMessage } from '../../app/contract';

/** Largest message the server reads; a bigger frame closes that connection with 1009 (message too big). */
export const WS_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

const CallFrameSchema = z
  .object({
    type: z.literal('call'),
    id: z.number().int(),
    method: z.string().min(1).max(200),
    payload: z.unknown().optional(),
  })
  .strict();

export type CallFrame = Extract<WireMessage, { type: 'call' }>;

export type FrameVerdict = { ok: true; call: CallFrame } | { ok: false; id: number; error: ContractError };

// fatal: a malformed byte sequence is an error, not silently replaced (the client must know its frame was bad).
const utf8 = new TextDecoder('utf-8', { fatal: true });

const refuse = (id: number, message: string): FrameVerdict => ({ ok: false, id, error: { code: 'invalid_payload', message } });

/** Read one frame as `ws` delivers it (Buffer, Buffer[] or ArrayBuffer). */
export function parseCallFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): FrameVerdict {
  const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
  if (bytes.length > WS_MAX_MESSAGE_BYTES) return refuse(-1, `message is ${bytes.length} bytes; the limit is ${WS_MAX_MESSAGE_BYTES}`);
  if (isBinary) return refuse(-1, 'binary frames are not accepted: send each call as a JSON text frame');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return refuse(-1, 'message is not valid UTF-8');
  }
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return refuse(-1, 'message is not JSON');
  }
  const parsed = CallFrameSchema.safeParse(msg);
  if (!parsed.success) {
    // Echo the caller's id when it gave a usable one, so its pending call fails instead of hanging.
    const rawId = msg !== null && typeof msg === 'object' && !Array.isArray(msg) ? (msg as { id?: unknown }).id : undefined;
    const id = typeof rawId === 'number' && Number.isSafeInteger(rawId) ? rawId : -1;
    const first = parsed.error.issues[0];
    const where = first && first.path.length ? first.path.map(String).join('.') : '(root)';
    return refuse(id, `expected {type:"call", id, method, payload}: ${where}: ${first?.message ?? 'rejected'}`);
  }
  return { ok: true, call: { type: 'call', id: parsed.data.id, method: parsed.data.method, payload: parsed.data.payload } };
}

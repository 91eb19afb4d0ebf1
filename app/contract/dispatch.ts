/**
 * Validation and dispatch of contract calls, shared by every door. A bad payload becomes an
 * `invalid_payload` error reply naming the field; a throwing handler becomes `handler_error`.
 * Nothing here throws to the transport.
 */
import { calls, describeIssues, type CallName, type CallRes, type ContractError, type Calls } from './index';
import type { z } from 'zod';

export type Handlers = { [C in CallName]: (req: z.output<Calls[C]['req']>) => Promise<CallRes<C>> | CallRes<C> };

/** Handlers for one domain's call map (e.g. `DomainHandlers<typeof demoCalls>`). */
export type DomainHandlers<M extends Record<string, { req: z.ZodType; res: z.ZodType }>> = {
  [C in keyof M]: (req: z.output<M[C]['req']>) => Promise<z.output<M[C]['res']>> | z.output<M[C]['res']>;
};

export type Reply = { ok: true; result: unknown } | { ok: false; error: ContractError };

function isCallName(method: string): method is CallName {
  return Object.prototype.hasOwnProperty.call(calls, method);
}

export async function dispatch(handlers: Handlers, method: unknown, payload: unknown): Promise<Reply> {
  if (typeof method !== 'string' || !isCallName(method)) {
    return { ok: false, error: { code: 'unknown_method', message: `Unknown method ${JSON.stringify(method)}. Known: ${Object.keys(calls).join(', ')}` } };
  }
  const spec = calls[method];
  const parsed = spec.req.safeParse(payload ?? {});
  if (!parsed.success) {
    const issues = describeIssues(parsed.error.issues);
    const first = issues[0];
    return {
      ok: false,
      error: {
        code: 'invalid_payload',
        message: `Invalid payload for ${method}: ${first ? `${first.path}: ${first.message}` : 'rejected'}`,
        issues,
      },
    };
  }
  try {
    const handler = handlers[method] as (req: unknown) => Promise<unknown> | unknown;
    const result = await handler(parsed.data);
    return { ok: true, result };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, error: { code: 'handler_error', message: `${method} failed: ${message}` } };
  }
}

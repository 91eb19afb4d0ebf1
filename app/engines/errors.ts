/**
 * Errors engines raise. Each says what failed, where, and what to do; `kind` lets callers (the agent loop, the sweep
 * runner) decide between retrying, recording `engine_error`, and stopping.
 */
export type EngineErrorKind =
  | 'model_folder' // a model folder is missing files or inconsistent
  | 'load' // the runtime could not load the model
  | 'crash' // the worker process/thread died
  | 'timeout' // a request ran past its deadline
  | 'http' // an OpenAI-compatible server answered an error status
  | 'network' // connection refused/reset, stream dropped
  | 'bad_request' // the request itself is invalid (e.g. image count does not match placeholders)
  | 'cancelled'
  | 'disposed'
  | 'unavailable'; // the engine cannot do this at all (e.g. attention maps from an OpenAI-compatible server)

export class EngineError extends Error {
  readonly kind: EngineErrorKind;
  /** HTTP status, for `http` errors. */
  readonly status?: number;
  /** Whether the same request may succeed if tried again. */
  readonly retryable: boolean;
  constructor(kind: EngineErrorKind, message: string, opts: { status?: number; retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'EngineError';
    this.kind = kind;
    if (opts.status !== undefined) this.status = opts.status;
    this.retryable = opts.retryable ?? false;
  }
}

export function isEngineError(e: unknown): e is EngineError {
  return e instanceof EngineError;
}

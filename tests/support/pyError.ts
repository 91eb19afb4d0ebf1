import { asPyError } from '../../app/pycompat/repr';

/** The Python error `f` raises, as the reference would print it (null when it returns). */
export function pyFailure(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return asPyError(e);
  }
  return null;
}

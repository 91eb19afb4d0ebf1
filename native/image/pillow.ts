/** Find a Python interpreter with Pillow (for reference comparisons in tests and benchmarks). */
import { findPythonSync } from '../../app/workspace/python';

let found: string | null | undefined;

/** The Python that imports PIL (see app/workspace/python.ts for the rule); null if none. Looked up once. */
export function findPillowPython(): string | null {
  if (found === undefined) found = findPythonSync('PIL');
  return found;
}

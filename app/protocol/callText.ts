/**
 * Pulling the call out of the model text and reading it with Python semantics, shared by dialects.
 */
import { pyJsonLoads, toPlainJson } from '../pycompat/json';
import { asPyError, type PyValue } from '../pycompat/repr';
import { pyGetItem } from '../tools/pyops';

export const TOOL_START = '<tool_call>';
export const TOOL_END = '</tool_call>';

/** `text.split('<tool_call>')[-1].split('</tool_call>')[0]` (PR `parse_last_tool`). */
export function lastCallText(text: string): string {
  const i = text.lastIndexOf(TOOL_START);
  const after = i < 0 ? text : text.slice(i + TOOL_START.length);
  const j = after.indexOf(TOOL_END);
  return j < 0 ? after : after.slice(0, j);
}

/** `text.split('<tool_call>')[1].split('</tool_call>')[0]` (VT `parse_action`); null = IndexError. */
export function firstCallText(text: string): string | null {
  const i = text.indexOf(TOOL_START);
  if (i < 0) return null;
  const after = text.slice(i + TOOL_START.length);
  const j = after.indexOf(TOOL_END);
  return j < 0 ? after : after.slice(0, j);
}

export interface ReadCall {
  /** The parsed JSON, when `json.loads` succeeded. */
  value?: PyValue;
  name?: PyValue;
  arguments?: PyValue;
  /** Set when both keys were read (plain JSON). */
  parsed: { name: unknown; arguments: unknown } | null;
  error: { type: string; message: string } | null;
}

/**
 * `tool_params = json.loads(raw); tool_params['name']; tool_params['arguments']; operations[name]`,
 * stopping at the first Python exception (PR EM:2271-2276 order).
 */
export function readCall(raw: string, operations: readonly string[]): ReadCall {
  const out: ReadCall = { parsed: null, error: null };
  try {
    out.value = pyJsonLoads(raw);
    out.name = pyGetItem(out.value, 'name');
    out.arguments = pyGetItem(out.value, 'arguments');
    out.parsed = { name: toPlainJson(out.name), arguments: toPlainJson(out.arguments) };
    pyGetItem(new Map<string, PyValue>(operations.map((o) => [o, null])), out.name);
  } catch (e) {
    const err = asPyError(e);
    if (!err) throw e;
    out.error = err;
  }
  return out;
}

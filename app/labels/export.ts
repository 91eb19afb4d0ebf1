/**
 * Exports of label events and current labels as JSONL and CSV (RFC 4180: comma separated, CRLF line ends,
 * a field is quoted when it holds a comma, quote, CR, LF or leading/trailing space; quotes are doubled).
 */
import type { LabelEvent } from './events';
import { currentLabelRows, type LabelFold } from './fold';

export interface CsvOptions {
  /**
   * Prefix cells starting with = + - @ (or tab/CR) with a `'` so spreadsheets do not run them as
   * formulas (CSV injection). Off by default because it changes the data.
   */
  guardFormulas?: boolean;
  /** Line separator; RFC 4180 says CRLF. */
  eol?: string;
}

/** Quote one CSV field when needed. */
export function csvField(value: unknown, opts: CsvOptions = {}): string {
  let s = value === undefined || value === null ? '' : typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (opts.guardFormulas && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  if (/[",\r\n]/.test(s) || /^\s|\s$/.test(s)) return `"${s.replace(/"/g, '""')}"`;
  return s;
}

/** Rows of values → CSV text with a header line. */
export function toCsv(header: readonly string[], rows: Iterable<readonly unknown[]>, opts: CsvOptions = {}): string {
  const eol = opts.eol ?? '\r\n';
  const out = [header.map((h) => csvField(h, opts)).join(',')];
  for (const r of rows) out.push(r.map((v) => csvField(v, opts)).join(','));
  return out.join(eol) + eol;
}

/** Parse RFC 4180 CSV (accepts LF or CRLF). Throws on an unterminated quote, naming the line. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  let line = 1;
  let quoted = false;
  let fieldStartLine = 1;
  while (i < text.length) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      if (ch === '\n') line++;
      field += ch;
      i++;
      continue;
    }
    if (ch === '"' && field === '') {
      quoted = true;
      fieldStartLine = line;
      i++;
    } else if (ch === ',') {
      row.push(field);
      field = '';
      i++;
    } else if (ch === '\r' && text[i + 1] === '\n') {
      i++;
    } else if (ch === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      line++;
      i++;
    } else {
      field += ch;
      i++;
    }
  }
  if (quoted) throw new Error(`CSV: unterminated quoted field starting on line ${fieldStartLine}`);
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

export const EVENT_COLUMNS = ['who', 'at', 'run', 'qid', 'step', 'label', 'op', 'note'] as const;
export const CURRENT_COLUMNS = ['run', 'qid', 'step', 'annotator', 'label', 'at', 'note'] as const;

/** Events as JSONL, one per line, in the given order. */
export function eventsToJsonl(events: Iterable<LabelEvent>): string {
  let out = '';
  for (const e of events) out += JSON.stringify(e) + '\n';
  return out;
}

/** Events as CSV; `step` is empty for sample-level labels. */
export function eventsToCsv(events: Iterable<LabelEvent>, opts?: CsvOptions): string {
  const rows: unknown[][] = [];
  for (const e of events) rows.push([e.who, e.at, e.run, e.qid, e.step ?? '', e.label, e.op, e.note ?? '']);
  return toCsv(EVENT_COLUMNS, rows, opts);
}

/** The current labels (after the fold) as JSONL: one object per (unit, annotator, label). */
export function currentLabelsToJsonl(fold: LabelFold): string {
  return currentLabelRows(fold)
    .map((r) => JSON.stringify(r) + '\n')
    .join('');
}

/** The current labels as CSV. */
export function currentLabelsToCsv(fold: LabelFold, opts?: CsvOptions): string {
  return toCsv(
    CURRENT_COLUMNS,
    currentLabelRows(fold).map((r) => [r.run, r.qid, r.step ?? '', r.annotator, r.label, r.at, r.note ?? '']),
    opts,
  );
}

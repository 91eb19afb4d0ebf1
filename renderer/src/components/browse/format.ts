/** Small display helpers shared by the browse components. */

/** The one interval Loupe shows for an accuracy (the core computes it: app/sweeps/stats `wilson`). */
export const INTERVAL_NAME = '95 % Wilson score interval';
export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : `${(100 * x).toFixed(digits)} %`;
}

export function ci(lo: number | null, hi: number | null): string {
  return lo === null || hi === null ? '' : `[${(100 * lo).toFixed(1)}, ${(100 * hi).toFixed(1)}]`;
}

export function num(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(digits);
}

/**
 * A count with thousands separators ("50,000"). Not `toLocaleString`: its first call in a page sets up ICU's number
 * formatting (40–60 ms on a busy machine, measured in Chromium), and the Runs page's first render paid it before the
 * page could ask the core for anything.
 */
export function count(n: number): string {
  const s = String(Math.trunc(Math.abs(n)));
  let out = '';
  for (let i = s.length; i > 0; i -= 3) out = s.slice(Math.max(0, i - 3), i) + (out ? `,${out}` : '');
  return (n < 0 ? '-' : '') + out;
}

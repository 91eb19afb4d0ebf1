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

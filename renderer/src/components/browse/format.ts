/** Small display helpers shared by the browse components. */
export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : `${(100 * x).toFixed(digits)} %`;
}

export function ci(lo: number | null, hi: number | null): string {
  return lo === null || hi === null ? '' : `[${(100 * lo).toFixed(1)}, ${(100 * hi).toFixed(1)}]`;
}

export function num(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(digits);
}

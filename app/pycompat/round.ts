/**
 * Python rounding: `round(x)` on a float rounds half to even and returns an int; `int(x)` truncates
 * toward zero. `Math.round` rounds half up, so it is never used for reference geometry.
 */

/** Python `round(x)` for a finite float: nearest integer, exact .5 ties to the even neighbour. */
export function roundHalfEven(x: number): number {
  if (!Number.isFinite(x)) {
    throw new RangeError(
      Number.isNaN(x) ? 'cannot convert float NaN to integer' : 'cannot convert float infinity to integer',
    );
  }
  const f = Math.floor(x);
  // x - floor(x) is exact for doubles (the fraction needs no more bits than x has).
  const diff = x - f;
  let r: number;
  if (diff > 0.5) r = f + 1;
  else if (diff < 0.5) r = f;
  else r = f % 2 === 0 ? f : f + 1;
  return r === 0 ? 0 : r; // never -0
}

/** Python `int(x)` for a finite float: truncate toward zero. */
export function pyInt(x: number): number {
  if (!Number.isFinite(x)) {
    throw new RangeError(
      Number.isNaN(x) ? 'cannot convert float NaN to integer' : 'cannot convert float infinity to integer',
    );
  }
  const t = Math.trunc(x);
  return t === 0 ? 0 : t;
}

/** `math.floor(x)` / `math.ceil(x)` as ints (same as Math for finite doubles, without -0). */
export function pyFloor(x: number): number {
  const t = Math.floor(x);
  return t === 0 ? 0 : t;
}
export function pyCeil(x: number): number {
  const t = Math.ceil(x);
  return t === 0 ? 0 : t;
}

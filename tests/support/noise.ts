/** Deterministic RGB noise (an LCG's high bytes) for the resampler tests: every pixel differs, so any misplaced tap shows. */
export function noise(w: number, h: number, seed: number): Uint8Array {
  const out = new Uint8Array(w * h * 3);
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

/** Deterministic noise bytes (an LCG's high bytes) for image tests: every pixel differs, so any misplaced tap shows. */
export function noiseBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

/** `w`×`h` RGB noise. */
export function noise(w: number, h: number, seed: number): Uint8Array {
  return noiseBytes(w * h * 3, seed);
}

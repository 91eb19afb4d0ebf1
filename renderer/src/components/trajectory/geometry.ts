/** Pure helpers the trajectory viewer shares: the combined image list and the boxes on each image. */
import type { Box, MediaRef, Trajectory } from '../../../../app/contract';

/** Question media first, then every produced image in order: the loop's `targetIndex` indexes this list. */
export function combinedImages(t: Trajectory): MediaRef[] {
  const out = [...t.media];
  for (const turn of t.turns) for (const m of turn.call?.produced ?? []) out.push(m);
  return out;
}

export interface StepBox {
  /** Turn index of the call. */
  turn: number;
  /** 1-based step number (tool calls only). */
  step: number;
  box: Box;
  padded?: Box;
  edited: boolean;
}

/** Tool-call step numbers by turn index (1-based, calls only). */
export function stepNumbers(t: Trajectory): Map<number, number> {
  const out = new Map<number, number>();
  let n = 0;
  for (const turn of t.turns) if (turn.call) out.set(turn.index, ++n);
  return out;
}

/** Boxes drawn on the image at `imageIndex` of the combined list. */
export function boxesOn(t: Trajectory, imageIndex: number): StepBox[] {
  const steps = stepNumbers(t);
  const out: StepBox[] = [];
  for (const turn of t.turns) {
    const c = turn.call;
    if (!c || c.targetIndex !== imageIndex || !c.bboxNormalized) continue;
    out.push({ turn: turn.index, step: steps.get(turn.index) ?? 0, box: c.bboxNormalized, ...(c.bboxPadded ? { padded: c.bboxPadded } : {}), edited: !!c.edited });
  }
  return out;
}

/** The image a turn is about: its call's target, else the first question image. */
export function imageForTurn(t: Trajectory, turnIndex: number): number {
  const c = t.turns.find((x) => x.index === turnIndex)?.call;
  return c?.targetIndex ?? 0;
}

export function fmtBox(b: readonly number[] | undefined, digits = 3): string {
  if (!b) return '—';
  return `[${b.map((v) => (Number.isInteger(v) ? String(v) : v.toFixed(digits))).join(', ')}]`;
}

export function clamp01(v: number): number {
  return Math.max(0, Math.min(1, v));
}

/** Smallest edge of an edited box (normalized): keyboard shrinking stops here rather than flipping the box. */
export const MIN_EDGE = 0.005;

/**
 * Keyboard editing of step mode's box: arrows move it, Shift+arrows resize it (Right/Down grow the right/bottom
 * edge, Left/Up shrink it), by 1 % of the image, or 0.2 % with Alt. Always inside the image. Null for other keys.
 */
export function nudgeBox(b: Box, key: string, mods: { shift?: boolean; alt?: boolean } = {}): Box | null {
  const step = mods.alt ? 0.002 : 0.01;
  const d = ({ ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] } as Record<string, [number, number]>)[key];
  if (!d) return null;
  const [x1, y1, x2, y2] = b;
  if (mods.shift) {
    const nx2 = Math.max(x1 + MIN_EDGE, Math.min(1, x2 + d[0] * step));
    const ny2 = Math.max(y1 + MIN_EDGE, Math.min(1, y2 + d[1] * step));
    return [x1, y1, nx2, ny2];
  }
  const dx = Math.max(-x1, Math.min(1 - x2, d[0] * step));
  const dy = Math.max(-y1, Math.min(1 - y2, d[1] * step));
  return [x1 + dx, y1 + dy, x2 + dx, y2 + dy];
}

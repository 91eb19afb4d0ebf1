/** Trajectory export: a self-contained HTML page and an animation (drawn by an `AnimationRenderer` main wires). */
import type { StoryFrame } from './storyboard';

export * from './storyboard';
export * from './html';

export type AnimationFormat = 'webp' | 'gif';

/** Draws story frames into an animated image; implemented with sharp outside `app/`. */
export interface AnimationRenderer {
  render(frames: StoryFrame[], format: AnimationFormat, opts?: { width?: number }): Promise<{ bytes: Uint8Array; frames: number; width: number; height: number }>;
}
export * from './pairHtml';

/** Frame folders: the image files of a folder in natural (numeric-aware) order. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const FRAME_EXT = /\.(jpe?g|png|webp|bmp)$/i;
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/** Absolute paths of the image files in `dir`, naturally sorted; [] when `dir` is not a folder. */
export function listFrames(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir)
    .filter((n) => FRAME_EXT.test(n))
    .sort(collator.compare)
    .map((n) => path.join(dir, n));
}

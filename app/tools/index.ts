/**
 * Visual operations as pure functions over sizes (the loop executes the resulting plans on pixels
 * through `ImageOps`): smart_resize and presets, crop geometry, image-index resolution, select_frames.
 */
export * from './smartResize';
export * from './crop';
export * from './selection';
export type { ImageOps } from './imageOps';

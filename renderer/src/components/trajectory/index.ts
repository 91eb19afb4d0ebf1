/** The reusable trajectory viewer (Demo, Runs/Sample pages). Props API: see TrajectoryViewProps. */
export { TrajectoryView, type TrajectoryViewProps } from './TrajectoryView';
export { ImageViewer, type ImageViewerProps } from './ImageViewer';
export { StepCard } from './StepCard';
export { Lightbox } from './Lightbox';
export { combinedImages, boxesOn, stepNumbers, imageForTurn } from './geometry';

/** The package root; app/paths.ts owns every path of the layout (clone, `npm start`, packaged app). */
export { packageRoot as repoRoot } from '../../app/paths';

// Entry of the engine worker thread: registers tsx's loader in this thread (execArgv --import does not reach worker
// threads on Node 20), then loads the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');

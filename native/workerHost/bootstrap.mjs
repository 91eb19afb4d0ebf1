// Worker bootstrap: loads the typed entry module. Under tsx (dev, tests) a `.ts` entry is loaded
// through tsx's loader, which `execArgv` cannot pass to workers on Node 20; built `.js` loads directly.
import { workerData } from 'node:worker_threads';

const entry = workerData && workerData.__entry;
if (typeof entry !== 'string') throw new Error('worker bootstrap: workerData.__entry (a file URL) is missing');
if (entry.endsWith('.ts')) {
  const { tsImport } = await import('tsx/esm/api');
  await tsImport(entry, import.meta.url);
} else {
  await import(entry);
}

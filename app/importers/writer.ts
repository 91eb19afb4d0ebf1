/** Store an imported run in a workspace: media into `media/`, the manifest and samples through RunStore. */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Workspace } from '../workspace';
import type { ImportedRun, RunWriter } from './types';

export function workspaceWriter(root: string, opts: { runId?: string } = {}): RunWriter {
  return {
    async write(run: ImportedRun) {
      const ws = await new Workspace(root).init();
      for (const m of run.media) {
        const put = await ws.media.put(await fsp.readFile(m.path), path.extname(m.path).slice(1).toLowerCase().replace('jpeg', 'jpg') || 'bin');
        if (put.id !== m.ref.id) throw new Error(`media ${m.path}: stored as ${put.id}, expected ${m.ref.id} (file changed while importing?)`);
      }
      const handle = await ws.runs.createRun({ ...run.manifest, ...(opts.runId ? { id: opts.runId } : {}) });
      try {
        for (const s of run.samples) await handle.appendSample(s);
      } finally {
        await handle.close();
      }
      return { runId: handle.id, dir: handle.dir };
    },
  };
}

/** `loupe import` — bring Pixel Reasoner / verl-tool / DeepEyes / lmms-eval outputs into a workspace as a run. */
import type { Command } from 'commander';
import path from 'node:path';
import { IMPORT_FORMATS, formatIssue, type ImportIssue } from '../../../app/importers/types';

const SHOW_ISSUES = 30;

/** Issues to print: the first of each repeated message with a count, so 191 "no image" warnings read as one line. */
function issueLines(issues: ImportIssue[]): string[] {
  const groups = new Map<string, { first: ImportIssue; n: number }>();
  for (const i of issues) {
    const k = `${i.severity}\0${i.field ?? ''}\0${i.message}`;
    const g = groups.get(k);
    if (g) g.n++;
    else groups.set(k, { first: i, n: 1 });
  }
  return [...groups.values()].map(({ first, n }) => (n > 1 ? `${formatIssue(first)} (and ${n - 1} more like it)` : formatIssue(first)));
}

export function register(program: Command): void {
  program
    .command('import')
    .description('Import eval results or rollouts from other tools into a Loupe run')
    .requiredOption('--from <format>', `source format: ${IMPORT_FORMATS.join(' | ')}`)
    .argument('<path>', 'file or folder to import (Pixel Reasoner: the checkpoint or its logs/ folder)')
    .option('--workspace <dir>', 'workspace folder (default: $LOUPE_WORKSPACE or the user data dir)')
    .option('--run <name>', 'run name (part of the run id)')
    .option('--model <id>', 'model id to record when the source does not name one (DeepEyes: which model of a folder holding several)')
    .option('--iter <n>', 'Pixel Reasoner: eval iteration to import (default: the latest)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`--iter must be a non-negative integer, got "${v}"`);
      return n;
    })
    .option('--images <dir>', 'folder with the benchmark images, found by the file names the records give (for outputs that strip their images)')
    .option('--dry-run', 'read and report, write nothing')
    .action(async (input: string, o: { from: string; workspace?: string; run?: string; model?: string; iter?: number; images?: string; dryRun?: boolean }) => {
      const [{ attachFolder, IMAGE_MISSING, ImageFolder, importRun, isImportFormat, missingImages, workspaceWriter }, { defaultWorkspaceDir, Workspace }, { imageOpsFor }] = await Promise.all([
        import('../../../app/importers'),
        import('../../../app/workspace'),
        import('../../core/wiring'),
      ]);
      if (!isImportFormat(o.from)) throw new Error(`--from must be one of ${IMPORT_FORMATS.join(', ')}, got "${o.from}"`);
      // Scan the image folder first: a wrong path should fail before anything is read or written.
      const folder = o.images ? await ImageFolder.scan(path.resolve(o.images)) : null;
      const run = await importRun(o.from, path.resolve(input), { name: o.run, model: o.model, iter: o.iter });
      const ws = o.dryRun ? null : await new Workspace(path.resolve(o.workspace ?? defaultWorkspaceDir())).init();
      let attached = 0;
      if (folder && ws && run.samples.length > 0) {
        const ops = await imageOpsFor(ws.media);
        try {
          attached = (await attachFolder(run.samples, folder, ops)).attached;
        } finally {
          await ops.close?.();
        }
      }
      // Samples still without their images: a warning each (the sample view says the same).
      const hint = folder ? `${IMAGE_MISSING} (not found under ${o.images})` : `${IMAGE_MISSING} (--images DIR)`;
      for (const m of missingImages(run.samples)) {
        const at = m.source?.lastIndexOf(':') ?? -1;
        const line = at > 0 ? Number(m.source!.slice(at + 1)) : NaN;
        run.issues.push({ severity: 'warning', file: at > 0 ? m.source!.slice(0, at) : (m.source ?? input), ...(Number.isInteger(line) ? { line } : {}), field: 'image', message: hint });
      }
      const errors = run.issues.filter((i) => i.severity === 'error');
      const lines = issueLines(run.issues);
      for (const l of lines.slice(0, SHOW_ISSUES)) process.stderr.write(`${l}\n`);
      if (lines.length > SHOW_ISSUES) process.stderr.write(`… and ${lines.length - SHOW_ISSUES} more issue(s)\n`);
      const s = run.stats;
      const summary = `read ${s.records} record(s) from ${s.files} file(s): ${s.imported} imported, ${s.skipped} skipped (${errors.length} error(s), ${run.issues.length - errors.length} warning(s))`;
      if (run.samples.length === 0) throw new Error(`${summary}; nothing to import`);
      if (!ws) {
        process.stdout.write(`${summary}\n(dry run: nothing written)\n`);
        return;
      }
      // Run names are unique: a second import of the same files gets "name (2)".
      if (typeof run.manifest.name === 'string') run.manifest.name = await ws.runs.uniqueName(run.manifest.name);
      const res = await workspaceWriter(ws.root).write(run);
      const correct = run.samples.filter((x) => x.correct).length;
      const images = folder ? `, images attached to ${attached} of ${run.samples.length} sample(s)` : '';
      process.stdout.write(
        `${summary}\nrun ${res.runId} "${run.manifest.name ?? ''}": ${run.samples.length} samples, ${correct} correct (${((100 * correct) / run.samples.length).toFixed(1)}%), ${run.media.length} media file(s)${images}\n  ${res.dir}\n`,
      );
    });
}

/** `loupe import` — bring Pixel Reasoner / verl-tool / DeepEyes / lmms-eval outputs into a workspace as a run. */
import type { Command } from 'commander';
import path from 'node:path';
import { IMPORT_FORMATS, formatIssue, importRun, isImportFormat, workspaceWriter } from '../../../app/importers';
import { defaultWorkspaceDir } from '../../../app/workspace';

const SHOW_ISSUES = 30;

export function register(program: Command): void {
  program
    .command('import')
    .description('Import eval results or rollouts from other tools into a Loupe run')
    .requiredOption('--from <format>', `source format: ${IMPORT_FORMATS.join(' | ')}`)
    .argument('<path>', 'file or folder to import (Pixel Reasoner: the checkpoint or its logs/ folder)')
    .option('--workspace <dir>', 'workspace folder (default: $LOUPE_WORKSPACE or the user data dir)')
    .option('--run <name>', 'run name (part of the run id)')
    .option('--model <id>', 'model id to record when the source does not name one')
    .option('--iter <n>', 'Pixel Reasoner: eval iteration to import (default: the latest)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`--iter must be a non-negative integer, got "${v}"`);
      return n;
    })
    .option('--dry-run', 'read and report, write nothing')
    .action(async (input: string, o: { from: string; workspace?: string; run?: string; model?: string; iter?: number; dryRun?: boolean }) => {
      if (!isImportFormat(o.from)) throw new Error(`--from must be one of ${IMPORT_FORMATS.join(', ')}, got "${o.from}"`);
      const run = await importRun(o.from, path.resolve(input), { name: o.run, model: o.model, iter: o.iter });
      const errors = run.issues.filter((i) => i.severity === 'error');
      for (const i of run.issues.slice(0, SHOW_ISSUES)) process.stderr.write(`${formatIssue(i)}\n`);
      if (run.issues.length > SHOW_ISSUES) process.stderr.write(`… and ${run.issues.length - SHOW_ISSUES} more issue(s)\n`);
      const s = run.stats;
      const summary = `read ${s.records} record(s) from ${s.files} file(s): ${s.imported} imported, ${s.skipped} skipped (${errors.length} error(s), ${run.issues.length - errors.length} warning(s))`;
      if (run.samples.length === 0) throw new Error(`${summary}; nothing to import`);
      if (o.dryRun) {
        process.stdout.write(`${summary}\n(dry run: nothing written)\n`);
        return;
      }
      const ws = path.resolve(o.workspace ?? defaultWorkspaceDir());
      const res = await workspaceWriter(ws).write(run);
      const correct = run.samples.filter((x) => x.correct).length;
      process.stdout.write(
        `${summary}\nrun ${res.runId}: ${run.samples.length} samples, ${correct} correct (${((100 * correct) / run.samples.length).toFixed(1)}%), ${run.media.length} media file(s)\n  ${res.dir}\n`,
      );
    });
}

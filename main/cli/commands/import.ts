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

function printIssues(issues: ImportIssue[]): void {
  const lines = issueLines(issues);
  for (const l of lines.slice(0, SHOW_ISSUES)) process.stderr.write(`${l}\n`);
  if (lines.length > SHOW_ISSUES) process.stderr.write(`… and ${lines.length - SHOW_ISSUES} more issue(s)\n`);
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
      const [{ importToWorkspace, isImportFormat }, { defaultWorkspaceDir, Workspace }, { imageOpsFor }] = await Promise.all([
        import('../../../app/importers'),
        import('../../../app/workspace'),
        import('../../core/wiring'),
      ]);
      if (!isImportFormat(o.from)) throw new Error(`--from must be one of ${IMPORT_FORMATS.join(', ')}, got "${o.from}"`);
      const ws = o.dryRun ? null : await new Workspace(path.resolve(o.workspace ?? defaultWorkspaceDir())).init();
      const r = await importToWorkspace(ws, { format: o.from, input: path.resolve(input), name: o.run, model: o.model, iter: o.iter, images: o.images ? path.resolve(o.images) : undefined, dryRun: o.dryRun, onIssues: printIssues }, () => imageOpsFor(ws!.media));
      const { run, summary, attached, written: res } = r;
      if (!res) {
        process.stdout.write(`${summary}\n(dry run: nothing written)\n`);
        return;
      }
      const folder = o.images;
      const correct = run.samples.filter((x) => x.correct).length;
      const images = folder ? `, images attached to ${attached} of ${run.samples.length} sample(s)` : '';
      process.stdout.write(
        `${summary}\nrun ${res.runId} "${run.manifest.name ?? ''}": ${run.samples.length} samples, ${correct} correct (${((100 * correct) / run.samples.length).toFixed(1)}%), ${run.media.length} media file(s)${images}\n  ${res.dir}\n`,
      );
    });
}

/**
 * `loupe report RUN…` — the results table of runs in a workspace: per bench/category accuracy with bootstrap
 * CIs, RaPR, calls per sample, tool error rate and stop reasons. A run name merges its shards
 * (`NAME.shard-<i>of<n>`); a full shard id reports that shard alone. `--json` prints one JSON object per run,
 * one per line (the last line is the last run).
 */
import type { Command } from 'commander';
import path from 'node:path';

export function register(program: Command): void {
  program
    .command('report')
    .description('print the results of runs (shards of one run merge)')
    .argument('<runs...>', 'run names or ids')
    .option('--workspace <dir>', 'workspace folder (default $LOUPE_WORKSPACE or the user data dir)')
    .option('--json', 'one JSON object per run, one per line')
    .action(async (refs: string[], o: { workspace?: string; json?: boolean }) => {
      const [{ Workspace, defaultWorkspaceDir }, { loadRunGroup, summarize, formatSummary }] = await Promise.all([
        import('../../../app/workspace'),
        import('../../../app/sweeps/runner/summary'),
      ]);
      const ws = new Workspace(o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir());
      const texts: string[] = [];
      for (const ref of refs) {
        const g = await loadRunGroup(ws.runs, ref);
        const s = summarize(g);
        const issues = g.runs.reduce((a, r) => a + r.issues, 0);
        if (issues) process.stderr.write(`warning: ${ref}: ${issues} unreadable line(s) in samples.jsonl were skipped\n`);
        if (g.superseded) process.stderr.write(`note: ${ref}: ${g.superseded} record(s) repeated a qid; the last one counts\n`);
        texts.push(o.json ? JSON.stringify(s) : formatSummary(s));
      }
      process.stdout.write(texts.join(o.json ? '\n' : '\n\n') + '\n');
    });
}

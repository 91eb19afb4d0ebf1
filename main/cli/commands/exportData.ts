/** `loupe export-data --run ID … --out DIR` — training data from runs (the Runs page's "Export training data"). */
import path from 'node:path';
import type { Command } from 'commander';

export function register(program: Command): void {
  program
    .command('export-data')
    .description('training data from runs: RL rows for verl, Pixel Reasoner and ms-swift; SFT traces from the correct trajectories')
    .requiredOption('--run <id>', 'run id (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .requiredOption('--out <dir>', 'output folder (JSONL files)')
    .option('--workspace <dir>', 'workspace (default: the app\'s)')
    .action(async (o: { run: string[]; out: string; workspace?: string }) => {
      const [{ Workspace, defaultWorkspaceDir }, { exportRunData }] = await Promise.all([import('../../../app/workspace'), import('../../../app/training/exportRuns')]);
      const ws = new Workspace(o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir());
      try {
        const r = await exportRunData(ws.runs, ws.media, o.run, path.resolve(o.out));
        for (const f of r.files) process.stdout.write(`${path.join(r.dir, f.name)}\t${f.rows}\n`);
        process.stderr.write(`left out: ${r.skipped.rl.length} samples from the RL rows, ${r.skipped.sft.length} from the SFT traces (not correct, no final answer or a tool error)\n`);
      } catch (e) {
        process.stderr.write(`loupe export-data: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exitCode = 1;
      }
    });
}

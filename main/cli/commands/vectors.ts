/**
 * `loupe vectors FILE.json [--suite S] [--verbose]` — run golden vectors through the protocol and scorer
 * suites; prints differences and, last, `N passed, M failed[, K skipped]`. Exit code 0 only when none failed.
 */
import type { Command } from 'commander';

export function register(program: Command): void {
  program
    .command('vectors')
    .description('run golden vectors (smart_resize, crop, select_frames, toolcall and the scorer suites) and report exact differences')
    .argument('<file>', 'a vectors JSON file: an array of {suite, name, input, expected}')
    .option('--suite <suite>', 'only run cases of this suite')
    .option('--verbose', 'print every failure in full and every passing case')
    .action(async (file: string, opts: { suite?: string; verbose?: boolean }) => {
      const { formatReport, loadVectors, runVectors } = await import('../../../app/vectors/runner');
      const cases = loadVectors(file);
      const summary = runVectors(cases, { suite: opts.suite });
      if (opts.suite && summary.results.length === 0) {
        process.stderr.write(`no case of suite "${opts.suite}" in ${file}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(formatReport(summary, { verbose: opts.verbose }) + '\n');
      process.exitCode = summary.failed > 0 ? 1 : 0;
    });
}

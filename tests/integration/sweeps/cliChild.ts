/**
 * A `loupe` with only this area's commands registered (`eval`, `report`, `run`) — the same `register`/action code as
 * `npx loupe …`, without loading every other command's modules: the tests start it dozens of times (20+ kills),
 * and a broken command elsewhere cannot hide a result here.
 */
import { Command } from 'commander';
import { register as evalCmd } from '../../../main/cli/commands/eval';
import { register as report } from '../../../main/cli/commands/report';
import { register as run } from '../../../main/cli/commands/run';

const program = new Command().name('loupe');
for (const r of [evalCmd, report, run]) r(program);
program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`loupe: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

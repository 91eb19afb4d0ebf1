/**
 * `loupe` — the headless door. Each command lives in `commands/<name>.ts` and exports `register`.
 */
import { Command } from 'commander';
import { APP_VERSION } from '../../app/version';
import { commands } from './commands';

export async function main(argv: string[]): Promise<void> {
  const program = new Command();
  program
    .name('loupe')
    .description('Loupe — a workbench for pixel-space reasoning vision-language models')
    .version(APP_VERSION, '-v, --version')
    .showHelpAfterError();
  for (const register of commands) register(program);
  await program.parseAsync(argv);
}

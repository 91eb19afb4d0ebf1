/** The list of CLI commands; each module adds one or more subcommands. Add a line per command file. */
import type { Command } from 'commander';
import { register as serve } from './serve';
import { register as vectors } from './vectors';
import { register as synth } from './synth';

export const commands: Array<(program: Command) => void> = [serve, vectors, synth];

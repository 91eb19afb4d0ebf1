/** The list of CLI commands; each module adds one or more subcommands. Add a line per command file. */
import type { Command } from 'commander';
import { register as serve } from './serve';
import { register as vectors } from './vectors';
import { register as synth } from './synth';
import { register as serveModel } from './serveModel';
import { register as convert } from './convert';
import { register as train } from './train';
import { register as importCmd } from './import';
import { register as evalCmd } from './eval';
import { register as report } from './report';
import { register as runCmd } from './run';
import { register as runsCmd } from './runs';
import { register as rescore } from './rescore';
import { register as exportData } from './exportData';
import { register as attention } from './attention';

export const commands: Array<(program: Command) => void> = [serve, vectors, synth, serveModel, convert, train, importCmd, evalCmd, report, runCmd, runsCmd, rescore, exportData, attention];

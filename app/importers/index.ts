/** Importers: other tools' eval/rollout outputs → Loupe runs. */
import { isDir, isFile } from './common';
import { importDeepEyes } from './deepeyes';
import { importLmmsEval } from './lmmsEval';
import { importPixelReasoner } from './pixelReasoner';
import { importPyVision } from './pyvision';
import { importVerlTool } from './verlTool';
import { detectFormat } from './detect';
import { IMPORT_FORMATS, ImportError, type ImportedRun, type ImportFormat, type ImportIssue, type ImportOptions } from './types';

export * from './types';
export { importDeepEyes, importLmmsEval, importPixelReasoner, importPyVision, importVerlTool };
export { workspaceWriter } from './writer';
export { detectFormat } from './detect';
export * from './attach';
export { importToWorkspace, type WorkspaceImportOptions, type WorkspaceImportResult } from './toWorkspace';

const IMPORTERS: Record<ImportFormat, (input: string, opts?: ImportOptions) => Promise<ImportedRun>> = {
  'pixel-reasoner': importPixelReasoner,
  'verl-tool': importVerlTool,
  deepeyes: importDeepEyes,
  'lmms-eval': importLmmsEval,
  pyvision: importPyVision,
};

export function isImportFormat(v: string): v is ImportFormat {
  return (IMPORT_FORMATS as readonly string[]).includes(v);
}

function issueOrder(a: ImportIssue, b: ImportIssue): number {
  return a.file.localeCompare(b.file) || (a.line ?? 0) - (b.line ?? 0) || (a.field ?? '').localeCompare(b.field ?? '');
}

/** Read `input` as `format`. Issues come sorted by file and line. */
export async function importRun(format: string, input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  if (!isImportFormat(format)) throw new ImportError(`unknown import format "${format}" (known: ${IMPORT_FORMATS.join(', ')})`);
  if (!(await isFile(input)) && !(await isDir(input))) throw new ImportError(`${input}: no such file or folder`);
  let run: ImportedRun;
  try {
    run = await IMPORTERS[format](input, opts);
  } catch (e) {
    if (!(e instanceof ImportError)) throw e;
    throw await withSuggestion(e.message, format, input);
  }
  // Most records rejected: more likely the wrong --from than a broken file. Say which format it looks like
  // rather than listing a missing field per record.
  if (run.stats.imported < run.stats.records / 2) {
    const guess = await detectFormat(input);
    if (guess && guess !== format) {
      throw new ImportError(`${input}: ${run.stats.records - run.stats.imported} of ${run.stats.records} record(s) are not ${format} records; this looks like ${guess} output: try --from ${guess}`);
    }
  }
  run.issues.sort(issueOrder);
  return run;
}

async function withSuggestion(message: string, format: ImportFormat, input: string): Promise<ImportError> {
  const guess = await detectFormat(input);
  return new ImportError(guess && guess !== format ? `${message}; this looks like ${guess} output: try --from ${guess}` : message);
}

/** Importers: other tools' eval/rollout outputs → Loupe runs. */
import { isDir, isFile } from './common';
import { importDeepEyes } from './deepeyes';
import { importLmmsEval } from './lmmsEval';
import { importPixelReasoner } from './pixelReasoner';
import { importVerlTool } from './verlTool';
import { IMPORT_FORMATS, ImportError, type ImportedRun, type ImportFormat, type ImportIssue, type ImportOptions } from './types';

export * from './types';
export { importDeepEyes, importLmmsEval, importPixelReasoner, importVerlTool };
export { workspaceWriter } from './writer';

const IMPORTERS: Record<ImportFormat, (input: string, opts?: ImportOptions) => Promise<ImportedRun>> = {
  'pixel-reasoner': importPixelReasoner,
  'verl-tool': importVerlTool,
  deepeyes: importDeepEyes,
  'lmms-eval': importLmmsEval,
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
  const run = await IMPORTERS[format](input, opts);
  run.issues.sort(issueOrder);
  return run;
}

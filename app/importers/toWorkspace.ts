/**
 * One import into a workspace, shared by `loupe import` and the Runs page's Import dialog: read the files as
 * `format`, attach images from a folder, warn for samples still without one, give the run a unique name, write it.
 */
import type { Workspace } from '../workspace';
import type { ImageOps } from '../tools/imageOps';
import { attachFolder, IMAGE_MISSING, ImageFolder, missingImages } from './attach';
import { importRun } from './index';
import type { ImportedRun, ImportIssue } from './types';
import { workspaceWriter } from './writer';

export interface WorkspaceImportOptions {
  format: string;
  input: string;
  name?: string | undefined;
  model?: string | undefined;
  iter?: number | undefined;
  /** A folder with the benchmark's images, found by the file names the records give. */
  images?: string | undefined;
  /** Read and report, write nothing (`ws` may then be null). */
  dryRun?: boolean | undefined;
  /** Called with the issues before anything is written, and before "nothing to import" is thrown. */
  onIssues?: (issues: ImportIssue[]) => void;
}

export interface WorkspaceImportResult {
  run: ImportedRun;
  /** Issues of the read plus one warning per sample still without its image. */
  issues: ImportIssue[];
  /** One line: records read, imported, skipped, errors and warnings. */
  summary: string;
  attached: number;
  written: { runId: string; dir: string; name: string } | null;
}

/** `imageOpsFor` gives image ops for attaching images; they are closed afterwards unless `shared` (the core's worker). */
export async function importToWorkspace(ws: Workspace | null, o: WorkspaceImportOptions, imageOpsFor: () => Promise<ImageOps & { close?: () => Promise<void> }>, shared = false): Promise<WorkspaceImportResult> {
  // Scan the image folder first: a wrong path should fail before anything is read or written.
  const folder = o.images ? await ImageFolder.scan(o.images) : null;
  const run = await importRun(o.format, o.input, { name: o.name, model: o.model, iter: o.iter });
  const write = !o.dryRun && ws !== null;
  let attached = 0;
  if (folder && write && run.samples.length > 0) {
    const ops = await imageOpsFor();
    try {
      attached = (await attachFolder(run.samples, folder, ops)).attached;
    } finally {
      if (!shared) await ops.close?.();
    }
  }
  const hint = folder ? `${IMAGE_MISSING} (not found under ${o.images})` : `${IMAGE_MISSING} (--images DIR)`;
  const issues = [...run.issues];
  for (const m of missingImages(run.samples)) {
    const at = m.source?.lastIndexOf(':') ?? -1;
    const line = at > 0 ? Number(m.source!.slice(at + 1)) : NaN;
    issues.push({ severity: 'warning', file: at > 0 ? m.source!.slice(0, at) : (m.source ?? o.input), ...(Number.isInteger(line) ? { line } : {}), field: 'image', message: hint });
  }
  const errors = issues.filter((i) => i.severity === 'error').length;
  const s = run.stats;
  const summary = `read ${s.records} record(s) from ${s.files} file(s): ${s.imported} imported, ${s.skipped} skipped (${errors} error(s), ${issues.length - errors} warning(s))`;
  o.onIssues?.(issues);
  if (run.samples.length === 0) throw new Error(`${summary}; nothing to import`);
  if (!write) return { run, issues, summary, attached, written: null };
  // Run names are unique: a second import of the same files gets "name (2)".
  if (typeof run.manifest.name === 'string') run.manifest.name = await ws.runs.uniqueName(run.manifest.name);
  const res = await workspaceWriter(ws.root).write(run);
  return { run, issues, summary, attached, written: { runId: res.runId, dir: res.dir, name: typeof run.manifest.name === 'string' ? run.manifest.name : res.runId } };
}

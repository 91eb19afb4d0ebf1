/** `settings.json`: user settings as one JSON object, written atomically. */
import { promises as fsp } from 'node:fs';
import { z } from 'zod';
import { writeFileAtomic } from './fsutil';

export const WorkspaceSettingsSchema = z.record(z.string(), z.unknown());
export type WorkspaceSettings = z.infer<typeof WorkspaceSettingsSchema>;

/** Read settings; a missing file is `{}`; a broken one is an error naming the file. */
export async function readSettings(file: string): Promise<WorkspaceSettings> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid JSON (${(err as Error).message}); fix or delete it`);
  }
  const r = WorkspaceSettingsSchema.safeParse(json);
  if (!r.success) throw new Error(`${file} must hold a JSON object`);
  return r.data;
}

export async function writeSettings(file: string, settings: WorkspaceSettings): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(WorkspaceSettingsSchema.parse(settings), null, 2) + '\n');
}

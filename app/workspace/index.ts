/** The workspace: where runs, media, labels, models and settings live on disk (DESIGN §4). */
import { promises as fsp } from 'node:fs';
import { MediaStore } from './mediaStore';
import { defaultWorkspaceDir, workspaceLayout, type WorkspaceLayout } from './paths';
import { RunStore } from './runStore';
import { readSettings, writeSettings, type WorkspaceSettings } from './settings';

export * from './paths';
export * from './contain';
export * from './jsonl';
export * from './mediaStore';
export * from './runStore';
export * from './settings';

export class Workspace {
  readonly layout: WorkspaceLayout;
  readonly runs: RunStore;
  readonly media: MediaStore;

  constructor(root: string = defaultWorkspaceDir()) {
    this.layout = workspaceLayout(root);
    this.runs = new RunStore(this.layout.runsDir);
    this.media = new MediaStore(this.layout.mediaDir);
  }

  get root(): string {
    return this.layout.root;
  }

  /** Create the folders (idempotent). */
  async init(): Promise<this> {
    const l = this.layout;
    for (const d of [l.root, l.runsDir, l.mediaDir, l.labelsDir, l.modelsDir]) await fsp.mkdir(d, { recursive: true });
    return this;
  }

  readSettings(): Promise<WorkspaceSettings> {
    return readSettings(this.layout.settingsPath);
  }

  writeSettings(s: WorkspaceSettings): Promise<void> {
    return writeSettings(this.layout.settingsPath, s);
  }
}

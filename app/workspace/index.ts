/** The workspace: where runs, media, labels, models and settings live on disk (DESIGN §4). */
import { promises as fsp } from 'node:fs';
import { MediaStore } from './mediaStore';
import { defaultWorkspaceDir, workspaceLayout, type WorkspaceLayout } from './paths';
import { RunStore } from './runStore';
import type { RunManifest } from '../contract/trajectory';
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
  /** The Demo's scratch space: its questions wait here, out of the run list, until saved (`saveDemoRun`) or discarded. */
  readonly demo: RunStore;
  readonly media: MediaStore;

  constructor(root: string = defaultWorkspaceDir()) {
    this.layout = workspaceLayout(root);
    // Media writes are fsync'd in the background (group); each run store's background record sync waits for them
    // first, so no record is on disk before the media it names (DESIGN §4).
    this.media = new MediaStore(this.layout.mediaDir, { durability: 'group' });
    const beforeSync = () => this.media.durable();
    this.runs = new RunStore(this.layout.runsDir, { beforeSync });
    this.demo = new RunStore(this.layout.demoDir, { beforeSync });
  }

  get root(): string {
    return this.layout.root;
  }

  /** Create the folders (idempotent). */
  async init(): Promise<this> {
    const l = this.layout;
    for (const d of [l.root, l.runsDir, l.demoDir, l.mediaDir, l.labelsDir, l.modelsDir]) await fsp.mkdir(d, { recursive: true });
    return this;
  }

  /**
   * Keep a Demo question: move it from the scratch space into `runs/` (same id, folder moved whole, so nothing is
   * copied or lost), named `name` or its scratch name, made unique among the runs.
   */
  async saveDemoRun(id: string, name?: string): Promise<RunManifest> {
    const manifest = await this.demo.readManifest(id);
    if (await this.runs.hasRun(id)) throw new Error(`run ${id} is already in runs/; nothing to save`);
    const wanted = (name ?? manifest.name ?? id).trim() || id;
    const next: RunManifest = { ...manifest, name: await this.runs.uniqueName(wanted) };
    await this.demo.writeManifest(next);
    await this.demo.moveRunTo(id, this.runs);
    return next;
  }

  readSettings(): Promise<WorkspaceSettings> {
    return readSettings(this.layout.settingsPath);
  }

  writeSettings(s: WorkspaceSettings): Promise<void> {
    return writeSettings(this.layout.settingsPath, s);
  }
}

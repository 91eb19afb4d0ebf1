/**
 * The label service: the one owner of `labels/*.jsonl` and the taxonomy in a workspace. It loads every
 * annotator's events once, keeps the fold current as labels are added, toggled and undone, and hands out the key
 * map, exports and agreement. The core's labels:* handlers are a thin adapter over it.
 */
import type { LabelEvent } from './events';
import { agreementReport, type AgreementReport } from './agreement';
import { currentLabelsToCsv, currentLabelsToJsonl, eventsToCsv, eventsToJsonl, type CsvOptions } from './export';
import { LabelFolder, currentLabelRows, labelsBySample, parseUnitKey, unitKey, type CurrentLabel, type LabelFold } from './fold';
import { LabelStore, type LabelReadIssue } from './store';
import { loadTaxonomy, saveTaxonomy, type Taxonomy } from './taxonomy';
import { ACTION_DESCRIPTIONS, buildKeyMap, normalizeChord, validateKeyMap } from './keymap';

export interface LabelTarget {
  run: string;
  qid: string;
  /** Turn index, or null/undefined for the whole sample. */
  step?: number | null;
}

export class LabelService {
  readonly store: LabelStore;
  private folder = new LabelFolder();
  private events: LabelEvent[] = [];
  /** Per annotator: changes made through this service, with what the label looked like before. */
  private readonly undoStacks = new Map<string, Array<{ ev: LabelEvent; before: CurrentLabel | undefined }>>();
  /** Problems found while loading (malformed lines, torn tails), for the UI to show. */
  issues: Array<LabelReadIssue | { file: string; line: number; message: string }> = [];

  constructor(readonly workspaceDir: string) {
    this.store = new LabelStore(workspaceDir);
  }

  private loading: Promise<void> | null = null;
  private changes = 0;

  /** Load once (later calls wait for the same read). */
  ready(): Promise<void> {
    this.loading ??= this.load();
    return this.loading;
  }

  /** Bumped on every change: caches keyed on labels (the sample index's label column) compare it. */
  get version(): number {
    return this.changes;
  }

  /** (Re)read every annotator file and rebuild the fold. */
  async load(): Promise<void> {
    this.changes++;
    const all = await this.store.readAll();
    this.folder = new LabelFolder();
    this.events = [];
    this.issues = [];
    for (const r of all) {
      for (const ev of r.events) {
        this.folder.apply(ev);
        this.events.push(ev);
      }
      this.issues.push(...r.issues);
      if (r.tornTail) this.issues.push({ file: this.store.fileOf(r.annotator), line: r.tornTail.line, message: `torn last line (${r.tornTail.bytes} bytes) ignored; it is moved to ${r.annotator}.jsonl.torn on the next label` });
    }
  }

  taxonomy(): Promise<Taxonomy> {
    return loadTaxonomy(this.workspaceDir);
  }
  saveTaxonomy(t: Taxonomy): Promise<void> {
    return saveTaxonomy(this.workspaceDir, t);
  }

  get fold(): LabelFold {
    return this.folder.fold;
  }

  /** Every event loaded or appended, per annotator in file order. */
  allEvents(): readonly LabelEvent[] {
    return this.events;
  }

  /** Current labels on one unit, per annotator. */
  labelsOn(t: LabelTarget): Map<string, CurrentLabel[]> {
    return this.folder.fold.get(unitKey(t.run, t.qid, t.step)) ?? new Map();
  }

  /** Labels per sample (union over annotators and steps), for SampleIndex.applyLabels. */
  bySample(annotators?: readonly string[]): Map<string, string[]> {
    return labelsBySample(this.folder.fold, annotators);
  }

  private current(who: string, t: LabelTarget, label: string): CurrentLabel | undefined {
    const c = this.labelsOn(t).get(who)?.find((x) => x.label === label);
    return c ? { ...c } : undefined;
  }

  private async record(ev: Omit<LabelEvent, 'v' | 'at'> & { at?: string }, undoable = true): Promise<LabelEvent> {
    const before = this.current(ev.who, ev, ev.label);
    const written = await this.store.append(ev);
    this.folder.apply(written);
    this.events.push(written);
    this.changes++;
    if (undoable) {
      const st = this.undoStacks.get(written.who) ?? [];
      st.push({ ev: written, before });
      this.undoStacks.set(written.who, st);
    }
    return written;
  }

  add(who: string, t: LabelTarget, label: string, note?: string): Promise<LabelEvent> {
    return this.record({ who, run: t.run, qid: t.qid, step: t.step ?? null, label, op: 'add', ...(note !== undefined ? { note } : {}) });
  }

  remove(who: string, t: LabelTarget, label: string): Promise<LabelEvent> {
    return this.record({ who, run: t.run, qid: t.qid, step: t.step ?? null, label, op: 'remove' });
  }

  /** Add the label when absent, remove it when present (what a label key does). */
  toggle(who: string, t: LabelTarget, label: string): Promise<LabelEvent> {
    return this.folder.has(who, t.run, t.qid, t.step, label) ? this.remove(who, t, label) : this.add(who, t, label);
  }

  /** Remove every label `who` has on the unit. */
  async clear(who: string, t: LabelTarget): Promise<LabelEvent[]> {
    const list = [...(this.labelsOn(t).get(who) ?? [])];
    const out: LabelEvent[] = [];
    for (const c of list) out.push(await this.remove(who, t, c.label));
    return out;
  }

  /**
   * Undo `who`'s last change made through this service by appending the event that restores the label
   * as it was before (the log stays append-only): a removed label comes back with its note, an added one
   * goes, a changed note is restored. Returns that event, or undefined when there is nothing to undo.
   */
  async undo(who: string): Promise<LabelEvent | undefined> {
    const entry = this.undoStacks.get(who)?.pop();
    if (!entry) return undefined;
    const { ev, before } = entry;
    const t = { run: ev.run, qid: ev.qid, step: ev.step ?? null };
    const base = { who, run: ev.run, qid: ev.qid, step: ev.step ?? null, label: ev.label };
    if (before) return this.record({ ...base, op: 'add', note: before.note ?? '' }, false);
    if (this.current(who, t, ev.label)) return this.record({ ...base, op: 'remove' }, false);
    return undefined;
  }

  exportEvents(format: 'jsonl' | 'csv', opts?: CsvOptions): string {
    return format === 'csv' ? eventsToCsv(this.events, opts) : eventsToJsonl(this.events);
  }

  exportCurrent(format: 'jsonl' | 'csv', opts?: CsvOptions): string {
    return format === 'csv' ? currentLabelsToCsv(this.folder.fold, opts) : currentLabelsToJsonl(this.folder.fold);
  }

  agreement(opts: { annotators: readonly string[]; labels?: readonly string[]; level?: 'sample' | 'unit'; run?: string }): AgreementReport {
    return agreementReport(this.folder.fold, opts);
  }

  /** Current labels on one sample (every step, every annotator), as the Sample view lists them. */
  sampleLabels(run: string, qid: string): Array<{ who: string; label: string; step: number | null; note?: string; at: string }> {
    const out: Array<{ who: string; label: string; step: number | null; note?: string; at: string }> = [];
    for (const [key, byWho] of this.folder.fold) {
      const u = parseUnitKey(key);
      if (u.run !== run || u.qid !== qid) continue;
      for (const [who, list] of byWho) for (const c of list) out.push({ who, label: c.label, step: u.step, ...(c.note !== undefined ? { note: c.note } : {}), at: c.at });
    }
    return out;
  }

  /** Rows an export of current labels holds. */
  currentRows(): number {
    return currentLabelRows(this.folder.fold).length;
  }

  /** The label keys for `platform`, with any conflicts or invalid chords named. */
  async keyConfig(platform: 'mac' | 'other'): Promise<{ taxonomy: Taxonomy['labels']; keymap: Record<string, string[]>; actions: Record<string, string>; problems: string[] }> {
    const taxonomy = await this.taxonomy();
    const map = buildKeyMap(taxonomy);
    const report = validateKeyMap(map, { platform, taxonomy });
    const keymap: Record<string, string[]> = {};
    const problems: string[] = [...report.conflicts.map((c) => `'${c.chord}' is bound to ${c.actions.join(', ')}`), ...report.invalid.map((i) => i.message)];
    for (const [action, chords] of Object.entries(map)) {
      keymap[action] = chords.flatMap((c) => {
        try {
          return [normalizeChord(c, platform)];
        } catch {
          return [];
        }
      });
    }
    return { taxonomy: taxonomy.labels, keymap, actions: { ...ACTION_DESCRIPTIONS }, problems };
  }
}

/**
 * One object for the annotate view's needs: load every annotator's events once, keep the fold current as
 * labels are added, toggle and undo, and hand out exports and agreement. The contract handlers (composition
 * root) can wrap it directly.
 */
import type { LabelEvent } from './events';
import { agreementReport, type AgreementReport } from './agreement';
import { currentLabelsToCsv, currentLabelsToJsonl, eventsToCsv, eventsToJsonl, type CsvOptions } from './export';
import { LabelFolder, labelsBySample, unitKey, type CurrentLabel, type LabelFold } from './fold';
import { LabelStore, type LabelReadIssue } from './store';
import { loadTaxonomy, saveTaxonomy, type Taxonomy } from './taxonomy';

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

  /** (Re)read every annotator file and rebuild the fold. */
  async load(): Promise<void> {
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
}

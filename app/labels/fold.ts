/**
 * The fold: from append-only events to the labels each annotator currently has on each
 * (run, qid, step) unit. Events are applied per annotator in file order (the order they were appended),
 * not by timestamp, so clock skew between machines cannot reorder one person's edits.
 */
import type { LabelEvent } from './events';

/** A labelled unit: a whole sample (`step` null) or one step (turn index) of it. */
export interface LabelUnit {
  run: string;
  qid: string;
  step: number | null;
}

/** One label an annotator currently has on a unit. */
export interface CurrentLabel {
  label: string;
  /** When the label was (last) added. */
  at: string;
  /** Position of the add event in the annotator's file; the first present label is the primary one. */
  seq: number;
  note?: string;
}

const SEP = '\u001f';

/** A stable string key for a unit; `step` null is the empty field. */
export function unitKey(run: string, qid: string, step?: number | null): string {
  return `${run}${SEP}${qid}${SEP}${step === null || step === undefined ? '' : String(step)}`;
}
export function parseUnitKey(key: string): LabelUnit {
  const [run = '', qid = '', step = ''] = key.split(SEP);
  return { run, qid, step: step === '' ? null : Number(step) };
}
/** Key of a sample (run + qid), used to attach labels to SampleIndex rows. */
export function sampleKey(run: string, qid: string): string {
  return `${run}${SEP}${qid}`;
}

/** unitKey → annotator → current labels (in the order they were added). */
export type LabelFold = Map<string, Map<string, CurrentLabel[]>>;

/** Applies events one at a time (for live updates); `fold` is the current state. */
export class LabelFolder {
  readonly fold: LabelFold = new Map();
  private readonly seqs = new Map<string, number>();

  apply(ev: LabelEvent): void {
    const seq = this.seqs.get(ev.who) ?? 0;
    this.seqs.set(ev.who, seq + 1);
    const key = unitKey(ev.run, ev.qid, ev.step);
    let byWho = this.fold.get(key);
    if (!byWho) this.fold.set(key, (byWho = new Map()));
    let list = byWho.get(ev.who);
    if (!list) byWho.set(ev.who, (list = []));
    const i = list.findIndex((c) => c.label === ev.label);
    if (ev.op === 'add') {
      if (i >= 0) {
        const cur = list[i]!;
        if (ev.note !== undefined) cur.note = ev.note;
      } else {
        list.push({ label: ev.label, at: ev.at, seq, ...(ev.note !== undefined ? { note: ev.note } : {}) });
      }
    } else if (i >= 0) {
      list.splice(i, 1);
    }
    if (list.length === 0) {
      byWho.delete(ev.who);
      if (byWho.size === 0) this.fold.delete(key);
    }
  }

  /** Does `who` currently have `label` on the unit? */
  has(who: string, run: string, qid: string, step: number | null | undefined, label: string): boolean {
    return this.fold.get(unitKey(run, qid, step))?.get(who)?.some((c) => c.label === label) ?? false;
  }
}

/**
 * Fold events into current labels. `streams` is one event list per annotator in file order (what
 * LabelStore.read gives); a flat list is fine too since events carry `who`.
 */
export function foldLabels(streams: Iterable<LabelEvent> | Iterable<{ events: LabelEvent[] }>): LabelFold {
  const folder = new LabelFolder();
  for (const item of streams as Iterable<LabelEvent | { events: LabelEvent[] }>) {
    if ('events' in item) for (const ev of item.events) folder.apply(ev);
    else folder.apply(item);
  }
  return folder.fold;
}

/** One row per (unit, annotator, label): the table the exports and the UI use. */
export interface CurrentLabelRow extends LabelUnit {
  annotator: string;
  label: string;
  at: string;
  note?: string;
}

export function currentLabelRows(fold: LabelFold): CurrentLabelRow[] {
  const rows: CurrentLabelRow[] = [];
  for (const [key, byWho] of fold) {
    const u = parseUnitKey(key);
    for (const [annotator, list] of byWho) {
      for (const c of list) rows.push({ ...u, annotator, label: c.label, at: c.at, ...(c.note !== undefined ? { note: c.note } : {}) });
    }
  }
  rows.sort((a, b) => cmp(a.run, b.run) || cmp(a.qid, b.qid) || (a.step ?? -1) - (b.step ?? -1) || cmp(a.annotator, b.annotator) || cmp(a.label, b.label));
  return rows;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Labels per sample (run + qid), the union over annotators and steps: what the `label` field of the
 * query language matches. Pass `annotators` to restrict to some.
 */
export function labelsBySample(fold: LabelFold, annotators?: readonly string[]): Map<string, string[]> {
  const sets = new Map<string, Set<string>>();
  const only = annotators ? new Set(annotators) : undefined;
  for (const [key, byWho] of fold) {
    const u = parseUnitKey(key);
    const sk = sampleKey(u.run, u.qid);
    for (const [who, list] of byWho) {
      if (only && !only.has(who)) continue;
      let s = sets.get(sk);
      if (!s) sets.set(sk, (s = new Set()));
      for (const c of list) s.add(c.label);
    }
  }
  const out = new Map<string, string[]>();
  for (const [k, s] of sets) out.set(k, [...s].sort());
  return out;
}

/** Run totals: how many samples carry each label (any annotator, any step). */
export function labelCounts(fold: LabelFold, run?: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [sk, labels] of labelsBySample(fold)) {
    if (run !== undefined && !sk.startsWith(run + SEP)) continue;
    for (const l of labels) counts.set(l, (counts.get(l) ?? 0) + 1);
  }
  return counts;
}

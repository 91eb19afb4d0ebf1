/**
 * Annotation: the queue (samples of the selected runs matching a filter, in the sample table's order),
 * the sample being labelled, its current labels, the taxonomy and key map, exports and agreement.
 * The queue lives in the core's index; only the window around the current position is fetched.
 */
import { create } from 'zustand';
import type { Agreement, CallRes, CurrentLabelView, SampleRecord, SampleRow, SortKey, TaxonomyLabel } from '../../../app/contract';
import { getClient } from '../client';
import { useAppStore } from './useAppStore';
import { useRunsStore } from './useRunsStore';

export const QUEUE_WINDOW = 100;
export const DEFAULT_QUEUE_FILTER = 'correct = false';
/** Same rule as the core's AnnotatorSchema, so a bad name is refused before a round trip. */
export const ANNOTATOR_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export type LabelsConfig = CallRes<'labels:config'>;
export type Progress = CallRes<'labels:progress'>;

/** One change the annotator made, kept so `undo` can apply its inverse. */
interface UndoEntry {
  annotator: string;
  runId: string;
  qid: string;
  step: number | null;
  label: string;
  op: 'add' | 'remove';
  /** Note the label had before the change (restored by undo of a remove or a note edit). */
  prevNote?: string;
  /** True when the change only edited the note of a present label. */
  noteOnly?: boolean;
}

interface LabelsState {
  config: LabelsConfig | null;
  configError: string | null;
  /** Queue filter in the query language. */
  filter: string;
  problem: string | null;
  /** Runs and sort the queue was built from (the Runs page's selection and table order). */
  runIds: string[];
  sort: SortKey[];
  version: number;
  total: number;
  windows: Record<number, SampleRow[]>;
  position: number;
  progress: Progress | null;
  /** Row at `position`; the full sample follows once loaded. */
  row: SampleRow | null;
  sample: SampleRecord | null;
  sampleError: string | null;
  labels: CurrentLabelView[];
  /** The unit being labelled: null = the whole sample, else a turn index. */
  step: number | null;
  /** Last step visited, so switching back from sample level returns to it. */
  lastStep: number | null;
  /** Label the note box writes to (the last one toggled on this unit). */
  focusLabel: string | null;
  helpOpen: boolean;
  noteOpen: boolean;
  searchFocus: number;
  busy: boolean;
  error: string | null;
  notice: string | null;
  undoStack: UndoEntry[];
  agreement: Agreement | null;
  agreementNote: string | null;
  lastExport: { filename: string; rows: number; format: string } | null;

  init(): Promise<void>;
  loadConfig(): Promise<void>;
  setFilter(filter: string): Promise<void>;
  /** Rebuild the queue (runs, filter or sort changed) and go to the first sample not yet labelled. */
  loadQueue(): Promise<void>;
  goTo(position: number): Promise<void>;
  next(): Promise<void>;
  prev(): Promise<void>;
  /** Done with this sample: go to the next one the annotator has not labelled. */
  submit(): Promise<void>;
  refreshProgress(): Promise<void>;
  setStep(step: number | null): void;
  nextStep(): void;
  prevStep(): void;
  toggleSampleLevel(): void;
  toggleLabel(labelId: string): Promise<void>;
  setNote(labelId: string, note: string): Promise<void>;
  undo(): Promise<void>;
  clearUnit(): Promise<void>;
  setAnnotator(name: string): Promise<void>;
  saveTaxonomy(labels: TaxonomyLabel[]): Promise<boolean>;
  exportLabels(format: 'jsonl' | 'csv', kind: 'current' | 'events'): Promise<void>;
  loadAgreement(): Promise<void>;
  setHelp(open: boolean): void;
  setNoteOpen(open: boolean): void;
  focusSearch(): void;
  setError(error: string | null): void;
}

const msg = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const annotator = (): string => useAppStore.getState().settings?.annotator ?? '';

/** Labels the annotator has on the current unit. */
export function myLabels(labels: readonly CurrentLabelView[], who: string, step: number | null): CurrentLabelView[] {
  return labels.filter((l) => l.who === who && l.step === step);
}

/** Turn indices of the sample's trajectory (the steps that can carry step labels). */
export function stepsOf(sample: SampleRecord | null): number[] {
  return sample?.trajectory?.turns.map((t) => t.index) ?? [];
}

let subscribed = false;
const inflight = new Set<string>();

export const useLabelsStore = create<LabelsState>()((set, get) => ({
  config: null,
  configError: null,
  filter: DEFAULT_QUEUE_FILTER,
  problem: null,
  runIds: [],
  sort: [],
  version: 0,
  total: 0,
  windows: {},
  position: 0,
  progress: null,
  row: null,
  sample: null,
  sampleError: null,
  labels: [],
  step: null,
  lastStep: null,
  focusLabel: null,
  helpOpen: false,
  noteOpen: false,
  searchFocus: 0,
  busy: false,
  error: null,
  notice: null,
  undoStack: [],
  agreement: null,
  agreementNote: null,
  lastExport: null,

  async init() {
    const client = getClient();
    if (!subscribed) {
      subscribed = true;
      // Another window (or annotator) changed labels: refresh what this page shows of them.
      client.on('labels:changed', ({ runId, qid }) => {
        const row = get().row;
        if (row && row.run === runId && row.qid === qid) {
          void client.call('labels:sample', { runId, qid }).then((labels) => {
            const r = get().row;
            if (r && r.run === runId && r.qid === qid) set({ labels });
          });
        }
      });
    }
    await get().loadConfig();
    const runs = useRunsStore.getState();
    if (!runs.runs.length) await runs.load();
    await get().loadQueue();
  },

  async loadConfig() {
    try {
      set({ config: await getClient().call('labels:config', {}), configError: null });
    } catch (err) {
      set({ configError: msg(err) });
    }
  },

  async setFilter(filter) {
    set({ filter });
    await get().loadQueue();
  },

  async loadQueue() {
    const { selected, sort } = useRunsStore.getState();
    const version = get().version + 1;
    set({ version, runIds: [...selected], sort: [...sort], windows: {}, total: 0, position: 0, problem: null, row: null, sample: null, labels: [], progress: null, step: null, lastStep: null, focusLabel: null, notice: null });
    if (!selected.length) return;
    const first = await fetchWindow(0);
    if (get().version !== version || !first) return;
    if (get().problem) return;
    const who = annotator();
    let start = 0;
    if (who) {
      await get().refreshProgress();
      start = get().progress?.next?.position ?? 0;
    }
    if (get().version !== version) return;
    if (get().total > 0) await get().goTo(start);
  },

  async goTo(position) {
    const { total } = get();
    if (total === 0) return;
    const p = Math.max(0, Math.min(total - 1, position));
    const w = Math.floor(p / QUEUE_WINDOW);
    let rows: SampleRow[] | undefined = get().windows[w];
    if (!rows) rows = (await fetchWindow(w)) ?? undefined;
    const row = rows?.[p - w * QUEUE_WINDOW] ?? null;
    if (!row) return;
    set({ position: p, row, sample: null, sampleError: null, labels: [], step: null, lastStep: null, focusLabel: null, noteOpen: false, notice: null });
    const client = getClient();
    try {
      const [sample, labels] = await Promise.all([client.call('samples:get', { runId: row.run, qid: row.qid }), client.call('labels:sample', { runId: row.run, qid: row.qid })]);
      if (get().row !== row) return;
      set({ sample, labels });
    } catch (err) {
      if (get().row === row) set({ sampleError: msg(err) });
    }
  },

  async next() {
    const { position, total } = get();
    if (position + 1 < total) await get().goTo(position + 1);
  },
  async prev() {
    const { position } = get();
    if (position > 0) await get().goTo(position - 1);
  },

  async submit() {
    const who = annotator();
    const { runIds, filter, sort, position, total } = get();
    if (!who || !runIds.length) return;
    try {
      const progress = await getClient().call('labels:progress', { runIds, query: filter, annotator: who, sort, from: Math.min(position + 1, Math.max(0, total - 1)) });
      set({ progress });
      if (progress.next) await get().goTo(progress.next.position);
      else set({ notice: `All ${progress.total} samples in the queue are labelled by ${who}.` });
    } catch (err) {
      set({ error: msg(err) });
    }
  },

  async refreshProgress() {
    const who = annotator();
    const { runIds, filter, sort, position } = get();
    if (!who || !runIds.length || get().problem) {
      set({ progress: null });
      return;
    }
    try {
      set({ progress: await getClient().call('labels:progress', { runIds, query: filter, annotator: who, sort, from: position }) });
    } catch (err) {
      set({ error: msg(err) });
    }
  },

  setStep(step) {
    set({ step, lastStep: step ?? get().lastStep, focusLabel: null, noteOpen: false });
  },
  nextStep() {
    const steps = stepsOf(get().sample);
    if (!steps.length) return;
    const { step } = get();
    const i = step === null ? -1 : steps.indexOf(step);
    get().setStep(steps[Math.min(steps.length - 1, i + 1)]!);
  },
  prevStep() {
    const steps = stepsOf(get().sample);
    const { step } = get();
    if (step === null) return;
    const i = steps.indexOf(step);
    // Above the first step is the sample itself.
    get().setStep(i <= 0 ? null : steps[i - 1]!);
  },
  toggleSampleLevel() {
    const { step, lastStep } = get();
    if (step !== null) set({ step: null, lastStep: step, focusLabel: null, noteOpen: false });
    else {
      const steps = stepsOf(get().sample);
      const back = lastStep !== null && steps.includes(lastStep) ? lastStep : steps[0];
      if (back !== undefined) get().setStep(back);
    }
  },

  async toggleLabel(labelId) {
    const who = annotator();
    const { row, step, labels } = get();
    if (!row) return;
    if (!who) {
      set({ error: 'Set your annotator name first (top of the page).' });
      return;
    }
    const existing = myLabels(labels, who, step).find((l) => l.label === labelId);
    const op = existing ? 'remove' : 'add';
    const entry: UndoEntry = { annotator: who, runId: row.run, qid: row.qid, step, label: labelId, op, ...(existing?.note !== undefined ? { prevNote: existing.note } : {}) };
    // The note key may follow at once: point it at the label being added before the round trip.
    if (op === 'add') set({ focusLabel: labelId });
    await apply(entry, op, undefined);
    set((s) => ({ undoStack: [...s.undoStack.slice(-199), entry], focusLabel: op === 'add' ? labelId : s.focusLabel === labelId ? null : s.focusLabel }));
  },

  async setNote(labelId, note) {
    const who = annotator();
    const { row, step, labels } = get();
    if (!row || !who) return;
    const existing = myLabels(labels, who, step).find((l) => l.label === labelId);
    const entry: UndoEntry = { annotator: who, runId: row.run, qid: row.qid, step, label: labelId, op: 'add', noteOnly: !!existing, ...(existing?.note !== undefined ? { prevNote: existing.note } : {}) };
    await apply(entry, 'add', note);
    set((s) => ({ undoStack: [...s.undoStack.slice(-199), entry], focusLabel: labelId, noteOpen: false }));
  },

  async undo() {
    const stack = get().undoStack;
    const last = stack[stack.length - 1];
    if (!last) {
      set({ notice: 'Nothing to undo.' });
      return;
    }
    set({ undoStack: stack.slice(0, -1) });
    const row = get().row;
    if (!row || row.run !== last.runId || row.qid !== last.qid) {
      set({ notice: `Undid a change on ${last.qid}.` });
    }
    if (last.noteOnly) await apply(last, 'add', last.prevNote ?? '');
    else if (last.op === 'add') await apply(last, 'remove', undefined);
    else await apply(last, 'add', last.prevNote);
  },

  async clearUnit() {
    const who = annotator();
    const { row, step, labels } = get();
    if (!row || !who) return;
    for (const l of myLabels(labels, who, step)) {
      const entry: UndoEntry = { annotator: who, runId: row.run, qid: row.qid, step, label: l.label, op: 'remove', ...(l.note !== undefined ? { prevNote: l.note } : {}) };
      await apply(entry, 'remove', undefined);
      set((s) => ({ undoStack: [...s.undoStack, entry] }));
    }
  },

  async setAnnotator(name) {
    const trimmed = name.trim();
    if (!ANNOTATOR_NAME_RE.test(trimmed)) {
      set({ error: `Annotator '${name}' is not allowed: use 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit.` });
      return;
    }
    try {
      const settings = await getClient().call('settings:set', { annotator: trimmed });
      useAppStore.setState({ settings });
      set({ error: null, undoStack: [] });
      await get().loadConfig();
      await get().loadQueue();
    } catch (err) {
      set({ error: msg(err) });
    }
  },

  async saveTaxonomy(labels) {
    try {
      await getClient().call('labels:setTaxonomy', { labels });
      await get().loadConfig();
      set({ error: null });
      return true;
    } catch (err) {
      set({ error: msg(err) });
      return false;
    }
  },

  async exportLabels(format, kind) {
    try {
      const res = await getClient().call('labels:export', { format, kind });
      const blob = new Blob([res.text], { type: format === 'csv' ? 'text/csv;charset=utf-8' : 'application/x-ndjson;charset=utf-8' });
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = res.filename;
      document.body.appendChild(a);
      a.click();
      a.remove();
      // Revoke later: some browsers start the download asynchronously.
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      set({ lastExport: { filename: res.filename, rows: res.rows, format }, error: null });
    } catch (err) {
      set({ error: msg(err) });
    }
  },

  async loadAgreement() {
    await get().loadConfig();
    const who = get().config?.annotators ?? [];
    if (who.length < 2) {
      set({ agreement: null, agreementNote: who.length ? `Only ${who[0]} has labelled so far; agreement needs two annotators.` : 'No labels yet.' });
      return;
    }
    try {
      set({ agreement: await getClient().call('labels:agreement', { annotators: who }), agreementNote: null });
    } catch (err) {
      set({ agreement: null, agreementNote: msg(err) });
    }
  },

  setHelp(open) {
    set({ helpOpen: open });
  },
  setNoteOpen(open) {
    const who = annotator();
    if (open) {
      const { labels, step, focusLabel } = get();
      const mine = myLabels(labels, who, step);
      const target = mine.find((l) => l.label === focusLabel) ?? (focusLabel ? { label: focusLabel } : mine[mine.length - 1]);
      if (!target) {
        set({ notice: 'Add a label to this unit first; the note belongs to a label.' });
        return;
      }
      set({ noteOpen: true, focusLabel: target.label });
    } else set({ noteOpen: false });
  },
  focusSearch() {
    set((s) => ({ searchFocus: s.searchFocus + 1 }));
  },
  setError(error) {
    set({ error });
  },
}));

/** Fetch one window of queue rows into the store; null when the queue changed meanwhile or failed. */
async function fetchWindow(w: number): Promise<SampleRow[] | null> {
  const s = useLabelsStore.getState();
  const key = `${s.version}:${w}`;
  if (inflight.has(key)) return null;
  inflight.add(key);
  try {
    const res = await getClient().call('samples:query', { runIds: s.runIds, query: s.filter, sort: s.sort, offset: w * QUEUE_WINDOW, limit: QUEUE_WINDOW });
    if (useLabelsStore.getState().version !== s.version) return null;
    if (res.problem) {
      useLabelsStore.setState({ problem: res.problem.column ? `${res.problem.message} (column ${res.problem.column})` : res.problem.message, total: 0 });
      return null;
    }
    useLabelsStore.setState((st) => ({ total: res.total, windows: { ...st.windows, [w]: res.rows } }));
    return res.rows;
  } catch (err) {
    useLabelsStore.setState({ problem: msg(err) });
    return null;
  } finally {
    inflight.delete(key);
  }
}

/** Append one label event and take the core's answer as the sample's current labels. */
async function apply(e: UndoEntry, op: 'add' | 'remove', note: string | undefined): Promise<void> {
  try {
    const before = useLabelsStore.getState();
    const had = before.row?.run === e.runId && before.row?.qid === e.qid ? before.labels.some((l) => l.who === e.annotator) : null;
    const labels = await getClient().call('labels:apply', { annotator: e.annotator, runId: e.runId, qid: e.qid, step: e.step, label: e.label, op, ...(note !== undefined ? { note } : {}) });
    const st = useLabelsStore.getState();
    const here = st.row && st.row.run === e.runId && st.row.qid === e.qid;
    if (here) useLabelsStore.setState({ labels, error: null });
    const has = labels.some((l) => l.who === e.annotator);
    // The count only moves when the sample gains its first or loses its last label from this annotator;
    // adjust it here rather than asking the core to rescan the queue on every key press (50k-sample runs).
    if (here && had !== null && st.progress && e.annotator === annotator()) {
      if (had !== has) useLabelsStore.setState({ progress: { ...st.progress, labelled: st.progress.labelled + (has ? 1 : -1) } });
    } else void st.refreshProgress();
  } catch (err) {
    useLabelsStore.setState({ error: msg(err) });
  }
}

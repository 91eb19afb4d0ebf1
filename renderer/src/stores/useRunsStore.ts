/**
 * Runs and the sample table. Rows live in the core's index; the table asks for pages as it scrolls and
 * keeps only those pages here (a 50 000-sample run never crosses the contract whole).
 */
import { create } from 'zustand';
import type { RunStats, RunSummary, SampleRecord, SampleRow, SliceView, SortKey } from '../../../app/contract';
import { getClient } from '../client';

export const PAGE_SIZE = 200;

interface RunsState {
  runs: RunSummary[];
  loading: boolean;
  error: string | null;
  /** Runs whose samples the table shows. */
  selected: string[];
  query: string;
  search: string;
  sort: SortKey[];
  /** Bumped whenever the table's question changes; stale page answers are dropped. */
  version: number;
  total: number;
  pages: Record<number, SampleRow[]>;
  /**
   * The query version `pages` and `total` answer. A refresh keeps the previous answer on screen until the new one's
   * first page arrives (the table would otherwise collapse to no rows for a moment, and a scrolled table lose its
   * place); pages of another version are fetched again.
   */
  pagesVersion: number;
  problem: { message: string; column?: number } | null;
  lastMs: number | null;
  /** One entry per selected run; with `pool`, a single entry for all of them (`runId` '*'). */
  stats: RunStatsEntry[] | null;
  /** Pool the selected runs into one set of numbers (an explicit choice: runs are compared per run by default). */
  pool: boolean;
  setPool(pool: boolean): void;
  sample: SampleRecord | null;
  sampleError: string | null;
  slices: SliceView[];
  sliceError: string | null;
  /** The last training-data export of the ticked runs (or why it failed). */
  exported: { dir: string; files: Array<{ name: string; rows: number }>; skippedRl: number; skippedSft: number } | null;
  exportError: string | null;
  exportData(): Promise<void>;
  loadSlices(): Promise<void>;
  saveSlice(name: string): Promise<void>;
  deleteSlice(name: string): Promise<void>;
  load(): Promise<void>;
  select(runIds: string[]): void;
  setQuery(query: string): void;
  setSearch(search: string): void;
  toggleSort(field: SortKey['field'], additive: boolean): void;
  refresh(): Promise<void>;
  ensurePage(page: number): Promise<void>;
  openSample(runId: string, qid: string): Promise<void>;
}

const inflight = new Set<string>();

export interface RunStatsEntry {
  /** The run's id, or '*' for the pooled selection. */
  runId: string;
  label: string;
  /** False for runs whose samples have no ground truth (Demo questions): accuracy is not defined. */
  graded: boolean;
  stats: RunStats;
}

/** A run without ground truth: the Demo's questions have no answer to score against. */
export function isUngraded(r: RunSummary | undefined): boolean {
  return r?.manifest?.kind === 'demo';
}

export const useRunsStore = create<RunsState>()((set, get) => ({
  runs: [],
  loading: false,
  error: null,
  selected: [],
  query: '',
  search: '',
  sort: [],
  version: 0,
  total: 0,
  pages: {},
  pagesVersion: -1,
  problem: null,
  lastMs: null,
  stats: null,
  pool: false,
  sample: null,
  sampleError: null,
  slices: [],
  sliceError: null,
  exported: null,
  exportError: null,
  async exportData() {
    try {
      set({ exported: await getClient().call('runs:exportData', { runIds: get().selected }), exportError: null });
    } catch (e) {
      set({ exported: null, exportError: e instanceof Error ? e.message : String(e) });
    }
  },
  async loadSlices() {
    try {
      set({ slices: await getClient().call('slices:list', {}), sliceError: null });
    } catch (err) {
      set({ sliceError: err instanceof Error ? err.message : String(err) });
    }
  },
  async saveSlice(name) {
    try {
      set({ slices: await getClient().call('slices:save', { name, query: get().query }), sliceError: null });
    } catch (err) {
      set({ sliceError: err instanceof Error ? err.message : String(err) });
    }
  },
  async deleteSlice(name) {
    set({ slices: await getClient().call('slices:delete', { name }) });
  },
  async load() {
    set({ loading: true });
    try {
      const runs = await getClient().call('runs:list', {});
      const selected = get().selected.filter((id) => runs.some((r) => r.id === id));
      // Start on the newest graded run: a Demo question is no evaluation to summarise or to audit.
      const first = runs.find((r) => r.manifest && !isUngraded(r)) ?? runs.find((r) => r.manifest);
      set({ runs, loading: false, error: null, selected: selected.length ? selected : first ? [first.id] : [] });
      await get().refresh();
    } catch (err) {
      set({ loading: false, error: err instanceof Error ? err.message : String(err) });
    }
  },
  select(runIds) {
    set({ selected: runIds });
    void get().refresh();
  },
  setPool(pool) {
    set({ pool });
    void get().refresh();
  },
  setQuery(query) {
    set({ query });
    void get().refresh();
  },
  setSearch(search) {
    set({ search });
    void get().refresh();
  },
  toggleSort(field, additive) {
    const cur = get().sort;
    const existing = cur.find((k) => k.field === field);
    let next: SortKey[];
    if (existing) {
      const flipped: SortKey = { field, dir: existing.dir === 'asc' ? 'desc' : 'asc' };
      next = additive ? cur.map((k) => (k.field === field ? flipped : k)) : [flipped];
    } else {
      next = additive ? [...cur, { field, dir: 'asc' }] : [{ field, dir: 'asc' }];
    }
    set({ sort: next });
    void get().refresh();
  },
  async refresh() {
    const version = get().version + 1;
    set({ version, problem: null, lastMs: null });
    const { selected, query } = get();
    if (!selected.length) {
      set({ stats: null, pages: {}, total: 0, pagesVersion: version });
      return;
    }
    const { runs, pool } = get();
    const byId = new Map(runs.map((r) => [r.id, r]));
    const groups = pool && selected.length > 1 ? [selected] : selected.map((id) => [id]);
    const statsFor = (q: string) =>
      Promise.all(
        groups.map(async (ids): Promise<RunStatsEntry> => {
          const one = ids.length === 1 ? byId.get(ids[0]!) : undefined;
          return {
            runId: one ? one.id : '*',
            label: one ? (one.manifest?.name ?? one.id) : `${ids.length} runs pooled`,
            graded: ids.every((id) => !isUngraded(byId.get(id))),
            stats: await getClient().call('runs:stats', { runIds: ids, query: q }),
          };
        }),
      );
    // Rows and statistics are asked for together: the panel no longer waits for the table's round trip.
    const early = statsFor(query).then(
      (stats) => ({ stats }),
      () => null,
    );
    await get().ensurePage(0);
    try {
      // A filter the core rejected: the statistics of everything, as before, rather than none.
      const got = get().problem ? { stats: await statsFor('') } : await early;
      if (!got) throw new Error('no statistics');
      const { stats } = got;
      if (get().version === version) set({ stats });
    } catch {
      if (get().version === version) set({ stats: null });
    }
  },
  async ensurePage(page) {
    const { selected, query, search, sort, version, pages, pagesVersion } = get();
    if (!selected.length || (pagesVersion === version && pages[page])) return;
    const key = `${version}:${page}`;
    if (inflight.has(key)) return;
    inflight.add(key);
    try {
      const res = await getClient().call('samples:query', { runIds: selected, query, search, sort, offset: page * PAGE_SIZE, limit: PAGE_SIZE });
      if (get().version !== version) return;
      // the first page of a new answer replaces the previous answer's pages; later pages join it
      set((s) => ({ total: res.total, pages: { ...(s.pagesVersion === version ? s.pages : {}), [page]: res.rows }, pagesVersion: version, problem: res.problem ?? null, lastMs: res.ms }));
    } catch (err) {
      if (get().version === version) set({ problem: { message: err instanceof Error ? err.message : String(err) } });
    } finally {
      inflight.delete(key);
    }
  },
  async openSample(runId, qid) {
    set({ sample: null, sampleError: null });
    try {
      set({ sample: await getClient().call('samples:get', { runId, qid }) });
    } catch (err) {
      set({ sampleError: err instanceof Error ? err.message : String(err) });
    }
  },
}));

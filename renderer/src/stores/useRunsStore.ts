import { create } from 'zustand';
import type { RunSummary } from '../../../app/contract';
import { getClient } from '../client';

interface RunsState {
  runs: RunSummary[];
  loading: boolean;
  error: string | null;
  load(): Promise<void>;
}

export const useRunsStore = create<RunsState>()((set) => ({
  runs: [],
  loading: false,
  error: null,
  async load() {
    set({ loading: true });
    try {
      set({ runs: await getClient().call('runs:list', {}), loading: false, error: null });
    } catch (err) {
      set({ loading: false, error: err instanceof Error ? err.message : String(err) });
    }
  },
}));

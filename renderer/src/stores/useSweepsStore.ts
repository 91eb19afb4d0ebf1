/** Evaluation sweeps started from the UI: the form, and live progress from `sweeps:progress` events. */
import { create } from 'zustand';
import type { SweepProgress } from '../../../app/contract';
import { getClient } from '../client';

/** The dialects a sweep can speak; the pyvision ones run each sample's code in its own sandbox. */
export type SweepDialect = 'pixel-reasoner' | 'verl-tool' | 'deepeyes' | 'pyvision' | 'pyvision-rl';

interface SweepsState {
  progress: Record<string, SweepProgress>;
  error: string | null;
  starting: boolean;
  subscribe(onRunsChanged: () => void): () => void;
  start(req: { model: string; bench: string; data: string; prompts: Array<'vcot' | 'notool'>; dialect?: SweepDialect; limit?: number; maxTokens?: number; name?: string }): Promise<string[]>;
  cancel(runId: string): Promise<void>;
}

export const useSweepsStore = create<SweepsState>()((set) => ({
  progress: {},
  error: null,
  starting: false,
  subscribe(onRunsChanged) {
    const client = getClient();
    void client.call('sweeps:list', {}).then((list) => set({ progress: Object.fromEntries(list.map((p) => [p.runId, p])) }), () => undefined);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const offProgress = client.on('sweeps:progress', (p) => set((s) => ({ progress: { ...s.progress, [p.runId]: p } })));
    // Coalesce run changes: a fast sweep finishes many samples a second.
    const offRuns = client.on('runs:changed', () => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        onRunsChanged();
      }, 1000);
    });
    return () => {
      offProgress();
      offRuns();
      if (timer) clearTimeout(timer);
    };
  },
  async start(req) {
    set({ starting: true, error: null });
    try {
      const { runIds } = await getClient().call('sweeps:start', { ...req, dialect: req.dialect ?? 'pixel-reasoner' });
      set({ starting: false });
      return runIds;
    } catch (err) {
      set({ starting: false, error: err instanceof Error ? err.message : String(err) });
      return [];
    }
  },
  async cancel(runId) {
    await getClient().call('sweeps:cancel', { runId });
  },
}));

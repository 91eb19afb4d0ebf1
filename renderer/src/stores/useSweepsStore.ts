/** Evaluation sweeps started from the UI: the form, and live progress from `sweeps:progress` events. */
import { create } from 'zustand';
import type { CallReq, SweepProgress } from '../../../app/contract';
import { getClient } from '../client';

/** The dialects a sweep can speak; the pyvision ones run each sample's code in its own sandbox. */
export type SweepDialect = 'pixel-reasoner' | 'verl-tool' | 'deepeyes' | 'pyvision' | 'pyvision-rl';

interface SweepsState {
  progress: Record<string, SweepProgress>;
  error: string | null;
  starting: boolean;
  subscribe(onRunsChanged: () => void): () => void;
  start(req: { model: string; bench: string; data: string; prompts: Array<'vcot' | 'notool'>; dialect?: SweepDialect; limit?: number; maxTokens?: number; name?: string }): Promise<string[]>;
  /** "Run on cluster": a Slurm array or Ray sweep merged into one run (`sweeps:clusterStart`). */
  startCluster(req: CallReq<'sweeps:clusterStart'>): Promise<string | null>;
  /** Saved connectors that can run a cluster sweep (slurm-ssh and Ray), for the cluster form. */
  clusterConnectors: Array<{ name: string; kind: 'slurm-ssh' | 'ray' }>;
  loadConnectors(): Promise<void>;
  cancel(runId: string): Promise<void>;
}

export const useSweepsStore = create<SweepsState>()((set, get) => ({
  progress: {},
  clusterConnectors: [],
  async loadConnectors() {
    try {
      const r = await getClient().call('training:connectors', {});
      const out: SweepsState['clusterConnectors'] = [];
      for (const c of r.connectors) if (c.config?.kind === 'slurm-ssh' || c.config?.kind === 'ray') out.push({ name: c.name, kind: c.config.kind });
      set({ clusterConnectors: out });
    } catch {
      set({ clusterConnectors: [] });
    }
  },
  async startCluster(req) {
    set({ starting: true, error: null });
    try {
      const { runId } = await getClient().call('sweeps:clusterStart', req);
      set({ starting: false });
      return runId;
    } catch (err) {
      set({ starting: false, error: err instanceof Error ? err.message : String(err) });
      return null;
    }
  },
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
    if (get().progress[runId]?.where === 'cluster') await getClient().call('sweeps:clusterCancel', { runId });
    else await getClient().call('sweeps:cancel', { runId });
  },
}));

/**
 * Attention maps the UI has asked for ("where it looked"), one entry per run/branch/turn, and the view choices shared
 * by the step card and the image viewer (layer, opacity, shown). Maps come from `demo:attention` on demand only.
 */
import { create } from 'zustand';
import type { AttentionMaps, LayerChoice } from '../../../app/contract';
import { getClient } from '../client';

export interface AttentionEntry {
  status: 'loading' | 'ready' | 'unavailable' | 'error';
  maps?: AttentionMaps;
  message?: string;
}

export const attentionKey = (runId: string, branch: string, turnIndex: number): string => `${runId}/${branch}/${turnIndex}`;

interface AttentionState {
  entries: Record<string, AttentionEntry>;
  layer: LayerChoice;
  opacity: number;
  shown: boolean;
  load(runId: string, branch: string, turnIndex: number): Promise<void>;
  set(p: Partial<Pick<AttentionState, 'layer' | 'opacity' | 'shown'>>): void;
}

export const useAttentionStore = create<AttentionState>((set, get) => ({
  entries: {},
  layer: 'mean',
  opacity: 0.6,
  shown: true,
  set: (p) => set(p),
  load: async (runId, branch, turnIndex) => {
    const key = attentionKey(runId, branch, turnIndex);
    const had = get().entries[key];
    if (had && had.status !== 'error') {
      set({ shown: true });
      return;
    }
    set((s) => ({ shown: true, entries: { ...s.entries, [key]: { status: 'loading' } } }));
    try {
      const r = await getClient().call('demo:attention', { runId, branch, turnIndex });
      const entry: AttentionEntry = r.maps ? { status: 'ready', maps: r.maps } : { status: 'unavailable', message: r.unavailable ?? 'unavailable' };
      set((s) => ({ entries: { ...s.entries, [key]: entry } }));
    } catch (e) {
      set((s) => ({ entries: { ...s.entries, [key]: { status: 'error', message: e instanceof Error ? e.message : String(e) } } }));
    }
  },
}));

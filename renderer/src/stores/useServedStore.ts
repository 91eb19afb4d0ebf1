/**
 * Served engines (`served:*`): the list with states (the status bar and the Models page), starting one from the
 * Models page's Serve form, its live log, stopping. The API key stays in the core; the Demo names an engine by id.
 */
import { create } from 'zustand';
import type { ServedEngineStateWire, ServedStartReq } from '../../../app/contract';
import { LoupeCallError } from '../../../app/contract/callError';
import { getClient } from '../client';

interface ServedState {
  engines: ServedEngineStateWire[];
  /** Log lines per engine id (the last 500). */
  logs: Record<string, string[]>;
  busy: boolean;
  /** The form's error: the launcher's or the contract's message, as it is. */
  formError: string | null;
  bounds: { minPixels: number; maxPixels: number } | null;
  /** Saved Slurm-over-SSH connectors (Training → Connectors): where a served engine can run as a job. */
  slurmConnectors: string[];
  init(): Promise<void>;
  loadConnectors(): Promise<void>;
  loadBounds(mode: 'eval' | 'train'): Promise<void>;
  start(req: ServedStartReq): Promise<string | null>;
  stop(id: string): Promise<void>;
  clearError(): void;
}

const KEEP = 500;
let subscribed = false;

const message = (err: unknown): string => {
  if (err instanceof LoupeCallError && err.issues?.length) return err.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return err instanceof Error ? err.message : String(err);
};

export const useServedStore = create<ServedState>()((set, get) => ({
  engines: [],
  logs: {},
  busy: false,
  formError: null,
  bounds: null,
  slurmConnectors: [],
  async loadConnectors() {
    try {
      const r = await getClient().call('training:connectors', {});
      set({ slurmConnectors: r.connectors.filter((c) => c.config?.kind === 'slurm-ssh').map((c) => c.name) });
    } catch {
      set({ slurmConnectors: [] });
    }
  },
  async init() {
    const client = getClient();
    if (!subscribed) {
      subscribed = true;
      client.on('served:state', (s) => {
        const list = get().engines;
        const at = list.findIndex((e) => e.id === s.id);
        set({ engines: at < 0 ? [...list, s] : list.map((e, i) => (i === at ? s : e)) });
      });
      client.on('served:log', ({ id, line }) => {
        const prev = get().logs[id] ?? [];
        const next = prev.length >= KEEP ? [...prev.slice(prev.length - KEEP + 1), line] : [...prev, line];
        set({ logs: { ...get().logs, [id]: next } });
      });
    }
    try {
      const { engines } = await client.call('served:list', {});
      // Engines stopped earlier are forgotten by the core; keep what events said about them.
      const known = new Set(engines.map((e) => e.id));
      set({ engines: [...engines, ...get().engines.filter((e) => !known.has(e.id) && (e.status === 'stopped' || e.status === 'error'))] });
      for (const e of engines) {
        if (get().logs[e.id]) continue;
        const { lines } = await client.call('served:log', { id: e.id, lines: 200 });
        set({ logs: { ...get().logs, [e.id]: lines } });
      }
    } catch {
      // The list is refreshed on the next reconnect.
    }
  },
  async loadBounds(mode) {
    try {
      set({ bounds: await getClient().call('served:bounds', { mode }) });
    } catch {
      set({ bounds: null });
    }
  },
  async start(req) {
    set({ busy: true, formError: null });
    try {
      const s = await getClient().call('served:start', req);
      const list = get().engines.filter((e) => e.id !== s.id);
      set({ busy: false, engines: [...list, s] });
      return s.id;
    } catch (err) {
      set({ busy: false, formError: message(err) });
      return null;
    }
  },
  async stop(id) {
    try {
      await getClient().call('served:stop', { id });
    } catch (err) {
      set({ formError: message(err) });
    }
  },
  clearError() {
    set({ formError: null });
  },
}));

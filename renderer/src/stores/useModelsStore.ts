/** Models page state: the registry, folder validation, and loading/unloading the local model. */
import { create } from 'zustand';
import type { DeviceId, DeviceReport, LoadedModel, ModelEntry, ModelReport } from '../../../app/contract';
import { getClient } from '../client';
import { useAppStore } from './useAppStore';

export type Device = DeviceId;

/** The device local models load on: the Settings page's (one setting for Models, Demo and sweeps). */
export const currentDevice = (): Device => useAppStore.getState().settings?.device ?? 'cpu';

interface ModelsState {
  models: ModelEntry[];
  loaded: LoadedModel | null;
  busy: string | null;
  error: string | null;
  report: ModelReport | null;
  /** What detection found (null until `models:devices` answers). */
  devices: DeviceReport | null;
  devicesError: string | null;
  load(): Promise<void>;
  validate(path: string): Promise<void>;
  add(path: string): Promise<void>;
  remove(id: string): Promise<void>;
  loadModel(id: string): Promise<void>;
  unload(): Promise<void>;
  loadDevices(fresh?: boolean): Promise<void>;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export const useModelsStore = create<ModelsState>()((set, get) => ({
  models: [],
  loaded: null,
  busy: null,
  error: null,
  report: null,
  devices: null,
  devicesError: null,
  async load() {
    try {
      const r = await getClient().call('models:list', {});
      set({ models: r.models, loaded: r.loaded });
    } catch (err) {
      set({ error: message(err) });
    }
  },
  async validate(path) {
    set({ busy: 'validate', error: null });
    try {
      set({ report: await getClient().call('models:validate', { path }), busy: null });
    } catch (err) {
      set({ busy: null, error: message(err) });
    }
  },
  async add(path) {
    set({ busy: 'add', error: null });
    try {
      const r = await getClient().call('models:add', { path });
      set({ report: r.report, busy: null });
      await get().load();
    } catch (err) {
      set({ busy: null, error: message(err) });
      await get().validate(path);
    }
  },
  async remove(id) {
    await getClient().call('models:remove', { id }).catch((err: unknown) => set({ error: message(err) }));
    await get().load();
  },
  async loadModel(id) {
    set({ busy: `load:${id}`, error: null });
    try {
      const loaded = await getClient().call('models:load', { id, device: currentDevice() });
      set({ loaded, busy: null });
    } catch (err) {
      set({ busy: null, error: message(err) });
    }
  },
  async unload() {
    set({ busy: 'unload' });
    try {
      await getClient().call('models:unload', {});
      set({ loaded: null, busy: null });
    } catch (err) {
      set({ busy: null, error: message(err) });
    }
  },
  async loadDevices(fresh = false) {
    if (get().devices && !fresh) return;
    set({ devicesError: null });
    try {
      set({ devices: await getClient().call('models:devices', fresh ? { fresh } : {}) });
    } catch (err) {
      set({ devicesError: message(err) });
    }
  },
}));

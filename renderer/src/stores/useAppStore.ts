/**
 * App-wide state: core info, settings, engine state, the current page and the connection.
 * Contract calls live in these actions, not in components.
 */
import { create } from 'zustand';
import type { AppInfo, EngineState, Settings, Theme } from '../../../app/contract';
import { getClient } from '../client';

export const PAGES = ['demo', 'runs', 'annotate', 'training', 'models', 'settings'] as const;
export type Page = (typeof PAGES)[number];

/** Hash segments after the page, e.g. `#/runs/<runId>/<qid>` → ['<runId>', '<qid>']. */
export function subRouteFromHash(hash: string): string[] {
  return hash.replace(/^#\/?/, '').split('/').slice(1).filter(Boolean).map(decodeURIComponent);
}

export function pageFromHash(hash: string): Page {
  const p = hash.replace(/^#\/?/, '').split('/')[0] as Page;
  return (PAGES as readonly string[]).includes(p) ? p : 'demo';
}

interface AppState {
  info: AppInfo | null;
  settings: Settings | null;
  engine: EngineState | null;
  page: Page;
  /** Sub-route segments of the current page. */
  route: string[];
  connected: boolean;
  error: string | null;
  init(): Promise<void>;
  navigate(page: Page, ...route: string[]): void;
  setTheme(theme: Theme): Promise<void>;
  setDeveloper(on: boolean): Promise<void>;
  /** Save some settings (optimistic; the core's answer settles them, an error restores them and says why). */
  saveSettings(patch: Partial<Settings>): Promise<boolean>;
}

let subscribed = false;

export const useAppStore = create<AppState>()((set, get) => ({
  info: null,
  settings: null,
  engine: null,
  page: pageFromHash(window.location.hash),
  route: subRouteFromHash(window.location.hash),
  connected: false,
  error: null,
  async init() {
    const client = getClient();
    if (!subscribed) {
      // Subscribe once; init() runs again after a reconnect to refresh what the core reports.
      subscribed = true;
      client.on('engine:state', (engine) => set({ engine }));
      client.on('settings:changed', (settings) => set({ settings }));
      (client.on as unknown as (e: string, l: (p: { connected: boolean }) => void) => () => void)('transport:state', ({ connected }) => {
        set({ connected });
        if (connected) void get().init();
      });
      window.addEventListener('hashchange', () => set({ page: pageFromHash(window.location.hash), route: subRouteFromHash(window.location.hash) }));
    }
    try {
      const [info, settings] = await Promise.all([client.call('app:info', {}), client.call('settings:get', {})]);
      set({ info, settings, engine: info.engine, connected: true, error: null });
    } catch (err) {
      set({ error: err instanceof Error ? err.message : String(err) });
    }
  },
  navigate(page, ...route) {
    window.location.hash = `#/${[page, ...route.map(encodeURIComponent)].join('/')}`;
    set({ page, route });
  },
  async setTheme(theme) {
    const settings = await getClient().call('settings:set', { theme });
    set({ settings });
  },
  async setDeveloper(developer) {
    await get().saveSettings({ developer });
  },
  async saveSettings(patch) {
    // Optimistic, so a control follows the click at once; the core's answer (or the old value on error) settles it.
    const before = get().settings;
    if (before) set({ settings: { ...before, ...patch } });
    try {
      set({ settings: await getClient().call('settings:set', patch), error: null });
      return true;
    } catch (err) {
      set({ settings: before, error: err instanceof Error ? err.message : String(err) });
      return false;
    }
  },
}));

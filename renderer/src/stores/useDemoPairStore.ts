/**
 * The Demo's side by side: two configurations (A = the Demo's engine form, B = its own model, prompt and dialect) run
 * at once on the same question and media through `demo:runPair`. Each side is an ordinary Demo run whose
 * `demo:event`s build its column; step mode pauses each side on its own (`demo:continue` with that side's run id).
 *
 * Events are applied once per animation frame, both columns in one store update: two streams at ~30 token flushes a
 * second each would otherwise re-render the page on every flush.
 */
import { create } from 'zustand';
import type { Box, DemoEvent, DemoPair, DemoPairSide, ExportResult } from '../../../app/contract';
import { getClient } from '../client';
import { runSettings, useDemoStore, type EngineKind } from './useDemoStore';
import { currentDevice } from './useModelsStore';
import { applyPairEvent, emptyColumn, type PairColumn, type PairSide } from './pairColumns';

export { pairRows, type PairColumn, type PairSide } from './pairColumns';

export interface PairBForm {
  localModelId: string;
  openaiModel: string;
  replayKey: string;
  dialect: 'pixel-reasoner' | 'verl-tool' | 'deepeyes' | 'pyvision' | 'pyvision-rl';
  prompt: 'vcot' | 'notool';
}

interface PairState {
  /** The Demo shows two columns instead of one. */
  enabled: boolean;
  /** B's configuration (its engine kind is A's: two local models, two models of one server, or two recordings). */
  b: PairBForm;
  pair: DemoPair | null;
  starting: boolean;
  cols: Record<PairSide, PairColumn>;
  /** The step row shown in the shared image viewer and by presentation mode (both columns in lockstep). */
  activeRow: number;
  exports: ExportResult[];
  saving: boolean;
  error: string | null;

  setEnabled(on: boolean): void;
  setB<K extends keyof PairBForm>(key: K, value: PairBForm[K]): void;
  setActiveRow(row: number): void;
  setEditBox(side: PairSide, box: Box | null): void;
  run(): Promise<void>;
  stop(side?: PairSide): Promise<void>;
  resume(side: PairSide, action: 'run' | 'edit' | 'stop', keepStepping?: boolean): Promise<void>;
  /** Keep both runs (they move into `runs/`), returning the pair for Compare. */
  save(): Promise<DemoPair | null>;
  exportHtml(): Promise<void>;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

let subscribed = false;

export const useDemoPairStore = create<PairState>()((set, get) => {
  /** Events not yet applied (one store update per animation frame), and those that came before `demo:runPair` replied. */
  let queue: DemoEvent[] = [];
  let early: DemoEvent[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const events = queue;
    queue = [];
    const s = get();
    if (!s.pair) return;
    const now = Date.now();
    let a = s.cols.A;
    let b = s.cols.B;
    for (const ev of events) {
      if (ev.runId === s.pair.a) a = applyPairEvent(a, ev, now);
      else if (ev.runId === s.pair.b) b = applyPairEvent(b, ev, now);
    }
    if (a !== s.cols.A || b !== s.cols.B) set({ cols: { A: a, B: b } });
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    // A hidden tab gets no animation frames; the timer keeps the columns current there.
    if (typeof requestAnimationFrame === 'function' && document.visibilityState === 'visible') requestAnimationFrame(flush);
    else setTimeout(flush, 16);
  };
  const onEvent = (ev: DemoEvent) => {
    const s = get();
    if (s.starting && !s.pair) {
      early.push(ev);
      return;
    }
    if (!s.pair || (ev.runId !== s.pair.a && ev.runId !== s.pair.b)) return;
    queue.push(ev);
    schedule();
  };

  return {
    enabled: false,
    b: { localModelId: 'loupe-tiny', openaiModel: '', replayKey: '', dialect: 'pixel-reasoner', prompt: 'notool' },
    pair: null,
    starting: false,
    cols: { A: emptyColumn(), B: emptyColumn() },
    activeRow: 0,
    exports: [],
    saving: false,
    error: null,

    setEnabled(on) {
      if (on && !subscribed) {
        subscribed = true;
        getClient().on('demo:event', onEvent);
      }
      // B starts as A's model with the other prompt: the tool's effect, the first question an audience asks.
      const d = useDemoStore.getState();
      set({ enabled: on, ...(on && !get().pair ? { b: { ...get().b, localModelId: d.localModelId, openaiModel: d.openaiModel, replayKey: d.replayKey, dialect: d.dialect, prompt: d.prompt === 'vcot' ? 'notool' : 'vcot' } } : {}) });
    },
    setB(key, value) {
      set({ b: { ...get().b, [key]: value } });
    },
    setActiveRow(row) {
      set({ activeRow: Math.max(0, row) });
    },
    setEditBox(side, box) {
      const s = get();
      set({ cols: { ...s.cols, [side]: { ...s.cols[side], editBox: box } } });
    },

    async run() {
      const d = useDemoStore.getState();
      const s = get();
      if (d.media.length === 0 || !d.question.trim()) {
        set({ error: 'Pick an example or an image and ask a question first.' });
        return;
      }
      const engineOf = (kind: EngineKind, form: { localModelId: string; openaiModel: string; replayKey: string }): DemoPairSide['engine'] => {
        if (kind === 'local') return { kind: 'local', modelId: form.localModelId, device: currentDevice() };
        if (kind === 'openai') return { kind: 'openai', baseURL: d.openaiUrl.trim(), model: form.openaiModel.trim(), ...(d.openaiKey.trim() ? { apiKey: d.openaiKey.trim() } : {}) };
        const [runId = '', qid = ''] = form.replayKey.split('::');
        return { kind: 'replay', runId, qid };
      };
      const st = d.settings;
      const settings = runSettings(st);
      const starting: PairColumn = { ...emptyColumn(), status: 'starting', trajectory: { ...emptyColumn().trajectory, question: d.question, media: d.media, originals: d.media } };
      queue = [];
      early = [];
      set({ starting: true, pair: null, error: null, exports: [], activeRow: 0, cols: { A: { ...starting, trajectory: { ...starting.trajectory, prompt: d.prompt, dialect: d.dialect } }, B: { ...starting, trajectory: { ...starting.trajectory, prompt: s.b.prompt, dialect: s.b.dialect } } } });
      try {
        const pair = await getClient().call('demo:runPair', {
          media: d.media,
          isVideo: d.isVideo,
          question: d.question,
          settings,
          stepMode: d.stepMode,
          a: { engine: engineOf(d.engineKind, d), dialect: d.dialect, prompt: d.prompt },
          b: { engine: engineOf(d.engineKind, s.b), dialect: s.b.dialect, prompt: s.b.prompt },
        });
        const cols = get().cols;
        set({ pair, starting: false, cols: { A: { ...cols.A, runId: pair.a }, B: { ...cols.B, runId: pair.b } } });
        const pending = early;
        early = [];
        for (const ev of pending) onEvent(ev);
      } catch (err) {
        set({ starting: false, error: message(err), cols: { A: emptyColumn(), B: emptyColumn() } });
      }
    },

    async stop(side) {
      const s = get();
      if (!s.pair) return;
      const ids = side ? [side === 'A' ? s.pair.a : s.pair.b] : [s.pair.a, s.pair.b];
      await Promise.all(ids.map((runId) => getClient().call('demo:stop', { runId }))).catch((err: unknown) => set({ error: message(err) }));
    },

    async resume(side, action, keepStepping = true) {
      const c = get().cols[side];
      if (!c.runId || !c.proposal) return;
      try {
        const ok = await getClient().call('demo:continue', { runId: c.runId, turnIndex: c.proposal.turnIndex, action, ...(action === 'edit' && c.editBox ? { bbox: c.editBox } : {}), keepStepping });
        const now = get().cols[side];
        if (ok.ok) set({ cols: { ...get().cols, [side]: { ...now, status: 'running', proposal: null } } });
      } catch (err) {
        set({ error: message(err) });
      }
    },

    async save() {
      const s = get();
      if (!s.pair) return null;
      set({ saving: true });
      try {
        const pair = await getClient().call('demo:savePair', { pairId: s.pair.pairId });
        set({ pair, saving: false });
        return pair;
      } catch (err) {
        set({ saving: false, error: message(err) });
        return null;
      }
    },

    async exportHtml() {
      const s = get();
      if (!s.pair) return;
      try {
        const r = await getClient().call('demo:exportPair', { pairId: s.pair.pairId });
        set({ exports: [r] });
      } catch (err) {
        set({ error: message(err) });
      }
    },
  };
});


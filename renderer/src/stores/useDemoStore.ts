/**
 * Demo state: the question and its media, the engine and settings, and the live run built from
 * `demo:event`s (one partial Trajectory per branch). Contract calls live here, not in components.
 */
import { create } from 'zustand';
import type { Box, DemoBranch, DemoEvent, DemoExample, DemoProposal, ExportResult, MediaRef, ReplaySource, Trajectory, Turn } from '../../../app/contract';
import { getClient } from '../client';
import { currentDevice } from './useModelsStore';

export type EngineKind = 'replay' | 'local' | 'openai' | 'served';
export type RunStatus = 'idle' | 'starting' | 'running' | 'paused' | 'done' | 'error';

export interface LiveBranch {
  id: string;
  label: string;
  forkTurn?: number;
  trajectory: Trajectory;
  /** Text of the turn being generated. */
  streaming: { turnIndex: number; text: string } | null;
  engineLabel: string;
  replay: boolean;
  done: boolean;
}

export interface DemoSettingsForm {
  minPixels: string;
  maxPixels: string;
  temperature: string;
  maxCalls: string;
  turnTimeoutMs: string;
  maxTokensPerTurn: string;
}

interface DemoState {
  media: MediaRef[];
  isVideo: boolean;
  importing: boolean;
  importError: string | null;
  question: string;
  engineKind: EngineKind;
  replaySources: ReplaySource[];
  replayKey: string;
  /** Bundled example scenes to try with loupe-tiny (see `demo:examples`). */
  examples: DemoExample[];
  /** The examples row shows from the first paint: 'loading' until `demo:examples` answers. */
  examplesState: 'idle' | 'loading' | 'ready' | 'error';
  localModelId: string;
  openaiUrl: string;
  openaiModel: string;
  /** Bearer key of the server (`loupe serve-model` and a served engine require one); kept in memory only. */
  openaiKey: string;
  /** A served engine's id (Models → Serve a model); the core holds its URL and key. */
  servedId: string;
  dialect: 'pixel-reasoner' | 'verl-tool' | 'deepeyes' | 'pyvision' | 'pyvision-rl';
  prompt: 'vcot' | 'notool';
  settings: DemoSettingsForm;
  stepMode: boolean;

  runId: string | null;
  status: RunStatus;
  branches: LiveBranch[];
  activeBranch: string;
  activeStep: number;
  proposal: DemoProposal | null;
  /** The box being edited in step mode (normalized to the proposal's target). */
  editBox: Box | null;
  /** The code being edited in step mode (a PyVision code call). */
  editCode: string | null;
  errors: string[];
  exports: ExportResult[];
  exporting: boolean;
  /** Long tasks (> 50 ms) the renderer saw during the last run. */
  longTasks: number[];
  presenting: boolean;

  init(): Promise<void>;
  loadReplaySources(): Promise<void>;
  importPaths(paths: string[]): Promise<void>;
  uploadFiles(files: File[]): Promise<void>;
  clearMedia(): void;
  useReplayMedia(): void;
  /** Put an example's scene and question in place, with its model as a local engine. */
  pickExample(id: string): void;
  set<K extends keyof DemoState>(key: K, value: DemoState[K]): void;
  setSetting(key: keyof DemoSettingsForm, value: string): void;
  run(): Promise<void>;
  stop(): Promise<void>;
  resume(action: 'run' | 'edit' | 'stop', keepStepping?: boolean): Promise<void>;
  setActiveStep(i: number): void;
  exportAs(format: 'html' | 'webp' | 'gif'): Promise<void>;
}

/** The Settings page's default model is applied once per page load. */
let defaultsApplied = false;
let subscribed = false;
let longTaskObserver: PerformanceObserver | null = null;

function emptyTrajectory(): Trajectory {
  return { dialect: '', prompt: 'vcot', media: [], originals: [], isVideo: false, question: '', turns: [], stopReason: 'answer' };
}

function upsertTurn(turns: Turn[], turn: Turn): Turn[] {
  const i = turns.findIndex((t) => t.index === turn.index);
  if (i < 0) return [...turns, turn].sort((a, b) => a.index - b.index);
  const next = turns.slice();
  next[i] = turn;
  return next;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function num(v: string): number | undefined {
  const n = Number(v);
  return v.trim() !== '' && Number.isFinite(n) ? n : undefined;
}

/** The Demo form's run settings as a run takes them: numbers parsed, empty fields left to the dialect's defaults. */
export function runSettings(st: DemoSettingsForm) {
  return {
    temperature: num(st.temperature) ?? 0,
    ...(num(st.minPixels) ? { minPixels: num(st.minPixels) } : {}),
    ...(num(st.maxPixels) ? { maxPixels: num(st.maxPixels) } : {}),
    ...(num(st.maxCalls) ? { maxCalls: num(st.maxCalls) } : {}),
    ...(num(st.turnTimeoutMs) ? { turnTimeoutMs: num(st.turnTimeoutMs) } : {}),
    ...(num(st.maxTokensPerTurn) ? { maxTokensPerTurn: num(st.maxTokensPerTurn) } : {}),
  };
}

export const useDemoStore = create<DemoState>()((set, get) => {
  /** Events that arrive before `demo:run` replied (the run id is not known yet). */
  let early: DemoEvent[] = [];
  const onEvent = (ev: DemoEvent) => {
    const s = get();
    if (s.runId === null && s.status === 'starting') {
      early.push(ev);
      return;
    }
    if (ev.runId !== s.runId) return;
    const branches = s.branches.slice();
    let bi = branches.findIndex((b) => b.id === ev.branch);
    if (bi < 0) {
      branches.push({ id: ev.branch, label: ev.branch === 'b0' ? 'Original' : 'Original', trajectory: { ...emptyTrajectory(), question: s.question, dialect: s.dialect, prompt: s.prompt }, streaming: null, engineLabel: '', replay: false, done: false });
      bi = branches.length - 1;
    }
    const b = { ...branches[bi]! };
    const patch: Partial<DemoState> = {};
    switch (ev.type) {
      case 'start':
        b.trajectory = { ...b.trajectory, media: ev.media, originals: ev.originals, isVideo: ev.isVideo, system: ev.system, userText: ev.userText };
        b.engineLabel = ev.engineLabel;
        b.replay = ev.replay;
        break;
      case 'turn-start':
        b.streaming = { turnIndex: ev.turnIndex, text: '' };
        break;
      case 'tokens':
        b.streaming = { turnIndex: ev.turnIndex, text: (b.streaming?.turnIndex === ev.turnIndex ? b.streaming.text : '') + ev.delta };
        break;
      case 'paused':
        patch.status = 'paused';
        patch.proposal = ev.proposal;
        patch.editBox = ev.proposal.bboxNormalized ?? null;
        patch.editCode = ev.proposal.code ?? null;
        patch.activeStep = ev.proposal.turnIndex;
        b.streaming = { turnIndex: ev.proposal.turnIndex, text: b.streaming?.text ?? '' };
        break;
      case 'call':
        break;
      case 'turn':
        b.trajectory = { ...b.trajectory, turns: upsertTurn(b.trajectory.turns, ev.turn) };
        if (b.streaming?.turnIndex === ev.turn.index) b.streaming = null;
        if (ev.branch === s.activeBranch && ev.turn.call) patch.activeStep = ev.turn.index;
        break;
      case 'error':
        patch.errors = [...s.errors, ev.message];
        break;
      case 'done':
        b.trajectory = ev.trajectory;
        b.streaming = null;
        b.done = true;
        for (const info of ev.branches) {
          const j = branches.findIndex((x) => x.id === info.id);
          if (j >= 0 && j !== bi) branches[j] = { ...branches[j]!, label: info.label, ...(info.forkTurn !== undefined ? { forkTurn: info.forkTurn } : {}) };
          if (info.id === b.id) {
            b.label = info.label;
            if (info.forkTurn !== undefined) b.forkTurn = info.forkTurn;
          }
        }
        break;
    }
    branches[bi] = b;
    const allDone = ev.type === 'done' && branches.every((x) => x.done) && ev.branches.length === branches.length;
    if (allDone) {
      patch.status = b.trajectory.stopReason === 'engine_error' || b.trajectory.stopReason === 'error' ? 'error' : 'done';
      patch.proposal = null;
      patch.editBox = null;
      longTaskObserver?.disconnect();
      longTaskObserver = null;
      void get().loadReplaySources();
    } else if (ev.type !== 'paused' && s.status === 'paused' && ev.type === 'turn') {
      patch.status = 'running';
      patch.proposal = null;
    } else if (s.status === 'starting') patch.status = 'running';
    set({ branches, ...patch });
  };

  return {
    media: [],
    isVideo: false,
    importing: false,
    importError: null,
    question: '',
    // A talk opens on the model that runs here (loupe-tiny and its examples); Replay needs recorded runs first.
    engineKind: 'local',
    replaySources: [],
    replayKey: '',
    examples: [],
    examplesState: 'idle',
    localModelId: 'loupe-tiny',
    openaiUrl: 'http://127.0.0.1:8000/v1',
    openaiModel: '',
    openaiKey: '',
    servedId: '',
    dialect: 'pixel-reasoner',
    prompt: 'vcot',
    settings: { minPixels: '', maxPixels: '', temperature: '0', maxCalls: '', turnTimeoutMs: '120000', maxTokensPerTurn: '' },
    stepMode: false,
    runId: null,
    status: 'idle',
    branches: [],
    activeBranch: 'b0',
    activeStep: 0,
    proposal: null,
    editBox: null,
    editCode: null,
    errors: [],
    exports: [],
    exporting: false,
    longTasks: [],
    presenting: false,

    async init() {
      if (!subscribed) {
        subscribed = true;
        getClient().on('demo:event', onEvent);
      }
      // In parallel: the examples row must not wait on a workspace's recorded runs.
      const examples = (async () => {
        if (get().examplesState === 'ready') return;
        set({ examplesState: 'loading' });
        try {
          set({ examples: await getClient().call('demo:examples', {}), examplesState: 'ready' });
        } catch (err) {
          set({ examplesState: 'error', errors: [...get().errors, `could not load the example scenes: ${message(err)}`] });
        }
      })();
      // The Settings page's default model, once per session, before anyone picks another.
      const defaults = (async () => {
        if (defaultsApplied) return;
        defaultsApplied = true;
        const prefs = await getClient().call('settings:get', {}).catch(() => null);
        if (prefs && get().localModelId === 'loupe-tiny' && get().status === 'idle') set({ localModelId: prefs.defaultModel });
      })();
      await Promise.all([get().loadReplaySources(), examples, defaults]);
    },

    async loadReplaySources() {
      try {
        const sources = await getClient().call('demo:replaySources', {});
        const key = get().replayKey;
        const first = sources[0];
        set({ replaySources: sources, ...(!key && first ? { replayKey: `${first.runId}::${first.qid}` } : {}) });
      } catch (err) {
        set({ errors: [...get().errors, `could not list recorded trajectories: ${message(err)}`] });
      }
    },

    async importPaths(paths) {
      set({ importing: true, importError: null });
      try {
        const r = await getClient().call('demo:import', { paths });
        set({ media: r.media, isVideo: r.isVideo, importing: false });
      } catch (err) {
        set({ importing: false, importError: message(err) });
      }
    },

    async uploadFiles(files) {
      const client = getClient();
      if (client.transport !== 'browser') {
        // Electron: the core reads the files where they are (older Electron exposes File.path).
        const paths = files.map((f) => (f as File & { path?: string }).path).filter((p): p is string => !!p);
        if (paths.length === files.length) return get().importPaths(paths);
        set({ importError: 'This desktop build cannot see the dropped files’ paths; type the path instead.' });
        return;
      }
      set({ importing: true, importError: null });
      try {
        const sorted = [...files].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
        const media: MediaRef[] = [];
        for (const f of sorted) {
          const res = await fetch(`/upload?name=${encodeURIComponent(f.name)}`, { method: 'POST', body: f, credentials: 'same-origin', headers: { 'content-type': f.type || 'application/octet-stream' } });
          const body = (await res.json()) as { media?: MediaRef; error?: string };
          if (!res.ok || !body.media) throw new Error(`${f.name}: ${body.error ?? `upload failed (${res.status})`}`);
          media.push(body.media);
        }
        // Several files dropped at once are the frames of a video, in name order.
        set({ media, isVideo: media.length > 1, importing: false });
      } catch (err) {
        set({ importing: false, importError: message(err) });
      }
    },

    clearMedia() {
      set({ media: [], isVideo: false, importError: null });
    },

    useReplayMedia() {
      const s = get();
      const src = s.replaySources.find((x) => `${x.runId}::${x.qid}` === s.replayKey);
      if (!src) return;
      set({ question: src.question, ...(src.media.length ? { media: src.media, isVideo: src.isVideo } : {}), dialect: (['pixel-reasoner', 'verl-tool', 'deepeyes', 'pyvision', 'pyvision-rl'] as const).find((d) => d === src.dialect) ?? s.dialect });
    },

    pickExample(id) {
      const ex = get().examples.find((e) => e.id === id);
      if (!ex) return;
      set({ media: ex.media, isVideo: false, importError: null, question: ex.question, engineKind: 'local', localModelId: ex.modelId, dialect: 'pixel-reasoner', prompt: 'vcot' });
    },

    set(key, value) {
      set({ [key]: value } as Partial<DemoState>);
    },

    setSetting(key, value) {
      set({ settings: { ...get().settings, [key]: value } });
    },

    async run() {
      const s = get();
      if (s.media.length === 0) {
        set({ errors: ['Add an image, several frames or a folder of frames first.'] });
        return;
      }
      let engine;
      if (s.engineKind === 'replay') {
        const [runId, qid] = s.replayKey.split('::');
        if (!runId || !qid) {
          set({ errors: ['Pick a recorded trajectory to replay.'] });
          return;
        }
        engine = { kind: 'replay' as const, runId, qid };
      } else if (s.engineKind === 'local') engine = { kind: 'local' as const, modelId: s.localModelId, device: currentDevice() };
      else if (s.engineKind === 'served') {
        if (!s.servedId) {
          set({ errors: ['Pick a served engine, or start one on the Models page (Serve a model).'] });
          return;
        }
        engine = { kind: 'served' as const, id: s.servedId };
      } else {
        // Said plainly here, before the core's payload check turns it into schema text.
        if (!s.openaiModel.trim()) {
          set({ errors: [`Name the model to ask: the server at ${s.openaiUrl} can serve several (its ${s.openaiUrl.replace(/\/+$/, '')}/models lists them; vLLM's is the --served-model-name or the model path).`] });
          return;
        }
        if (!/^https?:\/\/\S+$/i.test(s.openaiUrl.trim())) {
          set({ errors: [`${JSON.stringify(s.openaiUrl)} is not a server URL: give its OpenAI-compatible base, e.g. http://127.0.0.1:8000/v1`] });
          return;
        }
        engine = { kind: 'openai' as const, baseURL: s.openaiUrl.trim(), model: s.openaiModel.trim(), ...(s.openaiKey.trim() ? { apiKey: s.openaiKey.trim() } : {}) };
      }
      const st = s.settings;
      const settings = runSettings(st);
      const longTasks: number[] = [];
      longTaskObserver?.disconnect();
      if (typeof PerformanceObserver !== 'undefined' && PerformanceObserver.supportedEntryTypes?.includes('longtask')) {
        longTaskObserver = new PerformanceObserver((list) => {
          for (const e of list.getEntries()) longTasks.push(Math.round(e.duration));
          set({ longTasks: [...longTasks] });
        });
        longTaskObserver.observe({ type: 'longtask', buffered: false });
      }
      early = [];
      set({ status: 'starting', runId: null, branches: [], activeBranch: 'b0', activeStep: 0, proposal: null, editBox: null, errors: [], exports: [], longTasks: [] });
      try {
        const { runId } = await getClient().call('demo:run', { media: s.media, isVideo: s.isVideo, question: s.question, engine, dialect: s.dialect, prompt: s.prompt, settings, stepMode: s.stepMode });
        set({ runId, status: 'running' });
        const pending = early;
        early = [];
        for (const ev of pending) if (ev.runId === runId) onEvent(ev);
      } catch (err) {
        set({ status: 'error', errors: [message(err)] });
      }
    },

    async stop() {
      const id = get().runId;
      if (!id) return;
      await getClient().call('demo:stop', { runId: id }).catch((err: unknown) => set({ errors: [...get().errors, message(err)] }));
    },

    async resume(action, keepStepping = true) {
      const s = get();
      if (!s.runId || !s.proposal) return;
      try {
        const ok = await getClient().call('demo:continue', { runId: s.runId, turnIndex: s.proposal.turnIndex, action, ...(action === 'edit' && s.proposal.kind === 'code' && s.editCode !== null ? { code: s.editCode } : action === 'edit' && s.editBox ? { bbox: s.editBox } : {}), keepStepping });
        if (ok.ok) set({ status: 'running', proposal: null, stepMode: keepStepping ? s.stepMode : false });
      } catch (err) {
        set({ errors: [...s.errors, message(err)] });
      }
    },

    setActiveStep(i) {
      set({ activeStep: i });
    },

    async exportAs(format) {
      const s = get();
      if (!s.runId) return;
      set({ exporting: true });
      try {
        const r = await getClient().call('demo:export', { runId: s.runId, branch: s.activeBranch, format });
        set({ exports: [...get().exports.filter((e) => e.format !== format), r], exporting: false });
      } catch (err) {
        set({ exporting: false, errors: [...get().errors, message(err)] });
      }
    },
  };
});

/** The branch shown in the main view. */
export function selectActiveBranch(s: Pick<DemoState, 'branches' | 'activeBranch'>): LiveBranch | undefined {
  return s.branches.find((b) => b.id === s.activeBranch) ?? s.branches[0];
}

export type { DemoBranch };

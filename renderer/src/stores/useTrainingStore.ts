/**
 * Training page state: templates and the parameter form, connectors, jobs, and the open job's live log and
 * metric series (plus other jobs overlaid on its charts). Contract calls live here; components only select and dispatch.
 */
import { create } from 'zustand';
import type { ConnectorInfo, ConnectorList, FieldIssue, RemoteConnectorConfig, RenderedJob, TemplateField, TemplateInfo, TrainingJob, TrainingMetricPoint } from '../../../app/contract';
import { getClient } from '../client';

/** Raw form values by field name: strings as typed, booleans, selected options. */
export type FormValue = string | boolean | string[];

/** Per metric key: steps ascending and their values (null = nan/inf in the log). */
export interface Series {
  steps: number[];
  values: Array<number | null>;
}
export type SeriesMap = Record<string, Series>;

/** Most log lines kept in the page (the full log stays with the backend). */
export const LOG_CAP = 4000;

export interface JobView {
  key: string;
  lines: string[];
  /** Byte offset after the last text received. */
  offset: number;
  /** Earlier lines were dropped (core memory or LOG_CAP). */
  truncated: boolean;
  series: SeriesMap;
  loading: boolean;
  error: string | null;
}

export interface Baseline {
  key: string;
  label: string;
  series: SeriesMap;
}

interface TrainingState {
  templates: TemplateInfo[];
  templateId: string | null;
  values: Record<string, FormValue>;
  issues: Record<string, string>;
  rendered: RenderedJob | null;
  renderError: string | null;
  connectors: ConnectorInfo[];
  secrets: string[];
  /** Which secret store the core uses (OS keychain or encrypted file); null until connectors load. */
  secretStore: ConnectorList['secretStore'] | null;
  connector: string;
  probe: Record<string, { ok: boolean; message: string; busy: boolean }>;
  jobName: string;
  submitting: boolean;
  submitError: string | null;
  jobs: TrainingJob[];
  /** Lines of jobs.jsonl the core skipped (unreadable, or written by another version), one sentence each. */
  jobWarnings: string[];
  view: JobView | null;
  /** Other jobs drawn over the open job's charts, in the order they were added. */
  overlays: Baseline[];
  smoothing: number;
  evalCommand: { checkpoint: string; command: string; note: string } | null;
  /** Per checkpoint path: the outcome of "Add to Models" (a local ONNX model folder → the Models registry). */
  modelAdds: Record<string, { busy: boolean; ok: boolean; message: string }>;
  error: string | null;
  init(): Promise<void>;
  selectTemplate(id: string): void;
  setValue(name: string, value: FormValue): void;
  setConnector(name: string): void;
  setJobName(name: string): void;
  render(): Promise<void>;
  submit(): Promise<void>;
  /** Look again for what the templates need on this machine ("Check again": torch installed since the page opened). */
  recheckTemplates(): Promise<void>;
  loadConnectors(): Promise<void>;
  saveConnector(config: RemoteConnectorConfig): Promise<void>;
  deleteConnector(name: string): Promise<void>;
  probeConnector(name: string): Promise<void>;
  setSecret(name: string, value: string): Promise<void>;
  deleteSecret(name: string): Promise<void>;
  loadJobs(): Promise<void>;
  openJob(key: string): Promise<void>;
  closeJob(): void;
  cancelJob(key: string): Promise<void>;
  /** Overlay another job's metrics on the charts (again: no change). */
  addOverlay(key: string): Promise<void>;
  removeOverlay(key: string): void;
  setSmoothing(s: number): void;
  prepareEval(checkpoint: string): Promise<void>;
  addCheckpointToModels(checkpoint: string): Promise<void>;
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** Initial form values from the template's defaults. */
export function initialValues(fields: readonly TemplateField[]): Record<string, FormValue> {
  const out: Record<string, FormValue> = {};
  for (const f of fields) {
    const d = f.default;
    if (f.type === 'boolean') out[f.name] = d === true;
    else if (f.type === 'enum[]') out[f.name] = Array.isArray(d) ? d.map(String) : [];
    else if (f.type === 'string[]') out[f.name] = Array.isArray(d) ? d.map(String).join('\n') : '';
    else out[f.name] = d === undefined || d === null ? '' : String(d);
  }
  return out;
}

/** Form values → the parameter object the template's schema validates (empty optional fields fall back to defaults). */
export function formToParams(fields: readonly TemplateField[], values: Record<string, FormValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (name: string, v: unknown): void => {
    const keys = name.split('.');
    let cur = out;
    for (const k of keys.slice(0, -1)) {
      if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {};
      cur = cur[k] as Record<string, unknown>;
    }
    cur[keys[keys.length - 1] as string] = v;
  };
  for (const f of fields) {
    const v = values[f.name];
    if (v === undefined) continue;
    if (f.type === 'boolean') put(f.name, v === true);
    else if (f.type === 'enum[]') put(f.name, Array.isArray(v) ? v : []);
    else if (f.type === 'string[]') {
      const items = String(v).split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
      if (items.length) put(f.name, items);
    } else if (f.type === 'number' || f.type === 'integer') {
      const s = String(v).trim();
      if (s === '') {
        if (f.nullable) put(f.name, null);
      } else {
        const n = Number(s);
        // Not a number: pass the text so the schema names the field ("must be a number").
        put(f.name, Number.isFinite(n) ? n : s);
      }
    } else {
      const s = String(v);
      if (s.trim() !== '') put(f.name, s);
    }
  }
  return out;
}

/** Merge points into series (a repeated step overwrites, as the core's MetricSeries does). */
export function mergePoints(series: SeriesMap, points: readonly TrainingMetricPoint[]): SeriesMap {
  const next: SeriesMap = { ...series };
  for (const p of points) {
    for (const [k, v] of Object.entries(p.metrics)) {
      const cur = next[k] ?? { steps: [], values: [] };
      const s = cur === series[k] ? { steps: [...cur.steps], values: [...cur.values] } : cur;
      const last = s.steps[s.steps.length - 1];
      if (last === undefined || p.step > last) {
        s.steps.push(p.step);
        s.values.push(v);
      } else {
        const i = s.steps.findIndex((x) => x >= p.step);
        if (s.steps[i] === p.step) s.values[i] = v;
        else {
          s.steps.splice(i, 0, p.step);
          s.values.splice(i, 0, v);
        }
      }
      next[k] = s;
    }
  }
  return next;
}

function appendLines(view: JobView, text: string): Pick<JobView, 'lines' | 'truncated'> {
  const add = text.replace(/\n$/, '').split('\n');
  let lines = view.lines.concat(add);
  let truncated = view.truncated;
  if (lines.length > LOG_CAP) {
    lines = lines.slice(lines.length - LOG_CAP);
    truncated = true;
  }
  return { lines, truncated };
}

let subscribed = false;
let renderTimer: ReturnType<typeof setTimeout> | null = null;
let renderSeq = 0;

export const useTrainingStore = create<TrainingState>()((set, get) => ({
  templates: [],
  templateId: null,
  values: {},
  issues: {},
  rendered: null,
  renderError: null,
  connectors: [],
  secrets: [],
  secretStore: null,
  connector: 'local',
  probe: {},
  jobName: '',
  submitting: false,
  submitError: null,
  jobs: [],
  jobWarnings: [],
  view: null,
  overlays: [],
  smoothing: 0.6,
  evalCommand: null,
  modelAdds: {},
  error: null,

  async init() {
    const client = getClient();
    if (!subscribed) {
      subscribed = true;
      client.on('training:state', (job) => {
        const jobs = get().jobs;
        const i = jobs.findIndex((j) => j.key === job.key);
        set({ jobs: i >= 0 ? jobs.map((j) => (j.key === job.key ? job : j)) : [job, ...jobs] });
      });
      client.on('training:log', ({ key, text, nextOffset }) => {
        const v = get().view;
        if (!v || v.key !== key || nextOffset <= v.offset) return;
        set({ view: { ...v, ...appendLines(v, text), offset: nextOffset } });
      });
      client.on('training:metric', ({ key, points }) => {
        const v = get().view;
        if (v && v.key === key) set({ view: { ...v, series: mergePoints(v.series, points) } });
      });
    }
    try {
      const { templates } = await client.call('training:templates', {});
      set({ templates, error: null });
      if (!get().templateId && templates[0]) get().selectTemplate(templates[0].id);
    } catch (e) {
      set({ error: message(e) });
    }
    await Promise.all([get().loadConnectors(), get().loadJobs()]);
  },

  selectTemplate(id) {
    const t = get().templates.find((x) => x.id === id);
    if (!t) return;
    set({ templateId: id, values: initialValues(t.fields), issues: {}, rendered: null, renderError: null, submitError: null, jobName: id });
    void get().render();
  },
  setValue(name, value) {
    set({ values: { ...get().values, [name]: value } });
    if (renderTimer) clearTimeout(renderTimer);
    renderTimer = setTimeout(() => void get().render(), 200);
  },
  setConnector(name) {
    set({ connector: name });
    void get().render();
  },
  setJobName(jobName) {
    set({ jobName });
  },

  async render() {
    const { templateId, templates, values, connector } = get();
    const t = templates.find((x) => x.id === templateId);
    if (!t) return;
    const seq = ++renderSeq;
    try {
      const r = await getClient().call('training:render', { templateId: t.id, params: formToParams(t.fields, values), connector });
      if (seq !== renderSeq) return;
      if (r.ok) set({ rendered: r.job, issues: {}, renderError: null });
      else set({ rendered: null, issues: Object.fromEntries(r.issues.map((i: FieldIssue) => [i.path, i.message])), renderError: null });
    } catch (e) {
      if (seq === renderSeq) set({ rendered: null, renderError: message(e) });
    }
  },

  async submit() {
    const { templateId, templates, values, connector, jobName } = get();
    const t = templates.find((x) => x.id === templateId);
    if (!t) return;
    set({ submitting: true, submitError: null });
    try {
      const job = await getClient().call('training:submit', { templateId: t.id, params: formToParams(t.fields, values), connector, ...(jobName ? { name: jobName } : {}) });
      const jobs = get().jobs.filter((j) => j.key !== job.key);
      set({ jobs: [job, ...jobs], submitting: false });
      await get().openJob(job.key);
    } catch (e) {
      set({ submitting: false, submitError: message(e) });
    }
  },

  async recheckTemplates() {
    try {
      const { templates } = await getClient().call('training:templates', { recheck: true });
      set({ templates, error: null });
    } catch (e) {
      set({ error: message(e) });
    }
  },

  async loadConnectors() {
    try {
      const r = await getClient().call('training:connectors', {});
      const keep = r.connectors.some((c) => c.name === get().connector);
      set({ connectors: r.connectors, secrets: r.secrets, secretStore: r.secretStore ?? null, ...(keep ? {} : { connector: 'local' }) });
    } catch (e) {
      set({ error: message(e) });
    }
  },
  async saveConnector(config) {
    const r = await getClient().call('training:connectorSave', { config });
    set({ connectors: r.connectors, secrets: r.secrets, secretStore: r.secretStore ?? null });
  },
  async deleteConnector(name) {
    const r = await getClient().call('training:connectorDelete', { name });
    set({ connectors: r.connectors, secrets: r.secrets, secretStore: r.secretStore ?? null, ...(get().connector === name ? { connector: 'local' } : {}) });
  },
  async probeConnector(name) {
    set({ probe: { ...get().probe, [name]: { ok: false, message: 'connecting…', busy: true } } });
    try {
      const r = await getClient().call('training:connectorProbe', { name });
      set({ probe: { ...get().probe, [name]: { ...r, busy: false } } });
    } catch (e) {
      set({ probe: { ...get().probe, [name]: { ok: false, message: message(e), busy: false } } });
    }
  },
  async setSecret(name, value) {
    const r = await getClient().call('training:secretSet', { name, value });
    set({ connectors: r.connectors, secrets: r.secrets, secretStore: r.secretStore ?? null });
  },
  async deleteSecret(name) {
    const r = await getClient().call('training:secretDelete', { name });
    set({ connectors: r.connectors, secrets: r.secrets, secretStore: r.secretStore ?? null });
  },

  async loadJobs() {
    try {
      const { jobs, issues } = await getClient().call('training:jobs', {});
      set({ jobs, jobWarnings: issues ?? [] });
    } catch (e) {
      set({ error: message(e) });
    }
  },
  async openJob(key) {
    set({ view: { key, lines: [], offset: 0, truncated: false, series: {}, loading: true, error: null }, evalCommand: null });
    try {
      const snap = await getClient().call('training:open', { key });
      const v = get().view;
      if (!v || v.key !== key) return;
      // Events that arrived while the snapshot was on its way: keep whatever is past the snapshot's offset.
      const base: JobView = { key, lines: [], offset: snap.logOffset, truncated: snap.logTruncated, series: mergePoints({}, snap.points), loading: false, error: null };
      const withLog = snap.log ? { ...base, ...appendLines(base, snap.log) } : base;
      const later = v.offset > snap.logOffset ? v.lines : [];
      set({
        view: { ...withLog, lines: withLog.lines.concat(later).slice(-LOG_CAP), offset: Math.max(v.offset, snap.logOffset), series: mergePoints(withLog.series, []) },
        jobs: get().jobs.map((j) => (j.key === key ? snap.job : j)),
      });
      if (Object.keys(v.series).length) set({ view: { ...get().view!, series: mergePoints(get().view!.series, seriesToPoints(v.series)) } });
    } catch (e) {
      const v = get().view;
      if (v && v.key === key) set({ view: { ...v, loading: false, error: message(e) } });
    }
  },
  closeJob() {
    set({ view: null, evalCommand: null });
  },
  async cancelJob(key) {
    try {
      const job = await getClient().call('training:cancel', { key });
      set({ jobs: get().jobs.map((j) => (j.key === key ? job : j)) });
    } catch (e) {
      set({ error: message(e) });
    }
  },
  removeOverlay(key) {
    set({ overlays: get().overlays.filter((o) => o.key !== key) });
  },
  async addOverlay(key) {
    if (get().overlays.some((o) => o.key === key)) return;
    try {
      const snap = await getClient().call('training:open', { key });
      if (get().overlays.some((o) => o.key === key)) return;
      set({ overlays: [...get().overlays, { key, label: `${snap.job.name} · ${snap.job.id}`, series: mergePoints({}, snap.points) }] });
    } catch (e) {
      set({ error: message(e) });
    }
  },
  setSmoothing(smoothing) {
    set({ smoothing });
  },
  async prepareEval(checkpoint) {
    const v = get().view;
    if (!v) return;
    try {
      const r = await getClient().call('training:evalCommand', { key: v.key, checkpoint });
      set({ evalCommand: { checkpoint, ...r } });
    } catch (e) {
      set({ error: message(e) });
    }
  },
  async addCheckpointToModels(checkpoint) {
    const put = (v: { busy: boolean; ok: boolean; message: string }): void => set({ modelAdds: { ...get().modelAdds, [checkpoint]: v } });
    put({ busy: true, ok: false, message: 'adding…' });
    try {
      const r = await getClient().call('models:add', { path: checkpoint });
      put({ busy: false, ok: true, message: `added as "${r.model.id}" (${r.model.dtypes.join(', ')}): open it under Models` });
    } catch (e) {
      put({ busy: false, ok: false, message: message(e) });
    }
  },
}));

function seriesToPoints(s: SeriesMap): TrainingMetricPoint[] {
  const by = new Map<number, Record<string, number | null>>();
  for (const [k, v] of Object.entries(s)) {
    v.steps.forEach((step, i) => {
      const m = by.get(step) ?? {};
      m[k] = v.values[i] ?? null;
      by.set(step, m);
    });
  }
  return [...by.entries()].map(([step, metrics]) => ({ step, metrics }));
}

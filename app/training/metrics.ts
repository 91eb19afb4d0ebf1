/**
 * Per-step training metrics from trainer output, and a series accumulator with EMA smoothing.
 * Formats (sources in /docs of connectors reference §4):
 *  - verl console logger: `step:12 - actor/pg_loss:-0.01 - critic/score/mean:np.float64(0.53) - …`
 *    (verl/utils/logger/aggregate_logger.py::concat_dict_to_str; values are pprint reprs, so numpy≥2 gives
 *    `np.float64(x)`, and `nan`/`inf` appear). Under Ray each line carries `(TaskRunner pid=N)` and ANSI colours.
 *  - verl FileLogger JSONL: `{"step": N, "data": {...}}` (Python json may write NaN/Infinity).
 *  - OpenRLHF ≥ 2026-01: `… ✨ Global step N: {python dict repr}`; older: tqdm postfix `act_loss=…, reward=…`.
 *  - Pixel Reasoner RL (its OpenRLHF fork, `ppo_train`: `pbar.set_postfix(status)`): tqdm bars
 *    `Train epoch [e/E]: 100%|…| n/n [mm:ss<…, policy_loss=…, actor_lr=…, reward=…, …]`, one bar per PPO
 *    epoch, `\r`-separated refreshes; a finished bar of the last epoch is one training step.
 *  - ms-swift `logging.jsonl` (one dict per log step; `global_step/max_steps` is "12/500" or a number),
 *    and its console print of the same dict as a Python repr.
 */

export interface MetricPoint {
  step: number;
  metrics: Record<string, number>;
  source: 'verl-console' | 'verl-jsonl' | 'openrlhf' | 'openrlhf-tqdm' | 'ms-swift';
}

const ANSI_RE = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;
const RAY_PREFIX_RE = /^\((?:[A-Za-z_][\w.]*)\s+pid=\d+(?:,\s*ip=[^)]*)?\)\s*/;

/** Remove ANSI codes and a Ray actor prefix like `(TaskRunner pid=123)`. */
export function cleanLogLine(line: string): string {
  return line.replace(ANSI_RE, '').replace(/\r$/, '').replace(RAY_PREFIX_RE, '');
}

/** A pprint value → number: `0.5`, `1e-06`, `nan`, `inf`, `-inf`, `True`, `np.float64(0.5)`, `tensor(0.5)`. */
export function parseNumericRepr(s: string): number | null {
  let v = s.trim();
  for (let i = 0; i < 3; i++) {
    const m = /^[A-Za-z_][\w.]*\((.*)\)$/.exec(v);
    if (!m) break;
    v = (m[1] as string).split(',')[0]?.trim() ?? '';
  }
  if (v === 'True') return 1;
  if (v === 'False') return 0;
  const low = v.toLowerCase();
  if (low === 'nan' || low === '-nan') return Number.NaN;
  if (low === 'inf' || low === '+inf' || low === 'infinity') return Number.POSITIVE_INFINITY;
  if (low === '-inf' || low === '-infinity') return Number.NEGATIVE_INFINITY;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(v)) return null;
  return Number(v);
}

export function parseVerlConsoleLine(raw: string): MetricPoint | null {
  const line = cleanLogLine(raw).trim();
  const m = /^step:(\d+)(?: - (.*))?$/.exec(line);
  if (!m) return null;
  const metrics: Record<string, number> = {};
  for (const pair of (m[2] ?? '').split(' - ')) {
    const i = pair.lastIndexOf(':');
    if (i <= 0) continue;
    const v = parseNumericRepr(pair.slice(i + 1));
    if (v !== null) metrics[pair.slice(0, i)] = v;
  }
  return { step: Number(m[1]), metrics, source: 'verl-console' };
}

/** JSON with Python's NaN/Infinity tokens allowed. */
export function parseLooseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return JSON.parse(text.replace(/([:[,]\s*)(NaN|-?Infinity)(?=\s*[,}\]])/g, (_m, pre: string, tok: string) => `${pre}"__py_${tok}__"`), (_k, v: unknown) =>
      v === '__py_NaN__' ? Number.NaN : v === '__py_Infinity__' ? Number.POSITIVE_INFINITY : v === '__py_-Infinity__' ? Number.NEGATIVE_INFINITY : v,
    );
  }
}

function numericEntries(o: Record<string, unknown>, prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'number') out[prefix + k] = v;
    else if (typeof v === 'boolean') out[prefix + k] = v ? 1 : 0;
    else if (v && typeof v === 'object' && !Array.isArray(v)) Object.assign(out, numericEntries(v as Record<string, unknown>, `${prefix}${k}/`));
  }
  return out;
}

export function parseVerlJsonlLine(line: string): MetricPoint | null {
  const t = line.trim();
  if (!t.startsWith('{')) return null;
  let j: unknown;
  try {
    j = parseLooseJson(t);
  } catch {
    return null;
  }
  if (!j || typeof j !== 'object') return null;
  const o = j as { step?: unknown; data?: unknown };
  if (typeof o.step !== 'number' || !o.data || typeof o.data !== 'object') return null;
  return { step: o.step, metrics: numericEntries(o.data as Record<string, unknown>), source: 'verl-jsonl' };
}

/** Parse a Python literal (dict/list/tuple/str/number/True/False/None/nan/inf, numpy/tensor wrappers → inner value). */
export function parsePythonLiteral(src: string): unknown {
  let i = 0;
  const ws = (): void => {
    while (i < src.length && /\s/.test(src[i] as string)) i++;
  };
  const fail = (what: string): never => {
    throw new Error(`python literal: ${what} at ${i}: ${JSON.stringify(src.slice(i, i + 30))}`);
  };
  const value = (): unknown => {
    ws();
    const c = src[i];
    if (c === '{') {
      i++;
      const o: Record<string, unknown> = {};
      ws();
      if (src[i] === '}') return i++, o;
      for (;;) {
        const k = value();
        ws();
        if (src[i] !== ':') fail('expected :');
        i++;
        o[String(k)] = value();
        ws();
        if (src[i] === ',') {
          i++;
          ws();
          if (src[i] === '}') return i++, o;
          continue;
        }
        if (src[i] === '}') return i++, o;
        fail('expected , or }');
      }
    }
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      i++;
      const a: unknown[] = [];
      ws();
      if (src[i] === close) return i++, a;
      for (;;) {
        a.push(value());
        ws();
        if (src[i] === ',') {
          i++;
          ws();
          if (src[i] === close) return i++, a;
          continue;
        }
        if (src[i] === close) return i++, a;
        fail(`expected , or ${close}`);
      }
    }
    if (c === "'" || c === '"') {
      const q = c;
      i++;
      let s = '';
      while (i < src.length && src[i] !== q) {
        if (src[i] === '\\') {
          const n = src[i + 1];
          s += n === 'n' ? '\n' : n === 't' ? '\t' : (n ?? '');
          i += 2;
        } else s += src[i++];
      }
      if (src[i] !== q) fail('unterminated string');
      i++;
      return s;
    }
    const m = /^[A-Za-z_][\w.]*/.exec(src.slice(i));
    if (m) {
      const w = m[0];
      i += w.length;
      if (src[i] === '(') {
        const inner = value(); // a tuple-ish: np.float64(0.5) → [0.5]
        return Array.isArray(inner) && inner.length === 1 ? inner[0] : inner;
      }
      if (w === 'True') return true;
      if (w === 'False') return false;
      if (w === 'None') return null;
      if (w === 'nan') return Number.NaN;
      if (w === 'inf') return Number.POSITIVE_INFINITY;
      return w;
    }
    const n = /^[+-]?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)/i.exec(src.slice(i));
    if (n) {
      i += n[0].length;
      return parseNumericRepr(n[0]);
    }
    return fail('unexpected character');
  };
  const v = value();
  ws();
  if (i !== src.length) fail('trailing text');
  return v;
}

export function parseOpenRlhfLine(raw: string): MetricPoint | null {
  const line = cleanLogLine(raw);
  const m = /Global step (\d+): (\{.*\})\s*$/.exec(line);
  if (m) {
    try {
      const d = parsePythonLiteral(m[2] as string);
      if (d && typeof d === 'object' && !Array.isArray(d)) return { step: Number(m[1]), metrics: numericEntries(d as Record<string, unknown>), source: 'openrlhf' };
    } catch {
      return null;
    }
  }
  return null;
}

/** Older OpenRLHF tqdm postfix (`act_loss=…, reward=…`); the step is counted by the caller. */
export function parseOpenRlhfTqdm(raw: string): Record<string, number> | null {
  const seg = cleanLogLine(raw).split('\r').pop() ?? '';
  if (!/act_loss=/.test(seg)) return null;
  const out: Record<string, number> = {};
  for (const m of seg.matchAll(/([A-Za-z_][\w/]*)=([^,\]\s]+)/g)) {
    const v = parseNumericRepr(m[2] as string);
    if (v !== null) out[m[1] as string] = v;
  }
  return Object.keys(out).length ? out : null;
}

/** OpenRLHF's `short_status` names in `ppo_loop` bars (`pg=…, rm=…`) → the names its status dict and wandb use. */
const TQDM_SHORT: Record<string, string> = { pg: 'policy_loss', rm: 'reward', ret: 'return', glen: 'response_length', tlen: 'total_length', act_lr: 'actor_lr', cri: 'critic_loss', vals: 'values', cri_lr: 'critic_lr', ptx: 'ptx_loss' };

/**
 * A Pixel Reasoner tqdm line: the last refresh holding `policy_loss=`, its postfix metrics, and whether it
 * ends a step (the bar is full and, when the description names epochs, it is the last epoch's bar).
 */
export function parsePixelReasonerTqdm(raw: string): { metrics: Record<string, number>; endsStep: boolean } | null {
  const seg = cleanLogLine(raw).split('\r').filter((x) => /[ ,]policy_loss=|[ ,]pg=/.test(x)).pop();
  if (!seg) return null;
  const bar = /(\d+)\/(\d+) \[/.exec(seg);
  const epoch = /epoch \[(\d+)\/(\d+)\]/i.exec(seg);
  // The postfix is what follows the time block: `[elapsed<remaining, rate, k=v, k=v]`.
  const post = seg.slice(seg.lastIndexOf('['));
  const metrics: Record<string, number> = {};
  for (const m of post.matchAll(/([A-Za-z_][\w/]*)=([^,\]\s]+)/g)) {
    const v = parseNumericRepr(m[2] as string);
    if (v !== null) metrics[TQDM_SHORT[m[1] as string] ?? (m[1] as string)] = v;
  }
  if (!Object.keys(metrics).length) return null;
  const full = !!bar && bar[1] === bar[2];
  return { metrics, endsStep: full && (!epoch || epoch[1] === epoch[2]) };
}

function swiftStep(d: Record<string, unknown>): number | null {
  const g = d['global_step/max_steps'];
  if (typeof g === 'string') {
    const m = /^(\d+)\s*\/\s*\d+$/.exec(g.trim());
    if (m) return Number(m[1]);
  }
  if (typeof g === 'number' && Number.isFinite(g)) return g;
  for (const k of ['global_step', 'step']) if (typeof d[k] === 'number') return d[k] as number;
  return null;
}

/** One ms-swift log dict (a logging.jsonl line, or its console repr). `fallbackStep` counts lines when no step is given. */
export function parseMsSwiftLine(raw: string, fallbackStep?: number): MetricPoint | null {
  const line = cleanLogLine(raw).trim();
  if (!line.startsWith('{')) return null;
  let d: unknown;
  try {
    d = line.includes("'") ? parsePythonLiteral(line) : parseLooseJson(line);
  } catch {
    return null;
  }
  if (!d || typeof d !== 'object' || Array.isArray(d)) return null;
  const rec = d as Record<string, unknown>;
  if ('data' in rec && 'step' in rec) return null; // verl JSONL
  const step = swiftStep(rec) ?? fallbackStep;
  if (step === undefined || step === null) return null;
  const metrics = numericEntries(rec);
  delete metrics['global_step/max_steps'];
  if (!Object.keys(metrics).length) return null;
  return { step, metrics, source: 'ms-swift' };
}

export type MetricFormat = 'auto' | 'verl-console' | 'verl-jsonl' | 'openrlhf' | 'ms-swift';

/**
 * Feed text (any chunking); get parsed points. Keeps a partial last line until its newline arrives.
 * 'auto' tries every format per line.
 */
export class MetricStreamParser {
  private partial = '';
  private tqdmSteps = 0;
  private swiftLines = 0;
  constructor(private readonly format: MetricFormat = 'auto') {}
  push(text: string): MetricPoint[] {
    const all = this.partial + text;
    const lines = all.split('\n');
    this.partial = lines.pop() ?? '';
    return lines.flatMap((l) => this.line(l));
  }
  /** Parse the held partial line (end of stream). */
  end(): MetricPoint[] {
    const l = this.partial;
    this.partial = '';
    return l ? this.line(l) : [];
  }
  private line(l: string): MetricPoint[] {
    const f = this.format;
    if (f === 'auto' || f === 'verl-console') {
      const p = parseVerlConsoleLine(l);
      if (p) return [p];
    }
    if (f === 'auto' || f === 'verl-jsonl') {
      const p = parseVerlJsonlLine(l);
      if (p) return [p];
    }
    if (f === 'auto' || f === 'openrlhf') {
      const p = parseOpenRlhfLine(l);
      if (p) return [p];
      const t = parseOpenRlhfTqdm(l);
      if (t) return [{ step: ++this.tqdmSteps, metrics: t, source: 'openrlhf-tqdm' }];
      const pr = parsePixelReasonerTqdm(l);
      if (pr?.endsStep) return [{ step: ++this.tqdmSteps, metrics: pr.metrics, source: 'openrlhf-tqdm' }];
      if (pr) return [];
    }
    if (f === 'auto' || f === 'ms-swift') {
      const p = parseMsSwiftLine(l, this.swiftLines + 1);
      if (p) {
        this.swiftLines += 1;
        return [p];
      }
    }
    return [];
  }
}

export interface SeriesView {
  key: string;
  steps: number[];
  values: number[];
  /** EMA-smoothed values (TensorBoard-style, debiased; non-finite values are carried over, not averaged in). */
  smoothed: number[];
}

/** Accumulates points per metric key. A repeated step overwrites (re-reading a log is idempotent). */
export class MetricSeries {
  private readonly data = new Map<string, Map<number, number>>();
  /** @param smoothing EMA weight in [0, 1): 0 = raw, 0.9 = heavy. */
  constructor(public smoothing = 0.6) {
    if (!(smoothing >= 0 && smoothing < 1)) throw new RangeError(`smoothing must be in [0, 1), got ${smoothing}`);
  }
  add(point: Pick<MetricPoint, 'step' | 'metrics'>): void {
    for (const [k, v] of Object.entries(point.metrics)) {
      let m = this.data.get(k);
      if (!m) this.data.set(k, (m = new Map()));
      m.set(point.step, v);
    }
  }
  addAll(points: Iterable<Pick<MetricPoint, 'step' | 'metrics'>>): void {
    for (const p of points) this.add(p);
  }
  keys(): string[] {
    return [...this.data.keys()].sort();
  }
  get size(): number {
    return this.data.size;
  }
  latest(key: string): { step: number; value: number } | undefined {
    const v = this.get(key);
    const i = v.steps.length - 1;
    return i >= 0 ? { step: v.steps[i] as number, value: v.values[i] as number } : undefined;
  }
  get(key: string, smoothing = this.smoothing): SeriesView {
    const m = this.data.get(key);
    const steps = m ? [...m.keys()].sort((a, b) => a - b) : [];
    const values = steps.map((s) => m?.get(s) as number);
    const smoothed: number[] = [];
    let acc = 0;
    let n = 0;
    let last = Number.NaN;
    for (const v of values) {
      if (Number.isFinite(v)) {
        acc = smoothing * acc + (1 - smoothing) * v;
        n += 1;
        last = smoothing === 0 ? v : acc / (1 - smoothing ** n);
      }
      smoothed.push(last);
    }
    return { key, steps, values, smoothed };
  }
}

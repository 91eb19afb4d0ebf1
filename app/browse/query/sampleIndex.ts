/**
 * A columnar index over sample rows for the sample table: 50 000+ rows filtered, sorted and searched
 * in milliseconds, without keeping trajectories in memory. Bodies stay on disk (the run store reads them
 * lazily); the index keeps only the columns the table and the query language need plus one lower-cased
 * text per row for full-text search.
 *
 * Row ids are dense integers in insertion order. A (run, qid) seen again replaces its row in place
 * (a resumed run may re-record a sample).
 */
import type { SampleRecord } from '../../contract/trajectory';
import { sampleKey } from '../../labels/fold';
import type { NumberField, QueryField, StringField } from './fields';
import { compileQuery, type CompiledQuery, type QuerySource } from './compile';

class DictColumn {
  codes: Int32Array;
  readonly values: string[] = [];
  private readonly lowerArr: string[] = [];
  /** value → code; undefined after `restore` until a value is next added (50 000 qids cost a start-up 20–50 ms). */
  private map: Map<string, number> | undefined = new Map<string, number>();
  private rankCache: { size: number; rank: Int32Array } | undefined;
  constructor(cap: number) {
    this.codes = new Int32Array(cap).fill(-1);
  }
  grow(cap: number): void {
    const c = new Int32Array(cap).fill(-1);
    c.set(this.codes);
    this.codes = c;
  }
  set(row: number, v: string | undefined): void {
    if (v === undefined) {
      this.codes[row] = -1;
      return;
    }
    const map = (this.map ??= this.valueMap());
    let code = map.get(v);
    if (code === undefined) {
      code = this.values.length;
      this.values.push(v);
      map.set(v, code);
    }
    this.codes[row] = code;
  }
  /** Take the values and codes of a persisted index as they are (codes stay the same). */
  restore(values: readonly string[], codes: Int32Array): void {
    this.values.length = 0;
    this.lowerArr.length = 0;
    this.rankCache = undefined;
    for (const v of values) this.values.push(v);
    this.codes.set(codes);
    this.map = undefined;
  }
  private valueMap(): Map<string, number> {
    const m = new Map<string, number>();
    this.values.forEach((v, code) => m.set(v, code));
    return m;
  }
  /** The values lower-cased (for case-insensitive matching), computed when first asked for. */
  get lower(): readonly string[] {
    for (let i = this.lowerArr.length; i < this.values.length; i++) this.lowerArr.push(this.values[i]!.toLowerCase());
    return this.lowerArr;
  }
  get(row: number): string | undefined {
    const c = this.codes[row]!;
    return c >= 0 ? this.values[c] : undefined;
  }
  /** code → rank in natural (numeric-aware, case-insensitive) order. */
  rank(): Int32Array {
    if (this.rankCache?.size === this.values.length) return this.rankCache.rank;
    const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
    const order = this.values.map((_, i) => i).sort((a, b) => collator.compare(this.values[a]!, this.values[b]!) || (this.values[a]! < this.values[b]! ? -1 : 1));
    const rank = new Int32Array(this.values.length);
    order.forEach((code, r) => (rank[code] = r));
    this.rankCache = { size: this.values.length, rank };
    return rank;
  }
}

export type SortField = QueryField;

/** A sample index as plain columns (dictionary-coded text fields, typed numbers), for persisting beside a run. */
export interface IndexColumns {
  n: number;
  run: { codes: Int32Array; values: string[] };
  qid: { codes: Int32Array; values: string[] };
  bench: { codes: Int32Array; values: string[] };
  category: { codes: Int32Array; values: string[] };
  stop: { codes: Int32Array; values: string[] };
  score: Float64Array;
  calls: Float64Array;
  tool_errors: Float64Array;
  latency: Float64Array;
  correct: Int8Array;
  disagree: Int8Array;
  /** Rows re-scored under several scorers: [row, scorer → score]. */
  scores: Array<[number, Record<string, number>]>;
  questions: string[];
}

/** The fields the statistics read (app/sweeps/stats StatRow). */
export type StatRowView = Pick<SampleRecord, 'qid' | 'bench' | 'correct' | 'score' | 'calls' | 'tool_errors' | 'stop_reason'> & { category?: string };
export interface SortKey {
  field: SortField;
  dir?: 'asc' | 'desc';
}

/** What the table shows per row (no trajectory). */
export interface SampleRow {
  id: number;
  run: string;
  qid: string;
  bench: string;
  category?: string;
  question: string;
  correct: boolean;
  score: number;
  /** Every scorer's score, when the sample was re-scored (`loupe rescore`). */
  scores?: Readonly<Record<string, number>>;
  /** Re-scored and correct under one scorer but not the other. */
  disagree?: boolean;
  calls: number;
  tool_errors: number;
  stop: string;
  latency?: number;
  labels: readonly string[];
}

export type SearchMode = 'scan' | 'tokens';

export interface SelectOptions {
  query?: string | CompiledQuery;
  search?: string;
  sort?: readonly SortKey[];
  searchMode?: SearchMode;
}

const TOKEN_RE = /[\p{L}\p{N}_]+/gu;

/** Characters per scan chunk (see SampleIndex.scanChunks). */
export const SCAN_CHUNK_CHARS = 4_000_000;

interface ScanChunk {
  start: number;
  end: number;
  big: string;
  offsets: Int32Array;
}

/** Image file names a record keeps (`extra.image`, `image_path`, `images`: the eval runner's and the importers'). */
function imageNames(rec: SampleRecord): string[] {
  const ex = rec.extra ?? {};
  const out: string[] = [];
  for (const k of ['image', 'image_path', 'images']) {
    const v = ex[k];
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') out.push(x);
  }
  return out;
}

/**
 * The text searched for a record: its id and image file names (a user looks for `sa_4690.jpg`), the question,
 * answer, and the model's text (prediction, every turn).
 */
export function searchableText(rec: SampleRecord): string {
  const parts: string[] = [rec.qid, ...imageNames(rec), rec.question];
  if (rec.answer !== undefined && rec.answer !== null) parts.push(typeof rec.answer === 'string' ? rec.answer : JSON.stringify(rec.answer));
  parts.push(rec.prediction);
  const t = rec.trajectory;
  if (t) {
    for (const turn of t.turns) parts.push(turn.text);
    if (t.finalText && t.finalText !== rec.prediction) parts.push(t.finalText);
  }
  return parts.join('\n').toLowerCase();
}

/** Split a search string into lower-cased terms; "quoted phrases" stay whole. */
export function searchTerms(text: string): string[] {
  const terms: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    const t = (m[1] ?? m[2] ?? '').toLowerCase();
    if (t) terms.push(t);
  }
  return terms;
}

export class SampleIndex implements QuerySource {
  private n = 0;
  private cap: number;
  private readonly dicts: Record<StringField, DictColumn>;
  private nums: Record<NumberField, Float64Array>;
  private correctCol: Int8Array;
  private disagreeCol: Int8Array;
  private scoreMaps: Array<Readonly<Record<string, number>> | undefined> = [];
  private readonly labelSets: Array<readonly string[] | undefined> = [];
  /** Search texts; undefined until first needed when the index was loaded from columns (see `fromColumns`). */
  private textsArr: string[] | undefined = [];
  private textLoader: (() => string[]) | undefined;
  private questions: string[] = [];
  /**
   * Row of each sample key. Built on first use when the index was restored from columns (`fromColumns`): opening a
   * 50 000-row run then costs no 50 000 string keys until a label or an added record needs them.
   */
  private byKeyMap: Map<string, number> | undefined = new Map<string, number>();
  /** Scan buffers: rows [start, end) joined into one string each, a few MB per chunk. */
  private chunks: ScanChunk[] = [];
  /** Rows from here on changed since the chunks were built. */
  private dirtyFrom = 0;
  private tokenCache: { version: number; postings: Map<string, Int32Array> } | undefined;
  private version = 0;
  /** Bumped by every change a filter can see (rows and labels): the last filter's result is kept until then. */
  private epoch = 0;
  /**
   * The last whole-index filter: the Runs page asks for rows (`select`) and statistics (`runs:stats`) of the same
   * filter at once, and the second asks again for what the first just computed.
   */
  private lastFilter: { query: string; epoch: number; ids: Int32Array } | undefined;

  private readonly chunkChars: number;

  /** `scanChunkChars`: characters per search chunk (tests use a small value to get many chunks). */
  constructor(capacity = 1024, opts: { scanChunkChars?: number } = {}) {
    this.cap = Math.max(16, capacity);
    this.chunkChars = opts.scanChunkChars ?? SCAN_CHUNK_CHARS;
    this.dicts = {
      run: new DictColumn(this.cap),
      qid: new DictColumn(this.cap),
      bench: new DictColumn(this.cap),
      category: new DictColumn(this.cap),
      stop: new DictColumn(this.cap),
    };
    this.nums = {
      score: new Float64Array(this.cap),
      calls: new Float64Array(this.cap),
      tool_errors: new Float64Array(this.cap),
      latency: new Float64Array(this.cap),
    };
    this.correctCol = new Int8Array(this.cap);
    this.disagreeCol = new Int8Array(this.cap);
  }

  /** Build from records of one run (or several: pass `{ run, record }` items). */
  static from(records: Iterable<SampleRecord | { run: string; record: SampleRecord }>, run = '', opts: { scanChunkChars?: number } = {}): SampleIndex {
    const arr = Array.isArray(records) ? records : [...records];
    const idx = new SampleIndex(arr.length, opts);
    for (const r of arr) {
      if ('record' in r) idx.add(r.run, r.record);
      else idx.add(run, r);
    }
    return idx;
  }

  get size(): number {
    return this.n;
  }

  /** The search texts, loaded on first use for an index restored from columns. */
  private get texts(): string[] {
    if (!this.textsArr) {
      const t = this.textLoader!();
      if (t.length !== this.n) throw new Error(`search texts: ${t.length} for ${this.n} rows`);
      this.textsArr = t;
      this.textLoader = undefined;
    }
    return this.textsArr;
  }

  /** Whether the search texts are in memory (false: an index restored from columns, not searched yet). */
  get textsLoaded(): boolean {
    return this.textsArr !== undefined;
  }

  /** Everything but the labels and search texts, as columns (see `fromColumns`; app/browse/runIndexFile writes them). */
  columns(): IndexColumns {
    const n = this.n;
    const dict = (f: StringField) => ({ codes: this.dicts[f].codes.slice(0, n), values: [...this.dicts[f].values] });
    const scores: Array<[number, Record<string, number>]> = [];
    for (let i = 0; i < n; i++) if (this.scoreMaps[i]) scores.push([i, { ...this.scoreMaps[i] }]);
    return {
      n,
      run: dict('run'),
      qid: dict('qid'),
      bench: dict('bench'),
      category: dict('category'),
      stop: dict('stop'),
      score: this.nums.score.slice(0, n),
      calls: this.nums.calls.slice(0, n),
      tool_errors: this.nums.tool_errors.slice(0, n),
      latency: this.nums.latency.slice(0, n),
      correct: this.correctCol.slice(0, n),
      disagree: this.disagreeCol.slice(0, n),
      scores,
      questions: this.questions.slice(0, n),
    };
  }

  /** The search texts in row order (loads them if needed). */
  textColumn(): readonly string[] {
    return this.texts;
  }

  /**
   * An index restored from columns. The search texts come from `texts` the first time a search needs them,
   * so opening a large run reads only the small columns.
   */
  static fromColumns(c: IndexColumns, texts: () => string[], opts: { scanChunkChars?: number } = {}): SampleIndex {
    const n = c.n;
    const idx = new SampleIndex(n, opts);
    for (const f of ['run', 'qid', 'bench', 'category', 'stop'] as const) {
      const src = c[f];
      if (src.codes.length !== n) throw new Error(`column ${f}: ${src.codes.length} codes for ${n} rows`);
      // A repeated value would give two codes one meaning; checked for the small dictionaries. The qids (one per
      // row) are not checked: a Set of 50 000 strings costs what the value map does, and a repeated qid still reads
      // back as its own value.
      if (f !== 'qid' && new Set(src.values).size !== src.values.length) throw new Error(`column ${f}: repeated values`);
      for (let i = 0; i < n; i++) {
        const code = src.codes[i]!;
        if (code < -1 || code >= src.values.length) throw new Error(`column ${f}: code ${code} out of range`);
      }
      idx.dicts[f].restore(src.values, src.codes);
    }
    for (const f of ['score', 'calls', 'tool_errors', 'latency'] as const) {
      if (c[f].length !== n) throw new Error(`column ${f}: ${c[f].length} values for ${n} rows`);
      idx.nums[f].set(c[f]);
    }
    if (c.correct.length !== n || c.disagree.length !== n || c.questions.length !== n) throw new Error('columns of different lengths');
    idx.correctCol.set(c.correct);
    idx.disagreeCol.set(c.disagree);
    for (const [row, m] of c.scores) if (row >= 0 && row < n) idx.scoreMaps[row] = m;
    idx.questions = c.questions;
    // every row has a run and a qid (the key map, built when first needed, relies on it)
    for (const f of ['run', 'qid'] as const) {
      const codes = c[f].codes;
      for (let i = 0; i < n; i++) if (codes[i]! < 0) throw new Error(`row ${i} has no ${f}`);
    }
    idx.byKeyMap = undefined;
    idx.labelSets.length = n;
    idx.n = n;
    idx.textsArr = undefined;
    idx.textLoader = texts;
    idx.dirtyFrom = 0;
    idx.version++;
    return idx;
  }

  /** One index over several (each with its own runs): rows in order, the search texts joined on first use. */
  static concat(parts: readonly SampleIndex[], opts: { scanChunkChars?: number } = {}): SampleIndex {
    const cols = parts.map((p) => p.columns());
    const n = cols.reduce((a, c) => a + c.n, 0);
    const dict = (f: StringField) => {
      const values: string[] = [];
      const seen = new Map<string, number>();
      const codes = new Int32Array(n);
      let at = 0;
      for (const c of cols) {
        const remap = c[f].values.map((v) => {
          let k = seen.get(v);
          if (k === undefined) seen.set(v, (k = values.push(v) - 1));
          return k;
        });
        for (let i = 0; i < c.n; i++) {
          const code = c[f].codes[i]!;
          codes[at + i] = code >= 0 ? remap[code]! : -1;
        }
        at += c.n;
      }
      return { codes, values };
    };
    const cat = <T extends Float64Array | Int8Array>(f: 'score' | 'calls' | 'tool_errors' | 'latency' | 'correct' | 'disagree', Ctor: new (n: number) => T): T => {
      const out = new Ctor(n);
      let at = 0;
      for (const c of cols) {
        out.set(c[f], at);
        at += c.n;
      }
      return out;
    };
    const scores: Array<[number, Record<string, number>]> = [];
    let at = 0;
    for (const c of cols) {
      for (const [row, m] of c.scores) scores.push([row + at, m]);
      at += c.n;
    }
    const merged: IndexColumns = {
      n,
      run: dict('run'),
      qid: dict('qid'),
      bench: dict('bench'),
      category: dict('category'),
      stop: dict('stop'),
      score: cat('score', Float64Array),
      calls: cat('calls', Float64Array),
      tool_errors: cat('tool_errors', Float64Array),
      latency: cat('latency', Float64Array),
      correct: cat('correct', Int8Array),
      disagree: cat('disagree', Int8Array),
      scores,
      questions: cols.flatMap((c) => c.questions),
    };
    return SampleIndex.fromColumns(merged, () => parts.flatMap((p) => [...p.textColumn()]), opts);
  }

  /** The fields statistics read, for one row. */
  statRow(id: number): StatRowView {
    const category = this.dicts.category.get(id);
    return {
      qid: this.dicts.qid.get(id)!,
      bench: this.dicts.bench.get(id)!,
      ...(category !== undefined ? { category } : {}),
      correct: this.correctCol[id] === 1,
      score: this.nums.score[id]!,
      calls: this.nums.calls[id]!,
      tool_errors: this.nums.tool_errors[id]!,
      stop_reason: this.dicts.stop.get(id)! as StatRowView['stop_reason'],
    };
  }

  private ensure(cap: number): void {
    if (cap <= this.cap) return;
    let c = this.cap;
    while (c < cap) c *= 2;
    for (const d of Object.values(this.dicts)) d.grow(c);
    for (const k of Object.keys(this.nums) as NumberField[]) {
      const a = new Float64Array(c);
      a.set(this.nums[k]);
      this.nums[k] = a;
    }
    const b = new Int8Array(c);
    b.set(this.correctCol);
    this.correctCol = b;
    const d = new Int8Array(c);
    d.set(this.disagreeCol);
    this.disagreeCol = d;
    this.cap = c;
  }

  private get byKey(): Map<string, number> {
    if (this.byKeyMap) return this.byKeyMap;
    const m = new Map<string, number>();
    const runs = this.dicts.run;
    const qids = this.dicts.qid;
    for (let i = 0; i < this.n; i++) m.set(sampleKey(runs.get(i)!, qids.get(i)!), i);
    return (this.byKeyMap = m);
  }

  /** Add (or replace) one record; returns its row id. */
  add(run: string, rec: SampleRecord): number {
    const key = sampleKey(run, rec.qid);
    const texts = this.texts; // loads them (a restored index) before the row count changes
    let row = this.byKey.get(key);
    if (row === undefined) {
      this.ensure(this.n + 1);
      row = this.n++;
      this.byKey.set(key, row);
      this.labelSets.push(undefined);
      texts.push('');
      this.questions.push('');
    }
    this.dicts.run.set(row, run);
    this.dicts.qid.set(row, rec.qid);
    this.dicts.bench.set(row, rec.bench);
    this.dicts.category.set(row, rec.category);
    this.dicts.stop.set(row, rec.stop_reason);
    this.nums.score[row] = rec.score;
    this.nums.calls[row] = rec.calls;
    this.nums.tool_errors[row] = rec.tool_errors;
    this.nums.latency[row] = rec.latency_ms ?? rec.trajectory?.latencyMs ?? NaN;
    this.correctCol[row] = rec.correct ? 1 : 0;
    const original = rec.extra?.['original'] as { correct?: unknown } | undefined;
    this.disagreeCol[row] = original && typeof original.correct === 'boolean' && original.correct !== rec.correct ? 1 : 0;
    this.scoreMaps[row] = rec.scores && Object.keys(rec.scores).length > 1 ? rec.scores : undefined;
    texts[row] = searchableText(rec);
    this.questions[row] = rec.question;
    this.version++;
    this.epoch++;
    if (row < this.dirtyFrom) this.dirtyFrom = row;
    return row;
  }

  /** Row id of a sample, if indexed. */
  rowOf(run: string, qid: string): number | undefined {
    return this.byKey.get(sampleKey(run, qid));
  }

  row(id: number): SampleRow {
    if (!(id >= 0 && id < this.n)) throw new RangeError(`row ${id} is out of range (0..${this.n - 1})`);
    const lat = this.nums.latency[id]!;
    const category = this.dicts.category.get(id);
    return {
      id,
      run: this.dicts.run.get(id)!,
      qid: this.dicts.qid.get(id)!,
      bench: this.dicts.bench.get(id)!,
      ...(category !== undefined ? { category } : {}),
      question: this.questions[id]!,
      correct: this.correctCol[id] === 1,
      score: this.nums.score[id]!,
      ...(this.scoreMaps[id] ? { scores: this.scoreMaps[id], disagree: this.disagreeCol[id] === 1 } : {}),
      calls: this.nums.calls[id]!,
      tool_errors: this.nums.tool_errors[id]!,
      stop: this.dicts.stop.get(id)!,
      ...(Number.isNaN(lat) ? {} : { latency: lat }),
      labels: this.labelSets[id] ?? [],
    };
  }

  /** Replace the labels of one row. */
  setLabels(id: number, labels: readonly string[]): void {
    this.epoch++;
    this.labelSets[id] = labels.length ? [...labels] : undefined;
  }

  /**
   * Replace all labels from a sampleKey (`run\u001fqid`) → labels map, as given by labelsBySample().
   * Returns how many keys matched no row (labels of samples not in this index).
   */
  applyLabels(bySample: ReadonlyMap<string, readonly string[]>): number {
    this.epoch++;
    this.labelSets.fill(undefined);
    let unmatched = 0;
    for (const [k, labels] of bySample) {
      const row = this.byKey.get(k);
      if (row === undefined) unmatched++;
      else this.setLabels(row, labels);
    }
    return unmatched;
  }

  // QuerySource
  dict(field: StringField): { codes: ArrayLike<number>; values: readonly string[]; lower: readonly string[] } {
    const d = this.dicts[field];
    return { codes: d.codes, values: d.values, lower: d.lower };
  }
  num(field: NumberField): ArrayLike<number> {
    return this.nums[field];
  }
  bool(field: 'correct' | 'disagree'): ArrayLike<number> {
    return field === 'disagree' ? this.disagreeCol : this.correctCol;
  }
  labels(row: number): readonly string[] | undefined {
    return this.labelSets[row];
  }

  /** Every row id, ascending. */
  all(): Int32Array {
    const out = new Int32Array(this.n);
    for (let i = 0; i < this.n; i++) out[i] = i;
    return out;
  }

  /** Row ids matching a query (string or compiled), ascending; within `ids` when given. Throws QueryError. */
  filter(query: string | CompiledQuery, ids?: Int32Array): Int32Array {
    const whole = !ids && typeof query === 'string';
    const hit = this.lastFilter;
    if (whole && hit && hit.query === query && hit.epoch === this.epoch) return hit.ids.slice();
    const q = typeof query === 'string' ? compileQuery(query) : query;
    if (q.ast.kind === 'all') return ids ? ids.slice() : this.all();
    const pred = q.bind(this);
    const out = new Int32Array(ids ? ids.length : this.n);
    let k = 0;
    if (ids) {
      for (let j = 0; j < ids.length; j++) if (pred(ids[j]!)) out[k++] = ids[j]!;
    } else {
      for (let i = 0; i < this.n; i++) if (pred(i)) out[k++] = i;
    }
    const result = out.slice(0, k);
    if (whole) this.lastFilter = { query: query as string, epoch: this.epoch, ids: result.slice() };
    return result;
  }

  /**
   * Full-text search: rows whose question, answer or model text contains every term (case-insensitive
   * substring; "quoted phrases" are one term). `mode: 'tokens'` uses an inverted index of whole words
   * instead (a term must be a whole word there). Ascending row ids; within `ids` when given.
   */
  search(text: string, opts: { ids?: Int32Array; mode?: SearchMode } = {}): Int32Array {
    const terms = searchTerms(text);
    if (!terms.length) return opts.ids ? opts.ids.slice() : this.all();
    if (opts.mode === 'tokens') return this.searchTokens(terms, opts.ids);
    if (opts.ids && opts.ids.length < this.n / 4) {
      const out: number[] = [];
      for (const i of opts.ids) {
        const t = this.texts[i]!;
        if (terms.every((w) => t.includes(w))) out.push(i);
      }
      return Int32Array.from(out);
    }
    const hits = this.scanAll(terms);
    return opts.ids ? intersectSorted(hits, opts.ids) : hits;
  }

  /** Build the scan buffers now; search() builds them on first use otherwise. */
  prepareScan(): void {
    this.scanChunks();
  }
  /** Build the inverted index now. */
  prepareTokens(): void {
    this.tokenIndex();
  }

  /**
   * The rows' texts joined into strings of about SCAN_CHUNK_CHARS each. Chunks keep every string far
   * below V8's maximum string length (~2^29 characters) however many rows there are, keep a non-Latin-1
   * character from doubling the memory of all text, and let appended rows (a live run) rebuild only the
   * last chunk.
   */
  private scanChunks(): ScanChunk[] {
    if (this.dirtyFrom >= this.n) return this.chunks;
    const keep = this.chunks.filter((c) => c.end <= this.dirtyFrom);
    let start = keep.length ? keep[keep.length - 1]!.end : 0;
    while (start < this.n) {
      let end = start;
      let chars = 0;
      while (end < this.n && (end === start || chars + this.texts[end]!.length < this.chunkChars)) chars += this.texts[end++]!.length + 1;
      const offsets = new Int32Array(end - start + 1);
      let pos = 0;
      for (let i = start; i < end; i++) {
        offsets[i - start] = pos;
        pos += this.texts[i]!.length + 1;
      }
      offsets[end - start] = pos;
      // '\u0000' separates rows so no term can match across two rows (terms never contain it).
      keep.push({ start, end, big: this.texts.slice(start, end).join('\u0000') + '\u0000', offsets });
      start = end;
    }
    this.chunks = keep;
    this.dirtyFrom = this.n;
    return keep;
  }

  private scanAll(terms: string[]): Int32Array {
    // Scan for the longest term (usually the rarest); check the others only within matching rows.
    const sorted = [...terms].sort((a, b) => b.length - a.length);
    const first = sorted[0]!;
    const rest = sorted.slice(1);
    const out: number[] = [];
    for (const { start, big, offsets } of this.scanChunks()) {
      let from = 0;
      let local = 0;
      for (;;) {
        const at = big.indexOf(first, from);
        if (at < 0) break;
        local = upperBound(offsets, at, local) - 1;
        const row = start + local;
        // Check the other terms on the row's own text: an indexOf on `big` could run far past the row.
        if (rest.length === 0 || rest.every((w) => this.texts[row]!.includes(w))) out.push(row);
        from = offsets[local + 1]!; // next row
      }
    }
    return Int32Array.from(out);
  }

  private tokenIndex(): Map<string, Int32Array> {
    if (this.tokenCache?.version === this.version) return this.tokenCache.postings;
    const lists = new Map<string, number[]>();
    for (let i = 0; i < this.n; i++) {
      for (const m of this.texts[i]!.matchAll(TOKEN_RE)) {
        const tok = m[0];
        let l = lists.get(tok);
        if (!l) lists.set(tok, (l = []));
        if (l[l.length - 1] !== i) l.push(i);
      }
    }
    const postings = new Map<string, Int32Array>();
    for (const [k, v] of lists) postings.set(k, Int32Array.from(v));
    this.tokenCache = { version: this.version, postings };
    return postings;
  }

  private searchTokens(terms: string[], ids?: Int32Array): Int32Array {
    const postings = this.tokenIndex();
    const words = terms.flatMap((t) => [...t.matchAll(TOKEN_RE)].map((m) => m[0]));
    if (!words.length) return new Int32Array(0);
    const lists = words.map((w) => postings.get(w) ?? new Int32Array(0)).sort((a, b) => a.length - b.length);
    let acc = lists[0]!;
    for (let i = 1; i < lists.length && acc.length; i++) acc = intersectSorted(acc, lists[i]!);
    // Phrases: the words are all present; check the exact phrase text too.
    const phrases = terms.filter((t) => /\s/.test(t));
    if (phrases.length) acc = Int32Array.from([...acc].filter((i) => phrases.every((p) => this.texts[i]!.includes(p))));
    return ids ? intersectSorted(acc, ids) : acc;
  }

  /**
   * Stable multi-key sort of `ids` (default: every row). Missing values (no category, no latency) sort last
   * in either direction; text sorts naturally (`q2` before `q10`); `label` sorts by label count.
   */
  sort(keys: readonly SortKey[], ids?: Int32Array): Int32Array {
    const src = ids ? ids.slice() : this.all();
    if (!keys.length) return src;
    const m = src.length;
    // Dense rank per key over the selected rows (missing values get the last rank in either direction),
    // then, when the ranks fit in 53 bits, one packed number per row and a native numeric sort: no
    // comparator calls. The row's position is the last digit, so ties keep their input order (stable).
    const ranks: Int32Array[] = [];
    const radices: number[] = [];
    for (const k of keys) {
      const v = this.sortValues(k.field);
      const vals = new Float64Array(m);
      for (let j = 0; j < m; j++) vals[j] = v[src[j]!]!;
      const sorted = vals.slice().sort(); // NaN sorts last in typed-array sort
      let u = 0;
      for (let j = 0; j < m; j++) {
        const x = sorted[j]!;
        if (Number.isNaN(x)) break;
        if (u === 0 || sorted[u - 1] !== x) sorted[u++] = x;
      }
      const uniq = sorted.subarray(0, u);
      const r = new Int32Array(m);
      const desc = k.dir === 'desc';
      for (let j = 0; j < m; j++) {
        const x = vals[j]!;
        if (Number.isNaN(x)) {
          r[j] = u;
          continue;
        }
        let lo = 0;
        let hi = u - 1;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (uniq[mid]! < x) lo = mid + 1;
          else hi = mid;
        }
        r[j] = desc ? u - 1 - lo : lo;
      }
      ranks.push(r);
      radices.push(u + 1);
    }
    const out = new Int32Array(m);
    const range = radices.reduce((p, x) => p * x, Math.max(1, m));
    if (range <= Number.MAX_SAFE_INTEGER) {
      const packed = new Float64Array(m);
      for (let j = 0; j < m; j++) {
        let key = 0;
        for (let k = 0; k < ranks.length; k++) key = key * radices[k]! + ranks[k]![j]!;
        packed[j] = key * m + j;
      }
      packed.sort();
      for (let j = 0; j < m; j++) out[j] = src[packed[j]! % m]!;
      return out;
    }
    const pos = Array.from({ length: m }, (_, j) => j);
    pos.sort((a, b) => {
      for (const r of ranks) {
        const d = r[a]! - r[b]!;
        if (d !== 0) return d;
      }
      return a - b;
    });
    for (let j = 0; j < m; j++) out[j] = src[pos[j]!]!;
    return out;
  }

  private sortValues(field: SortField): ArrayLike<number> {
    switch (field) {
      case 'run':
      case 'qid':
      case 'bench':
      case 'category':
      case 'stop': {
        const d = this.dicts[field];
        const rank = d.rank();
        const v = new Float64Array(this.n);
        for (let i = 0; i < this.n; i++) {
          const c = d.codes[i]!;
          v[i] = c >= 0 ? rank[c]! : NaN;
        }
        return v;
      }
      case 'correct':
        return this.correctCol;
      case 'disagree':
        return this.disagreeCol;
      case 'label': {
        const v = new Float64Array(this.n);
        for (let i = 0; i < this.n; i++) v[i] = this.labelSets[i]?.length ?? 0;
        return v;
      }
      default:
        return this.nums[field];
    }
  }

  /** Filter, then search, then sort: what the sample table asks for. */
  select(opts: SelectOptions): Int32Array {
    let ids: Int32Array | undefined;
    if (opts.query !== undefined && (typeof opts.query !== 'string' || opts.query.trim() !== '')) ids = this.filter(opts.query);
    if (opts.search && opts.search.trim()) ids = this.search(opts.search, { ...(ids ? { ids } : {}), ...(opts.searchMode ? { mode: opts.searchMode } : {}) });
    return this.sort(opts.sort ?? [], ids);
  }

  /** Counts per value of a text field among `ids` (default all), most frequent first: for facets and "open the samples behind this cell". */
  facet(field: StringField, ids?: Int32Array): Array<{ value: string | null; count: number }> {
    const d = this.dicts[field];
    const counts = new Map<number, number>();
    const visit = (i: number): void => {
      const c = d.codes[i]!;
      counts.set(c, (counts.get(c) ?? 0) + 1);
    };
    if (ids) for (const i of ids) visit(i);
    else for (let i = 0; i < this.n; i++) visit(i);
    return [...counts.entries()]
      .map(([c, count]) => ({ value: c >= 0 ? d.values[c]! : null, count }))
      .sort((a, b) => b.count - a.count || String(a.value).localeCompare(String(b.value)));
  }
}

/** First index in offsets (from `lo`) whose value is > x. */
function upperBound(a: Int32Array, x: number, lo: number): number {
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Intersection of two ascending id lists. */
export function intersectSorted(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(Math.min(a.length, b.length));
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x === y) {
      out[k++] = x;
      i++;
      j++;
    }
    else if (x < y) i++;
    else j++;
  }
  return out.slice(0, k);
}

/**
 * Attach the original images to imported samples whose source file does not carry them (DeepEyes strips
 * its base64 images; some eval scripts write no `image` key at all). The originals are found in a folder
 * by the record's own image name (or, for HR-Bench, by the question and its options in the benchmark's
 * TSV), stored in the content-addressed media store, resized for the model as a native run does, and each
 * recorded call is replayed with the dialect's own crop rule (`Dialect.planCall` → app/tools), so boxes,
 * padded boxes and crops render exactly as for native runs.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Box, MediaRef, SampleRecord, ToolCallRecord } from '../contract/trajectory';
import { getDialect, isDialectId } from '../protocol';
import type { CallPlan, EpisodeImage, EpisodeState } from '../protocol/types';
import type { ImageOps } from '../tools/imageOps';
import { presetFor, RESIZE_PRESETS, smartResize, IMAGE_FACTOR } from '../tools/smartResize';
import type { RunStore } from '../workspace/runStore';
import { isRecord } from './common';

/** What a sample shows (and the import counts as a warning) when no original could be found. */
export const IMAGE_MISSING = 'image not in the file; attach a folder';

const IMAGE_EXT = /\.(?:jpe?g|png|webp|bmp|gif|tiff?)$/i;
/** A folder walk stops here: a benchmark folder has thousands of images, not millions. */
const MAX_FILES = 500_000;
const MAX_DEPTH = 6;

/** Images under a folder, by lower-cased file name. */
export class ImageFolder {
  private constructor(
    readonly root: string,
    private readonly byName: Map<string, string[]>,
    /** Benchmark TSVs with embedded images (HR-Bench), for records that name no image. */
    readonly tsvs: string[],
    /** V* annotation folders (`direct_attributes/*.json` beside their images), likewise. */
    readonly vstarRoots: string[],
  ) {}
  private questions: Map<string, { qid: string; image: string } | null> | null = null;

  static async scan(root: string): Promise<ImageFolder> {
    const st = await fsp.stat(root).catch(() => null);
    if (!st?.isDirectory()) throw new Error(`${root}: not a folder (expected the folder holding the benchmark's images)`);
    const byName = new Map<string, string[]>();
    const tsvs: string[] = [];
    const vstarRoots = new Set<string>();
    let count = 0;
    const walk = async (dir: string, depth: number): Promise<void> => {
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (count >= MAX_FILES) return;
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (e.name === 'direct_attributes' || e.name === 'relative_position') vstarRoots.add(dir);
          if (depth < MAX_DEPTH && !e.name.startsWith('.')) await walk(p, depth + 1);
        } else if (/^hr_bench_(?:4k|8k)\.tsv$/i.test(e.name)) {
          tsvs.push(p);
        } else if (IMAGE_EXT.test(e.name)) {
          count++;
          const k = e.name.toLowerCase();
          const list = byName.get(k);
          if (list) list.push(p);
          else byName.set(k, [p]);
        }
      }
    };
    await walk(root, 0);
    for (const list of byName.values()) list.sort();
    return new ImageFolder(root, byName, tsvs.sort(), [...vstarRoots].sort());
  }

  /**
   * The benchmark's own question for a record that names no image: HR-Bench rows of the folder's TSVs
   * (Loupe's HR-Bench adapter decodes the embedded images) by question and options in order, V* questions
   * of its annotation folders by question and option set. DeepEyes' HR-Bench eval (and some V* outputs)
   * write neither the image nor an index. A key two questions share matches neither.
   */
  async benchQuestion(bench: string, question: string, options: string[] | undefined): Promise<{ qid: string; image: string } | null> {
    if (!this.tsvs.length && !this.vstarRoots.length) return null;
    if (!this.questions) {
      const found = new Map<string, { qid: string; image: string } | null>();
      const add = (key: string, v: { qid: string; image: string }) => found.set(key, found.has(key) ? null : v); // ambiguous → no match
      const { hrbenchAdapter } = await import('../bench/adapters/hrbench');
      for (const f of this.tsvs) {
        for (const q of (await hrbenchAdapter.load(f)).samples) {
          const img = q.media.images?.[0];
          if (img) add(questionKey(q.bench, q.question, q.options), { qid: q.qid, image: img });
        }
      }
      const { vstarAdapter } = await import('../bench/adapters/vstar');
      for (const root of this.vstarRoots) {
        for (const q of (await vstarAdapter.load(root)).samples) {
          const img = q.media.images?.[0];
          // The raw annotations list the correct option first and Loupe shuffles them: match the option set.
          if (img) add(questionKey(q.bench, q.question, [...(q.options ?? [])].sort()), { qid: q.qid, image: img });
        }
      }
      this.questions = found;
    }
    const opts = bench === 'vstar' ? [...(options ?? [])].sort() : options;
    return this.questions.get(questionKey(bench, question, opts)) ?? null;
  }

  get size(): number {
    let n = 0;
    for (const l of this.byName.values()) n += l.length;
    return n;
  }

  /**
   * The file named `name`; where several share the name, the one inside a folder named after one of
   * `hints` (V* keeps `direct_attributes/` and `relative_position/` apart), else the shallowest.
   */
  find(name: string, hints: string[] = []): string | null {
    const list = this.byName.get(path.basename(name).toLowerCase());
    if (!list?.length) return null;
    if (list.length === 1) return list[0]!;
    const direct = path.join(this.root, name);
    if (list.includes(direct)) return direct;
    for (const h of hints) {
      const hit = list.find((p) => path.relative(this.root, p).split(path.sep).includes(h));
      if (hit) return hit;
    }
    return [...list].sort((a, b) => a.split(path.sep).length - b.split(path.sep).length || a.localeCompare(b))[0]!;
  }
}

function questionKey(bench: string, question: string, options: readonly string[] | undefined): string {
  return JSON.stringify([bench, question.trim(), (options ?? []).map((o) => o.trim())]);
}

/** The image file names a sample's source recorded (DeepEyes `image`, other tools' `image`/`image_path`). */
export function recordedImageNames(s: SampleRecord): string[] {
  const ex = isRecord(s.extra) ? s.extra : {};
  const out: string[] = [];
  for (const k of ['image', 'image_path', 'images']) {
    const v = ex[k];
    if (typeof v === 'string' && v) out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string' && x) out.push(x);
  }
  return out;
}

/** Whether a sample still lacks its question images. */
export function needsImages(s: SampleRecord): boolean {
  return !!s.trajectory && s.trajectory.media.length === 0 && !s.trajectory.isVideo;
}

function resizeTo(size: readonly [number, number], b: { minPixels: number; maxPixels: number }): [number, number] {
  const r = smartResize(size[1], size[0], IMAGE_FACTOR, b.minPixels, b.maxPixels);
  return [r.width, r.height];
}

export type AttachOutcome = 'attached' | 'missing' | 'unchanged';

/**
 * Give `s` its originals (from `files`) and replay its calls. Mutates `s.trajectory`. Calls whose source
 * reported an error keep it; a call the dialect's crop rule refuses keeps its box but gets no crop.
 */
export async function attachFiles(s: SampleRecord, files: string[], imageOps: ImageOps): Promise<void> {
  const t = s.trajectory;
  if (!t) return;
  const originals: MediaRef[] = [];
  for (const f of files) originals.push(await imageOps.importFile(f));
  const bounds = RESIZE_PRESETS[presetFor('initial', 'eval')!];
  const initial: MediaRef[] = [];
  for (const o of originals) {
    const [w, h] = resizeTo([o.width, o.height], bounds);
    // The record names it: keep it (derived images are only held in memory until kept).
    initial.push(o.width === w && o.height === h ? o : await imageOps.keep(await imageOps.resize(o, w, h)));
  }
  t.originals = originals;
  t.media = initial;
  if (!isDialectId(t.dialect)) return;
  const dialect = getDialect(t.dialect);
  const prior: MediaRef[] = [];
  const img = (r: MediaRef, kind: EpisodeImage['kind']): EpisodeImage => ({ width: r.width, height: r.height, kind });
  const state = (): EpisodeState => ({
    mode: 'eval',
    isVideo: false,
    originals: initial.map((r) => img(r, 'original')),
    videoFrames: [],
    prior: prior.map((r) => img(r, 'crop')),
    rawSizes: originals.map((o) => [o.width, o.height] as [number, number]),
  });
  type Crop = Extract<CallPlan, { kind: 'crop' }>;
  // As the episode loop resolves a plan's target (app/agent/runEpisode.ts `resolveTarget`).
  const target = (sel: Crop['target']): MediaRef | undefined => {
    const pos = sel.position ?? sel.index;
    if (sel.list === 'prior') return prior[pos];
    if (sel.list === 'raw') return originals[pos];
    if (sel.list === 'originals' || sel.list === 'videoFrames') return initial[pos];
    if (sel.source === 'raw') return originals[pos];
    return pos < initial.length ? initial[pos] : prior[pos - initial.length];
  };
  for (const turn of t.turns) {
    const c: ToolCallRecord | undefined = turn.call;
    if (!c || c.name === null || c.arguments === undefined) continue;
    let plan: CallPlan | null;
    try {
      plan = dialect.planCall({ name: c.name, arguments: c.arguments, raw: c.raw }, state());
    } catch {
      plan = null;
    }
    if (plan?.kind !== 'crop') {
      // The dialect's rule refuses this box (DeepEyes: a side under 30 px) though the source may have
      // cropped it anyway: still draw the model's box on the question image, without a crop.
      const o = originals[c.targetIndex ?? 0];
      if (o && c.bboxRaw && c.bboxMode && !c.bboxNormalized) {
        c.targetIndex ??= 0;
        const b = c.bboxRaw;
        c.bboxNormalized = (c.bboxMode === 'normalized' ? b : [b[0] / o.width, b[1] / o.height, b[2] / o.width, b[3] / o.height]) as Box;
      }
      continue;
    }
    const src = target(plan.target);
    if (!src) continue;
    const [tw, th] = plan.target.size;
    c.targetIndex = plan.target.list === 'prior' ? initial.length + (plan.target.position ?? 0) : (plan.target.position ?? plan.target.index);
    c.bboxMode = plan.bboxMode;
    c.bboxRaw = plan.bboxRaw;
    c.bboxNormalized = (plan.bboxMode === 'normalized' ? plan.bboxRaw : [plan.bboxRaw[0] / tw, plan.bboxRaw[1] / th, plan.bboxRaw[2] / tw, plan.bboxRaw[3] / th]) as Box;
    c.bboxPadded = plan.normalizedBox;
    c.cropBox = plan.cropBox;
    // A call the source reported as failed produced nothing there either.
    if (c.error !== undefined) continue;
    const out = await imageOps.keep(await imageOps.crop(src, plan.cropBox as [number, number, number, number], plan.resizedSize));
    c.produced = [out];
    prior.push(out);
  }
}

export interface AttachResult {
  attached: number;
  /** Samples still without images: their qid and where they came from. */
  missing: Array<{ qid: string; source?: string }>;
}

/**
 * Attach originals from `folder` to every sample of `samples` that lacks them, by the record's image
 * name. Samples that already have media are left alone.
 */
export async function attachFolder(samples: SampleRecord[], folder: ImageFolder, imageOps: ImageOps): Promise<AttachResult> {
  const res: AttachResult = { attached: 0, missing: [] };
  for (const s of samples) {
    if (!needsImages(s)) continue;
    const names = recordedImageNames(s);
    const hints = [s.category, s.bench].filter((x): x is string => !!x);
    let files = names.map((n) => folder.find(n, hints));
    if (names.length === 0) {
      // No image name (HR-Bench): the benchmark's own row, found by question and options; the sample
      // takes that row's qid so the run compares with native runs of the bench.
      const hit = await folder.benchQuestion(s.bench, s.question, s.options);
      if (hit) {
        files = [hit.image];
        s.extra = { ...s.extra, qidInFile: s.qid };
        s.qid = hit.qid;
      }
    }
    if (files.length === 0 || files.some((f) => f === null)) {
      res.missing.push({ qid: s.qid, ...(s.source ? { source: s.source } : {}) });
      continue;
    }
    await attachFiles(s, files as string[], imageOps);
    res.attached++;
  }
  return res;
}

/** The samples of `samples` that have no images, for the import's warnings. */
export function missingImages(samples: SampleRecord[]): AttachResult['missing'] {
  return samples.filter(needsImages).map((s) => ({ qid: s.qid, ...(s.source ? { source: s.source } : {}) }));
}

/**
 * "Locate images…" on a stored run: attach originals from `folder` to its samples that lack them and
 * rewrite its samples. Returns what was attached and what is still missing.
 */
export async function attachRunImages(runs: RunStore, runId: string, folder: string, imageOps: ImageOps): Promise<AttachResult & { folderImages: number }> {
  const { records, issues } = await runs.readSamples(runId);
  // Rewriting would drop unreadable lines: refuse instead of losing them.
  if (issues.some((i) => i.kind === 'invalid-json' || i.kind === 'invalid-record')) throw new Error(`run ${runId}: samples.jsonl has unreadable lines; repair it before attaching images`);
  const f = await ImageFolder.scan(folder);
  const res = await attachFolder(records, f, imageOps);
  if (res.attached > 0) await runs.replaceSamples(runId, records);
  return { ...res, folderImages: f.size };
}

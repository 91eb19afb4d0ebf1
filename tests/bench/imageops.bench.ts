/**
 * Image pipeline benchmark: decode a 4K JPEG → smart_resize (eval initial bounds) → resize →
 * crop the padded box → smart_resize (eval zoom bounds) → resize, with sharp vs Pillow (the
 * reference's library), median of ≥ 15 runs each, plus the Loupe path through ImageOps (the import
 * stored; the resize and the zoom held in memory, as the agent loop uses them; and the same with both
 * kept: PNG encode + hash + write) in-process vs on a worker thread, the event-loop lag each causes,
 * and how far sharp's bicubic output is from Pillow's.
 *
 * The 4K JPEG is generated deterministically (seeded shapes + per-pixel noise), so runs compare.
 * Run alone: `node --import tsx -e "import('./tests/bench/imageops.bench.ts').then(async m => console.table(await m.bench()))"`.
 */
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { prCropGeometry } from '../../app/tools/crop';
import { RESIZE_PRESETS, resizeWithPreset } from '../../app/tools/smartResize';
import { MediaStore } from '../../app/workspace/mediaStore';
import { findPillowPython } from '../../native/image/pillow';
import { pilResizeBicubicRGB } from '../../native/image/pilResample';
import { wasmResampleAvailable } from '../../native/image/pilResampleWasm';
import { closePilResamplePool, pilResizeBicubicRGBParallel, warmPilResamplePool } from '../../native/image/pilResampleParallel';
import { SharpImageOps } from '../../native/image/sharpImageOps';
import { WorkerImageOps } from '../../native/image/workerImageOps';
import type { ImageOps } from '../../app/tools/imageOps';
import { mulberry32 } from '../../app/prng';

const here = path.dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env['BENCH_RUNS'] ?? 15);
const W = 3840;
const H = 2160;
/** The model's normalized box (before PR's 0.1 padding). */
const BOX: [number, number, number, number] = [0.42, 0.37, 0.58, 0.55];

/** A deterministic 3840×2160 JPEG with edges, gradients, fine lines and sensor-like noise. */
export async function make4kJpeg(): Promise<Buffer> {
  const rnd = mulberry32(20260126);
  const shapes: string[] = [];
  for (let i = 0; i < 900; i++) {
    const x = Math.floor(rnd() * W);
    const y = Math.floor(rnd() * H);
    const c = `rgb(${Math.floor(rnd() * 256)},${Math.floor(rnd() * 256)},${Math.floor(rnd() * 256)})`;
    const k = rnd();
    if (k < 0.4) shapes.push(`<circle cx="${x}" cy="${y}" r="${4 + Math.floor(rnd() * 120)}" fill="${c}" fill-opacity="${(0.3 + rnd() * 0.7).toFixed(2)}"/>`);
    else if (k < 0.75) shapes.push(`<rect x="${x}" y="${y}" width="${3 + Math.floor(rnd() * 260)}" height="${3 + Math.floor(rnd() * 160)}" fill="${c}" transform="rotate(${Math.floor(rnd() * 90)} ${x} ${y})"/>`);
    else shapes.push(`<line x1="${x}" y1="${y}" x2="${x + Math.floor(rnd() * 600 - 300)}" y2="${y + Math.floor(rnd() * 600 - 300)}" stroke="${c}" stroke-width="${1 + Math.floor(rnd() * 3)}"/>`);
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#1d3b5a"/><stop offset="0.5" stop-color="#c9a66b"/><stop offset="1" stop-color="#3a5f2b"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/>${shapes.join('')}</svg>`;
  const base = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer();
  const noisy = Buffer.alloc(base.length);
  for (let i = 0; i < base.length; i++) {
    const n = (rnd() + rnd() + rnd() - 1.5) * 16; // ~N(0, 8) grain
    noisy[i] = Math.max(0, Math.min(255, Math.round(base[i]! + n)));
  }
  return sharp(noisy, { raw: { width: W, height: H, channels: 3 } }).jpeg({ quality: 90, chromaSubsampling: '4:2:0' }).toBuffer();
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The reference geometry for BOX on a `size` image: PR's padded box and zoom size. */
function geometry(size: [number, number]) {
  const bbox = BOX as unknown as Parameters<typeof prCropGeometry>[1];
  const g = prCropGeometry(size, bbox, { zoomPreset: 'eval_zoom' });
  return { cropBox: g.cropBox, zoom: g.resizedSize! };
}

type Resampler = 'libvips' | 'pillow' | 'pillow-ts';

async function resizeRaw(data: Buffer, w: number, h: number, ow: number, oh: number, resampler: Resampler): Promise<Buffer> {
  if (resampler !== 'libvips') {
    const out = pilResizeBicubicRGB(data, w, h, ow, oh, resampler === 'pillow' ? 'auto' : 'ts');
    return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  }
  return sharp(data, { raw: { width: w, height: h, channels: 3 } }).resize(ow, oh, { kernel: 'cubic', fit: 'fill' }).raw().toBuffer();
}

/** The same pipeline as the Pillow script, in memory: sharp decode/crop, resize with `resampler`. */
async function sharpPipeline(jpeg: Buffer, resampler: Resampler): Promise<{ data: Buffer; resized: [number, number]; cropBox: number[]; zoom: [number, number] }> {
  const decoded = await sharp(jpeg, { failOn: 'warning' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const resized = resizeWithPreset([decoded.info.width, decoded.info.height], 'eval_initial');
  const r = await resizeRaw(decoded.data, decoded.info.width, decoded.info.height, resized[0], resized[1], resampler);
  const { cropBox, zoom } = geometry(resized);
  const [l, t, rr, b] = cropBox;
  const c = await sharp(r, { raw: { width: resized[0], height: resized[1], channels: 3 } })
    .extract({ left: l, top: t, width: rr - l, height: b - t })
    .raw()
    .toBuffer();
  const out = await resizeRaw(c, rr - l, b - t, zoom[0], zoom[1], resampler);
  return { data: out, resized, cropBox, zoom };
}

/**
 * The Loupe path through ImageOps, as the agent loop runs it: import (stored), resize, crop and zoom in one call
 * (both held in memory, what the next op and the engine read). With `keep`, then also what a record finally waits
 * for: the resize and the zoom kept (PNG + sha256 + write), which the loop does in the background while the engine runs.
 */
async function opsPipeline(ops: ImageOps, jpeg: Buffer, keep = false): Promise<void> {
  const orig = await ops.importBytes(jpeg);
  const [w, h] = resizeWithPreset([orig.width, orig.height], 'eval_initial');
  const r = await ops.resize(orig, w, h);
  const { cropBox, zoom } = geometry([w, h]);
  const z = await ops.crop(r, cropBox as [number, number, number, number], zoom);
  if (keep) await Promise.all([ops.keep(r), ops.keep(z)]);
}

/**
 * Run the variants interleaved (A, B, C, A, B, C, …), RUNS times each after a warm-up, so a busy
 * machine's load hits all of them alike; a 1 ms timer samples event-loop lag, charged to whichever
 * variant is running.
 */
async function interleaved(variants: Array<{ name: string; run: () => Promise<number | void> }>): Promise<Map<string, { median: number; maxLag: number; p99Lag: number }>> {
  for (const v of variants) await v.run();
  const times = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  const lags = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  let current = '';
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    lags.get(current)?.push(Math.max(0, now - last - 1));
    last = now;
  }, 1);
  for (let i = 0; i < RUNS; i++) {
    for (const v of variants) {
      current = v.name;
      last = performance.now();
      const t0 = performance.now();
      const self = await v.run();
      times.get(v.name)!.push(typeof self === 'number' ? self : performance.now() - t0);
    }
  }
  clearInterval(timer);
  const out = new Map<string, { median: number; maxLag: number; p99Lag: number }>();
  for (const v of variants) {
    const l = lags.get(v.name)!.sort((a, b) => a - b);
    out.set(v.name, { median: median(times.get(v.name)!), maxLag: l.at(-1) ?? 0, p99Lag: l[Math.floor(l.length * 0.99)] ?? 0 });
  }
  return out;
}

/** Noise image (worst case for nothing: the resize does the same work on any content). */
function noiseRGB(w: number, h: number, seed: number): Uint8Array {
  const rnd = mulberry32(seed);
  const out = new Uint8Array(w * h * 3);
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(rnd() * 256);
  return out;
}

/**
 * The agent loop's Pillow-exact resizes: a near-1 resize of the question image to multiples of 28
 * (slightly up on one axis, down on the other), the zoom of a crop, and a 4x downscale; one thread
 * vs split across the worker pool (`pilResizeBicubicRGBParallel`, what ImageOps uses).
 */
async function agentLoopResizes(): Promise<Array<Record<string, string | number>>> {
  const cases: Array<[string, number, number, number, number]> = [
    ['near-1', 1936, 1291, 1932, 1288],
    ['near-1', 1209, 1813, 1204, 1820],
    ['near-1', 1304, 869, 1316, 868],
    ['crop zoom', 234, 306, 392, 532],
    ['crop zoom', 444, 348, 532, 420],
    ['4x down', 1800, 1200, 406, 270],
  ];
  await warmPilResamplePool();
  const rows: Array<Record<string, string | number>> = [];
  for (const [kind, w, h, ow, oh] of cases) {
    const src = noiseRGB(w, h, w * 7 + h);
    const r = await interleaved([
      { name: 'ts', run: async () => void pilResizeBicubicRGB(src, w, h, ow, oh, 'ts') },
      { name: 'serial', run: async () => void pilResizeBicubicRGB(src, w, h, ow, oh) },
      { name: 'parallel', run: async () => void (await pilResizeBicubicRGBParallel(src, w, h, ow, oh)) },
    ]);
    const same = Buffer.compare(Buffer.from(pilResizeBicubicRGB(src, w, h, ow, oh)), Buffer.from(await pilResizeBicubicRGBParallel(src, w, h, ow, oh))) === 0;
    const sameTs = Buffer.compare(Buffer.from(pilResizeBicubicRGB(src, w, h, ow, oh)), Buffer.from(pilResizeBicubicRGB(src, w, h, ow, oh, 'ts'))) === 0;
    for (const [k, label] of [['ts', 'Pillow-exact resize, TS kernels, 1 thread'], ['serial', 'Pillow-exact resize, WebAssembly SIMD, 1 thread'], ['parallel', `Pillow-exact resize, ImageOps path (${os.availableParallelism()} CPUs)`]] as const) {
      const x = r.get(k)!;
      rows.push({ pipeline: label, median_ms: +x.median.toFixed(1), pillow_over_this: '-', max_event_loop_lag_ms: +x.maxLag.toFixed(1), p99_lag_ms: +x.p99Lag.toFixed(1), note: `${kind} ${w}x${h} → ${ow}x${oh} noise${k === 'parallel' ? `; same bytes as 1 thread: ${same}` : k === 'serial' ? `; same bytes as TS kernels: ${sameTs}` : ''}` });
    }
  }
  return rows;
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-bench-img-'));
  // The loop's media store is the workspace's: group durability (fsync in the background, DESIGN §4).
  const workerMedia = new MediaStore(path.join(dir, 'm3'), { durability: 'group' });
  const worker = new WorkerImageOps(workerMedia);
  try {
    const jpeg = await make4kJpeg();
    const jpegPath = path.join(dir, 'bench4k.jpg');
    await fsp.writeFile(jpegPath, jpeg);
    const rows: Array<Record<string, string | number>> = [];
    const load = os.loadavg()[0]!.toFixed(1);
    // Both sides allocate tens of MB a run; where page faults are costly (a VM), glibc's huge-page tunable moves both a
    // lot (Pillow most: 347 → 142 ms on a 2-core VM), so the ratios are only comparable under the same setting.
    const note = `${W}x${H} JPEG q90 (${(jpeg.length / 2 ** 20).toFixed(2)} MiB), ${RUNS} interleaved runs, ${os.cpus().length} CPUs (load ${load}), libvips ${sharp.versions.vips}, GLIBC_TUNABLES ${process.env.GLIBC_TUNABLES || '(unset)'}`;

    const py = findPillowPython();
    const init = RESIZE_PRESETS.eval_initial;
    const zoom = RESIZE_PRESETS.eval_zoom;
    const outPng = path.join(dir, 'pil.png');
    let pilInfo: { pillow: string; resized: [number, number]; cropBox: number[]; zoom: [number, number] } | null = null;
    /** One Pillow pipeline in a subprocess (its own warm-up, then one timed run); returns the in-process time. */
    const pillowOnce = (): number => {
      const out = execFileSync(py!, [path.join(here, 'pillow_imageops.py'), jpegPath, '1', String(init.minPixels), String(init.maxPixels), String(zoom.minPixels), String(zoom.maxPixels), ...BOX.map(String), outPng], { encoding: 'utf8', maxBuffer: 1 << 20 });
      const r = JSON.parse(out) as { pillow: string; resized: [number, number]; cropBox: number[]; zoom: [number, number]; ms: number[] };
      pilInfo = r;
      return r.ms[0]!;
    };

    const inMemory = await interleaved([
      ...(py ? [{ name: 'pillow', run: async () => pillowOnce() }] : []),
      { name: 'decode', run: async () => void (await sharp(jpeg, { failOn: 'warning' }).removeAlpha().raw().toBuffer()) },
      { name: 'libvips', run: async () => void (await sharpPipeline(jpeg, 'libvips')) },
      { name: 'pillow-wasm', run: async () => void (await sharpPipeline(jpeg, 'pillow')) },
      { name: 'pillow-ts', run: async () => void (await sharpPipeline(jpeg, 'pillow-ts')) },
    ]);
    const pil = inMemory.get('pillow');
    const info = pilInfo as { pillow: string; resized: [number, number]; cropBox: number[]; zoom: [number, number] } | null;
    const pilOut = py ? await sharp(outPng).removeAlpha().raw().toBuffer() : null;
    if (pil && info) {
      rows.push({ pipeline: `Pillow ${info.pillow} (the reference), in memory`, median_ms: +pil.median.toFixed(1), pillow_over_this: 1, max_event_loop_lag_ms: '-', p99_lag_ms: '-', note: `${note}; ${info.resized.join('x')} → box ${info.cropBox.join(',')} → ${info.zoom.join('x')}` });
    } else {
      rows.push({ pipeline: 'Pillow', median_ms: 'n/a', pillow_over_this: '-', max_event_loop_lag_ms: '-', p99_lag_ms: '-', note: `${note}; no python3 with Pillow found (set LOUPE_PYTHON)` });
    }
    // The floor: an exact path decodes the whole JPEG, as Pillow does (no shrink-on-load), on one core (a baseline JPEG
    // has no restart markers to split on). What it leaves of Pillow's time / 3 is what the rest of the pipeline may take
    // for issue #30's 3× line.
    const dec = inMemory.get('decode')!;
    rows.push({ pipeline: 'sharp decode alone (JPEG → RGB), in memory: the floor of every exact path', median_ms: +dec.median.toFixed(1), pillow_over_this: pil ? +(pil.median / dec.median).toFixed(2) : '-', max_event_loop_lag_ms: +dec.maxLag.toFixed(1), p99_lag_ms: +dec.p99Lag.toFixed(1), note: pil ? `Pillow / 3 = ${(pil.median / 3).toFixed(1)} ms; after the decode ${(pil.median / 3 - dec.median).toFixed(1)} ms are left for the resize, the crop and the zoom` : '' });
    const inMemoryRows = [
      ['libvips', 'libvips', 'sharp decode + libvips cubic resize, in memory'],
      ['pillow-wasm', 'pillow', `sharp decode + Pillow-exact resize, WebAssembly SIMD kernels (${wasmResampleAvailable() ? 'running' : 'UNAVAILABLE here: TS kernels'}), in memory`],
      ['pillow-ts', 'pillow-ts', 'sharp decode + Pillow-exact resize, TypeScript kernels, in memory'],
    ] as const;
    for (const [name, resampler, label] of inMemoryRows) {
      const r = inMemory.get(name)!;
      const o = await sharpPipeline(jpeg, resampler);
      let diffNote = '';
      if (pilOut && info) {
        let sum = 0;
        let max = 0;
        for (let i = 0; i < pilOut.length; i++) {
          const d = Math.abs(pilOut[i]! - o.data[i]!);
          sum += d;
          if (d > max) max = d;
        }
        const same = JSON.stringify([o.resized, o.cropBox, o.zoom]) === JSON.stringify([info.resized, info.cropBox, info.zoom]);
        diffNote = `sizes+box same as Pillow: ${same}; output vs Pillow: mean |Δ| ${(sum / pilOut.length).toFixed(3)}, max |Δ| ${max}`;
      }
      rows.push({ pipeline: label, median_ms: +r.median.toFixed(1), pillow_over_this: pil ? +(pil.median / r.median).toFixed(2) : '-', max_event_loop_lag_ms: +r.maxLag.toFixed(1), p99_lag_ms: +r.p99Lag.toFixed(1), note: diffNote });
    }

    const vipsMedia = new MediaStore(path.join(dir, 'm1'), { durability: 'group' });
    const vipsOps = new SharpImageOps(vipsMedia, { resampler: 'libvips' });
    // Before background fsync: each media file fsync'd (and its folder) before the call answers.
    const eachMedia = new MediaStore(path.join(dir, 'm4'));
    const eachOps = new SharpImageOps(eachMedia);
    const pilMedia = new MediaStore(path.join(dir, 'm2'), { durability: 'group' });
    const pilOps = new SharpImageOps(pilMedia);
    // Every run stores the same media again: start from an empty store each time, as a new question would.
    const fresh = async (m: MediaStore) => {
      await m.durable();
      await fsp.rm(m.dir, { recursive: true, force: true });
    };
    const timedFresh = (m: MediaStore, ops: ImageOps, keep: boolean, durable: boolean) => async () => {
      await fresh(m);
      const t0 = performance.now();
      await opsPipeline(ops, jpeg, keep);
      if (durable) await m.durable();
      return performance.now() - t0;
    };
    const full = await interleaved([
      { name: 'vips', run: timedFresh(vipsMedia, vipsOps, false, false) },
      { name: 'each', run: timedFresh(eachMedia, eachOps, true, false) },
      { name: 'pil', run: timedFresh(pilMedia, pilOps, false, false) },
      { name: 'pil-kept', run: timedFresh(pilMedia, pilOps, true, true) },
      { name: 'worker', run: timedFresh(workerMedia, worker, false, false) },
      { name: 'worker-kept', run: timedFresh(workerMedia, worker, true, true) },
    ]);
    const fullRows: Array<[string, string, string]> = [
      ['vips', 'ImageOps in-process, libvips resize', 'the loop’s path: import (JPEG stored: sha256 + write into an emptied store each run) + resize + crop and zoom in one call, both held in memory (what the next op and the engine read)'],
      ['each', 'ImageOps in-process, Pillow-exact, resize and zoom kept at once, every media write fsync’d before the call answers', 'the path before derived images were held and before background fsync (MediaStore durability each), for comparison'],
      ['pil', 'ImageOps in-process, Pillow-exact resize (worker threads)', 'the loop’s path, default resampler (the CLI path)'],
      ['pil-kept', 'the same, then the resize and the zoom kept and fsync’d', '+ 2 PNG encodes + sha256 + writes + media.durable(): what a record finally waits for (the loop keeps in the background, during the engine call)'],
      ['worker', 'ImageOps on 1 worker thread, Pillow-exact resize', 'createImageOps() default (the Demo path)'],
      ['worker-kept', 'the same, then the resize and the zoom kept and fsync’d', 'as above, in the worker'],
    ];
    for (const [k, label, extra] of fullRows) {
      const r = full.get(k)!;
      rows.push({ pipeline: label, median_ms: +r.median.toFixed(1), pillow_over_this: pil ? +(pil.median / r.median).toFixed(2) : '-', max_event_loop_lag_ms: +r.maxLag.toFixed(1), p99_lag_ms: +r.p99Lag.toFixed(1), note: extra });
    }
    rows.push(...(await agentLoopResizes()));
    return rows;
  } finally {
    await closePilResamplePool();
    await worker.close();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/**
 * loupe-tiny training data at scale: for each seed, `loupe synth` scenes, then prepare.ts's SFT trajectories through
 * Loupe's own loop and engine preprocessing — in parallel worker processes. Meant for a many-core machine (the GPU
 * machine has 16 cores and no Node: `scripts/device/pack-node.sh` brings Node and this script as one bundle).
 *
 *   node datagen.mjs --seeds 100-199 --n 50 [--video 4] --kinds ring-digits,tag-letter --tokenizer MODEL_DIR --out DIR
 *                    [--workers 14] [--notool-fraction 0.4] [--ground] [--easy-fraction F] [--keep-scenes] [--deadline-s S]
 *                    [--scenes-only]
 *
 * Writes DIR/prep-<seed>/{manifest.jsonl,images/} (prepare.ts's format) and DIR/synth-<seed>/ (the scenes; their images
 * are deleted unless --keep-scenes, samples.jsonl is kept). A seed whose prep folder already has a manifest is skipped,
 * so an interrupted run resumes. --scenes-only: the scenes alone (images kept, no prep folder), e.g. for
 * pretrain_reading.py --scenes, which cuts its own crops.
 */
import { fork } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateSynth, type SynthKind } from '../../app/synth';
import { prepareData } from '../../models/loupe-tiny/prepare';
import { sharpSynthRaster } from '../../native/image/synthRaster';

const { values: opt } = parseArgs({
  options: {
    seeds: { type: 'string' },
    n: { type: 'string', default: '50' },
    video: { type: 'string', default: '0' },
    kinds: { type: 'string', default: 'ring-digits,tag-letter' },
    tokenizer: { type: 'string' },
    out: { type: 'string' },
    workers: { type: 'string' },
    'notool-fraction': { type: 'string', default: '0.4' },
    ground: { type: 'boolean', default: false },
    'easy-fraction': { type: 'string' },
    'keep-scenes': { type: 'boolean', default: false },
    'deadline-s': { type: 'string' },
    'scenes-only': { type: 'boolean', default: false },
  },
});

function need(v: string | undefined, name: string): string {
  if (v === undefined) throw new Error(`datagen: missing --${name}`);
  return v;
}

function seedList(spec: string): number[] {
  const out: number[] = [];
  for (const part of spec.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`datagen: bad --seeds part "${part}" (want 100-199,300)`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    for (let s = a; s <= b; s++) out.push(s);
  }
  return out;
}

async function one(seed: number): Promise<string> {
  const out = path.resolve(need(opt.out, 'out'));
  const prep = path.join(out, `prep-${seed}`);
  const synth = path.join(out, `synth-${seed}`);
  const scenesOnly = opt['scenes-only'];
  if (existsSync(path.join(scenesOnly ? synth : prep, scenesOnly ? 'samples.jsonl' : 'manifest.jsonl'))) return `seed ${seed}: already done`;
  const kinds = opt.kinds.split(',') as SynthKind[];
  const t0 = Date.now();
  const easy = opt['easy-fraction'] !== undefined ? { easyFraction: Number(opt['easy-fraction']) } : {};
  await generateSynth({ seed, n: Number(opt.n), video: Number(opt.video), kinds, ...easy }, synth, sharpSynthRaster);
  const t1 = Date.now();
  if (scenesOnly) return `seed ${seed}: synth ${((t1 - t0) / 1000).toFixed(1)} s`;
  const res = await prepareData({
    dirs: [synth],
    outDir: prep + '.tmp',
    tokDir: need(opt.tokenizer, 'tokenizer'),
    notoolFraction: Number(opt['notool-fraction']),
    ground: opt.ground,
    log: () => undefined,
  });
  await fsp.rm(prep, { recursive: true, force: true });
  await fsp.rename(prep + '.tmp', prep);
  if (!opt['keep-scenes']) await fsp.rm(path.join(synth, 'images'), { recursive: true, force: true });
  return `seed ${seed}: synth ${((t1 - t0) / 1000).toFixed(1)} s, prepare ${((Date.now() - t1) / 1000).toFixed(1)} s, ${res.trajectories} trajectories, ${res.skipped} skipped`;
}

async function main(): Promise<void> {
  const seeds = seedList(need(opt.seeds, 'seeds'));
  if (process.env.LOUPE_DATAGEN_CHILD) {
    // --deadline-s: no new seed is started after that many seconds from the parent's start (a seed in progress finishes)
    const deadline = Number(process.env.LOUPE_DATAGEN_T0) + Number(opt['deadline-s'] ?? '0') * 1000;
    for (const s of seeds) {
      if (opt['deadline-s'] !== undefined && Date.now() > deadline) break;
      process.stdout.write((await one(s)) + '\n');
    }
    return;
  }
  const workers = Math.max(1, Math.min(seeds.length, Number(opt.workers ?? Math.max(1, os.cpus().length - 2))));
  const self = fileURLToPath(import.meta.url);
  const t0 = Date.now();
  let failed = 0;
  await Promise.all(
    Array.from({ length: workers }, (_, w) => {
      const mine = seeds.filter((_, i) => i % workers === w);
      const args = [...process.argv.slice(2), '--seeds', mine.join(',')]; // the last --seeds wins
      return new Promise<void>((resolve) => {
        const child = fork(self, args, { env: { ...process.env, LOUPE_DATAGEN_CHILD: '1', LOUPE_DATAGEN_T0: String(t0) }, execArgv: process.execArgv });
        child.on('exit', (code) => {
          if (code !== 0) {
            failed++;
            process.stderr.write(`datagen: worker ${w} exited ${code}\n`);
          }
          resolve();
        });
      });
    }),
  );
  process.stdout.write(`datagen: ${seeds.length} seeds, ${workers} workers, ${((Date.now() - t0) / 1000).toFixed(0)} s, ${failed} workers failed\n`);
  if (failed) process.exit(1);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

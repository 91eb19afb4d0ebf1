/** `loupe synth` — write a loupe-synth benchmark folder (and optionally SFT trajectories) from a seed. */
import type { Command } from 'commander';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SYNTH_KINDS, type SynthKind } from '../../../app/synth/scene';

function intArg(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
    return n;
  };
}

function kindsArg(v: string, prev: SynthKind[] = []): SynthKind[] {
  const out = [...prev];
  for (const k of v.split(',').map((x) => x.trim()).filter(Boolean)) {
    if (!(SYNTH_KINDS as readonly string[]).includes(k)) throw new Error(`unknown kind "${k}" (known: ${SYNTH_KINDS.join(', ')})`);
    out.push(k as SynthKind);
  }
  return out;
}

export function register(program: Command): void {
  program
    .command('synth')
    .description('Generate the loupe-synth benchmark: answers that need a zoom (deterministic from --seed)')
    .requiredOption('--out <dir>', 'output folder (benchmark.json, samples.jsonl, images/)')
    .option('--seed <n>', 'seed', intArg('--seed'), 0)
    .option('--n <n>', 'number of image samples', intArg('--n'), 40)
    .option('--video <n>', 'number of 16-frame video samples', intArg('--video'), 0)
    .option('--kinds <kinds...>', `image kinds, comma or space separated (${SYNTH_KINDS.join(', ')})`, kindsArg)
    .option('--easy-fraction <f>', 'fraction of image samples readable without zoom', (v) => {
      const f = Number(v);
      if (!(f >= 0 && f <= 1)) throw new Error(`--easy-fraction must be in [0, 1], got "${v}"`);
      return f;
    })
    .option('--sft', 'also write SFT trajectories (sft/trajectories.jsonl) and their crops (sft/crops/)')
    .option('--sft-mode <mode>', 'resize bounds for SFT geometry: train or eval', 'train')
    .action(async (o: { out: string; seed: number; n: number; video: number; kinds?: SynthKind[]; easyFraction?: number; sft?: boolean; sftMode: string }) => {
      if (o.sftMode !== 'train' && o.sftMode !== 'eval') throw new Error(`--sft-mode must be train or eval, got "${o.sftMode}"`);
      const out = path.resolve(o.out);
      const [{ generateSynth, synthTrajectories, writeTrajectoryCrops }, { sharpSynthRaster }] = await Promise.all([import('../../../app/synth'), import('../../../native/image/synthRaster')]);
      const res = await generateSynth(
        { seed: o.seed, n: o.n, video: o.video, kinds: o.kinds, easyFraction: o.easyFraction },
        out,
        sharpSynthRaster,
        (done, total) => {
          if (process.stderr.isTTY) process.stderr.write(`\rsynth: ${done}/${total}`);
        },
      );
      if (process.stderr.isTTY) process.stderr.write('\n');
      const counts: Record<string, number> = {};
      for (const s of res.samples) counts[`${s.category}${s.isVideo ? ' (video)' : ''}`] = (counts[`${s.category}${s.isVideo ? ' (video)' : ''}`] ?? 0) + 1;
      process.stdout.write(`wrote ${res.samples.length} samples to ${out}\n`);
      for (const [k, n] of Object.entries(counts)) process.stdout.write(`  ${k}: ${n}\n`);
      if (o.sft) {
        const sftDir = path.join(out, 'sft');
        await mkdir(sftDir, { recursive: true });
        const lines: string[] = [];
        for (const s of res.samples) {
          for (const t of synthTrajectories(s, { mode: o.sftMode })) {
            const crops = await writeTrajectoryCrops(out, t, path.join(sftDir, 'crops'), sharpSynthRaster);
            const rel = Object.fromEntries(Object.entries(crops).map(([k, f]) => [k, path.relative(out, f)]));
            lines.push(JSON.stringify({ ...t, cropFiles: rel }));
          }
        }
        await writeFile(path.join(sftDir, 'trajectories.jsonl'), lines.join('\n') + (lines.length ? '\n' : ''));
        process.stdout.write(`wrote ${lines.length} SFT trajectories to ${path.join(sftDir, 'trajectories.jsonl')}\n`);
      }
    });
}

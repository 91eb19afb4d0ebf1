/**
 * loupe-tiny on this machine's CPU through Loupe's own engine and loop: per-trajectory wall time (loop + image
 * work + engine), engine time and generated tokens, with and without tools, for each dtype the folder ships, on the
 * model card's held-out set: 40 loupe-synth scenes of seed 9 (rings and tags), generated here into a temporary folder.
 * Each run starts a fresh engine and warms it with one untimed trajectory (the ONNX sessions and the resize workers
 * start on first use, once per engine); that cold first trajectory is its own column, the median is over the 40
 * warm ones. The accuracy column should match the model card's table (models/loupe-tiny/README.md).
 *
 * The q8 vcot run is repeated with one extra CPU-bound process running (the "loaded machine"), quiet and
 * loaded interleaved over two rounds; each row states the load average it ran under and the CPU time per trajectory
 * (this process's user + system time over the run, engine worker included, model loading included), which a busy
 * machine changes far less than the wall time.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { generateSynth } from '../../app/synth';
import { validateModelFolder } from '../../app/engines/local/modelFolder';
import { evaluate } from '../../models/loupe-tiny/evaluate';
import { sharpSynthRaster } from '../../native/image/synthRaster';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODEL = path.resolve(HERE, '../../models/loupe-tiny/model');

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  const scenes = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-tiny-bench-'));
  try {
    await generateSynth({ seed: 9, n: 40, kinds: ['ring-digits', 'tag-letter'] }, scenes, sharpSynthRaster);
    // the committed model ships q8 only; a local export (train.py --export fp32,q8) adds fp32
    const present = (await validateModelFolder(MODEL)).dtypes;
    const runs: Array<{ dtype: 'q8' | 'fp32'; prompt: 'vcot' | 'notool'; loaded: boolean }> = [];
    for (const dtype of (['q8', 'fp32'] as const).filter((d) => present.includes(d))) {
      for (const prompt of ['vcot', 'notool'] as const) runs.push({ dtype, prompt, loaded: false });
    }
    if (present.includes('q8')) runs.push({ dtype: 'q8', prompt: 'vcot', loaded: true }, { dtype: 'q8', prompt: 'vcot', loaded: false }, { dtype: 'q8', prompt: 'vcot', loaded: true });
    for (const { dtype, prompt, loaded } of runs) {
      // one busy loop in another process: on a 2-core machine it takes a core for the whole run
      const burner = loaded ? spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }) : null;
      const cpu0 = process.cpuUsage();
      let result;
      try {
        result = await evaluate({ model: MODEL, data: scenes, prompt, dtype, warmup: true });
      } finally {
        burner?.kill('SIGKILL');
      }
      const cpu = process.cpuUsage(cpu0);
      const s = result.summary;
      rows.push({
        dtype,
        prompt,
        machine: loaded ? '+1 CPU-bound process' : 'as it is',
        'load 1m': os.loadavg()[0]!.toFixed(1),
        'cpu ms/trajectory': Math.round((cpu.user + cpu.system) / 1000 / (s.n! + 1)),
        scenes: s.n!,
        'median ms/trajectory': Math.round(s.medianMs!),
        // the speed target: a whole image trajectory under 1 s median on a laptop-class CPU (ratio < 1 meets it)
        'vs 1 s target': Number((s.medianMs! / 1000).toFixed(2)),
        'cold first ms': Math.round(s.warmupMs!),
        'median engine ms': Math.round(s.medianEngineMs!),
        'tokens/trajectory': Math.round(s.meanCompletionTokens!),
        'calls/trajectory': Number(s.meanCalls!.toFixed(2)),
        'first crop contains target': Number(s.firstCropContains!.toFixed(2)),
        accuracy: Number(s.accuracy!.toFixed(3)),
      });
    }
  } finally {
    await fsp.rm(scenes, { recursive: true, force: true });
  }
  return rows;
}

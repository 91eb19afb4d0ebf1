/**
 * loupe-tiny on this machine's CPU through Loupe's own engine and loop: per-trajectory wall time (loop + image
 * work + engine), engine time and generated tokens, with and without tools, for each dtype the folder ships, on the fixed held-out
 * scenes of models/loupe-tiny/examples (seed 9). Accuracy on so few scenes is only a sanity column;
 * the model card (models/loupe-tiny/README.md) has the numbers on a larger held-out set.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateModelFolder } from '../../app/engines/local/modelFolder';
import { evaluate } from '../../models/loupe-tiny/evaluate';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODEL = path.resolve(HERE, '../../models/loupe-tiny/model');
const SCENES = path.resolve(HERE, '../../models/loupe-tiny/examples');

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  // the committed model ships q8 only; a local export (train.py --export fp32,q8) adds fp32
  const present = (await validateModelFolder(MODEL)).dtypes;
  for (const dtype of (['q8', 'fp32'] as const).filter((d) => present.includes(d))) {
    for (const prompt of ['vcot', 'notool'] as const) {
      const { summary: s } = await evaluate({ model: MODEL, data: SCENES, prompt, dtype });
      rows.push({
        dtype,
        prompt,
        scenes: s.n!,
        'median ms/trajectory': Math.round(s.medianMs!),
        // the speed target: a whole image trajectory under 1 s median on a laptop-class CPU (ratio < 1 meets it)
        'vs 1 s target': Number((s.medianMs! / 1000).toFixed(2)),
        'median engine ms': Math.round(s.medianEngineMs!),
        'tokens/trajectory': Math.round(s.meanCompletionTokens!),
        'calls/trajectory': Number(s.meanCalls!.toFixed(2)),
        'first crop contains target': Number(s.firstCropContains!.toFixed(2)),
        accuracy: Number(s.accuracy!.toFixed(2)),
      });
    }
  }
  return rows;
}

/**
 * `loupe attention --model M --bench loupe-synth --data DIR [--limit 40]` — does the model's attention map point at
 * the target? Runs each image question through the loop (greedy, eval presets, pixel-reasoner) and measures, on the
 * first crop turn (or the scene's reference zoom turn when the model made none), the attention mass inside the target
 * box and the peak hit rate per text layer, against the uniform map (the box's area fraction). See
 * app/attention/measure.ts. Heavy modules load inside the action.
 */
import type { Command } from 'commander';
import path from 'node:path';

export interface AttentionCliOptions {
  model: string;
  bench: string;
  data: string;
  limit?: number;
  completion: string;
  prompt: string;
  json?: string;
  /** Write the model card's summary (attention.json, AttentionCardSchema) here. */
  card?: string;
  /** A previous run's --json (e.g. the random model's) to put on the card as the baseline. */
  baseline?: string;
  workspace?: string;
}

export async function runAttentionCommand(o: AttentionCliOptions, io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } = process): Promise<number> {
  if (o.bench !== 'loupe-synth') {
    io.stderr.write(`attention: --bench ${JSON.stringify(o.bench)} is not supported: the measure needs ground-truth target boxes (loupe-synth)\n`);
    return 2;
  }
  if (o.completion !== 'own' && o.completion !== 'reference') {
    io.stderr.write(`attention: --completion must be own or reference, got ${JSON.stringify(o.completion)}\n`);
    return 2;
  }
  if (o.prompt !== 'vcot' && o.prompt !== 'notool') {
    io.stderr.write(`attention: --prompt must be vcot or notool, got ${JSON.stringify(o.prompt)}\n`);
    return 2;
  }
  const [{ promises: fsp }, os, { runEpisode, ScriptedEngine }, { getDialect }, { Workspace, defaultWorkspaceDir }, { createEngineManager, imageOpsFor }, { scoreSample, summarizeAttention }, { ModelRegistry }, { resourcesRoot }] =
    await Promise.all([
      import('node:fs'),
      import('node:os'),
      import('../../../app/agent'),
      import('../../../app/protocol'),
      import('../../../app/workspace'),
      import('../../core/wiring'),
      import('../../../app/attention/measure'),
      import('../../../app/engines/modelRegistry'),
      import('../../../app/paths'),
    ]);
  const { resolveModelRef } = await import('../../../app/sweeps/plan');
  const { AttentionCardSchema } = await import('../../../app/contract/attention');
  type AttentionCard = import('../../../app/contract/attention').AttentionCard;
  type AttentionSummary = import('../../../app/attention/measure').AttentionSummary;
  type SynthSample = import('../../../app/synth/generate').SynthSample;
  const wsDir = o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir();
  const model = await resolveModelRef(o.model, new ModelRegistry(wsDir, { bundledRoot: resourcesRoot() }));
  if (model.kind !== 'local') {
    io.stderr.write(`attention: ${o.model}: unavailable: the server does not expose attention (maps need a local ONNX model with an analysis decoder)\n`);
    return 2;
  }
  const data = path.resolve(o.data);
  let lines: string[];
  try {
    lines = (await fsp.readFile(path.join(data, 'samples.jsonl'), 'utf8')).split('\n').filter(Boolean);
  } catch (e) {
    io.stderr.write(`attention: ${data}: cannot read samples.jsonl (${(e as Error).message}); make one with \`loupe synth --seed N --n 40 --out DIR\`\n`);
    return 2;
  }
  const samples = lines
    .map((l) => JSON.parse(l) as SynthSample)
    .filter((s) => !s.isVideo && s.needsZoom)
    .slice(0, o.limit ?? Infinity);
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-attention-'));
  const ops = await imageOpsFor((await new Workspace(tmp).init()).media, 'inline');
  const engines = await createEngineManager({ isolation: 'thread' });
  const dialect = getDialect('pixel-reasoner');
  const rows = [];
  try {
    const { engine } = await engines.acquire({ modelDir: model.path });
    for (const [i, s] of samples.entries()) {
      // reference turns need only the episode's prompt and resized image: a scripted answer, no generation
      const trajectory = await runEpisode({
        engine: o.completion === 'reference' ? new ScriptedEngine(['\\boxed{}']) : engine,
        dialect,
        media: { images: [path.resolve(data, s.image!)] },
        question: s.question,
        imageOps: ops,
        settings: { prompt: o.prompt as 'vcot', mode: 'eval', decoding: { temperature: 0, topP: 1, topK: -1 }, limits: { maxTokensPerTurn: 160 } },
      });
      const row = await scoreSample({ engine, dialect, sample: s, trajectory, source: o.completion as 'own', pathOf: (m) => ops.pathOf(m) });
      rows.push(row);
      const mean = row.inBox.at(-1)!;
      io.stderr.write(`[${i + 1}/${samples.length}] ${s.qid} ${row.source} in-box ${mean.toFixed(3)} (uniform ${row.uniform.toFixed(3)}) peak ${row.peakHit.at(-1) ? 'hit' : 'miss'}\n`);
    }
  } finally {
    await engines.dispose();
    await ops.close?.();
    await fsp.rm(tmp, { recursive: true, force: true });
  }
  const summary = summarizeAttention(rows);
  const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
  io.stdout.write(`model ${model.name}  data ${data}  n ${summary.n} (own turns ${summary.own}, reference turns ${summary.reference})\n`);
  io.stdout.write(`uniform baseline (target area fraction): ${pct(summary.uniform)}; a peak on a random cell touches the target ${pct(summary.peakChance)} of the time\n`);
  io.stdout.write(`layer   in-box mass   x uniform   peak hit   image mass   (layers 1-based, as the app shows them)\n`);
  const name = (l: number | 'mean') => (l === 'mean' ? 'mean' : String(l + 1));
  for (const l of summary.layers) {
    io.stdout.write(
      `${name(l.layer).padEnd(7)} ${pct(l.inBox).padStart(11)}   ${(l.inBox / (summary.uniform || 1)).toFixed(2).padStart(9)}   ${pct(l.peakHit).padStart(8)}   ${l.imageMass !== undefined ? pct(l.imageMass).padStart(10) : ''}\n`,
    );
  }
  io.stdout.write(`best layer (by in-box mass on these samples): ${name(summary.best.layer)}: ${pct(summary.best.inBox)} in box, peak hit ${pct(summary.best.peakHit)}\n`);
  if (o.json) await fsp.writeFile(o.json, JSON.stringify({ model: model.name, data, completion: o.completion, summary, rows }, null, 1));
  if (o.card) {
    const meanRow = summary.layers.find((l) => l.layer === 'mean')!;
    let baseline: AttentionCard['baseline'];
    if (o.baseline) {
      const b = JSON.parse(await fsp.readFile(o.baseline, 'utf8')) as { model: string; completion: string; summary: AttentionSummary };
      const bm = b.summary.layers.find((l) => l.layer === 'mean')!;
      baseline = { model: b.model, completion: b.completion, best: { inBox: b.summary.best.inBox, peakHit: b.summary.best.peakHit }, mean: { inBox: bm.inBox, peakHit: bm.peakHit } };
    }
    // the scenes' seed: benchmark.json's, else the samples' own (a folder of copied sample lines has no benchmark.json)
    let seed = samples[0] ? ` seed ${samples[0].seed}` : '';
    try {
      const b = JSON.parse(await fsp.readFile(path.join(data, 'benchmark.json'), 'utf8')) as { seed?: number };
      if (typeof b.seed === 'number') seed = ` seed ${b.seed}`;
    } catch {
      // no benchmark.json: the samples' seed stands
    }
    const card: AttentionCard = {
      bench: o.bench,
      data: `${o.bench}${seed}, ${summary.n} image scenes that need a zoom`,
      n: summary.n,
      completion: o.completion,
      uniform: summary.uniform,
      peakChance: summary.peakChance,
      best: summary.best,
      mean: { inBox: meanRow.inBox, peakHit: meanRow.peakHit },
      ...(baseline ? { baseline } : {}),
    };
    await fsp.writeFile(o.card, `${JSON.stringify(AttentionCardSchema.parse(card), null, 1)}\n`);
  }
  return 0;
}

export function register(program: Command): void {
  program
    .command('attention')
    .description('measure where a local model looks when it writes a crop box: attention mass inside the target box and peak hit rate per layer (loupe-synth)')
    .requiredOption('--model <model>', 'a local model folder or a registered model id (needs an analysis decoder: loupe convert --attention)')
    .requiredOption('--data <dir>', 'a loupe-synth folder (loupe synth --seed N --out DIR)')
    .option('--bench <id>', 'benchmark (only loupe-synth has target boxes)', 'loupe-synth')
    .option('--limit <n>', 'image questions that need a zoom, at most', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--limit must be a positive integer, got ${JSON.stringify(v)}`);
      return n;
    })
    .option('--completion <which>', 'own: the model’s first crop turn, else the scene’s reference turn; reference: always the reference turn', 'own')
    .option('--prompt <id>', 'vcot or notool', 'vcot')
    .option('--json <file>', 'write the per-sample rows and the summary as JSON')
    .option('--card <file>', 'write the model card summary (the model folder’s attention.json: the Models page shows it)')
    .option('--baseline <file>', 'a previous --json output (e.g. the random model’s) to put on the card as the baseline')
    .option('--workspace <dir>', 'workspace (for registered model ids)')
    .action(async (o: AttentionCliOptions) => {
      process.exitCode = await runAttentionCommand(o);
    });
}

/**
 * `loupe run --model DIR|URL --image FILE "question"` — one question through the agent loop, printed live:
 * the model's text as it streams, each tool call (parsed box, crop box, produced media and where it was
 * written in the workspace) and the observation, then the stop reason. `--json` prints the trajectory as
 * the last stdout line instead of the live text.
 */
import type { Command } from 'commander';
import path from 'node:path';
import { existsSync } from 'node:fs';

interface RunCliOptions {
  model: string;
  image?: string[];
  video?: string;
  frames?: string;
  prompt: string;
  dialect: string;
  mode: string;
  maxTokens?: number;
  maxCalls?: number;
  temperature: number;
  workspace?: string;
  device?: string;
  dtype?: string;
  threads?: number;
  apiKey?: string;
  json?: boolean;
  allowUnisolatedCode?: boolean;
}

function int(name: string, min = 0) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
}

function nonNegative(name: string, v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number ≥ 0, got ${JSON.stringify(v)}`);
  return n;
}

/** ', 2 threads' / ', 1 thread' / ', ORT default threads' for a local engine's info; '' for others. */
function threadsText(n: number | undefined): string {
  if (n === undefined) return '';
  return n === 0 ? ', ORT default threads' : `, ${n} thread${n === 1 ? '' : 's'}`;
}

function collect(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

export function register(program: Command): void {
  program
    .command('run')
    .description('ask one question about an image (or video frames) and print the trajectory live')
    .argument('<question>', 'the question')
    .requiredOption('--model <m>', 'model name (loupe-tiny, or one added on the Models page), local model folder, OpenAI-compatible URL (http://host:port/v1[#model]) or replay:<file.jsonl> (qid "run")')
    .option('--image <file>', 'an image (repeat for several)', collect)
    .option('--video <file>', 'a video file (give its extracted frames with --frames)')
    .option('--frames <dir>', 'a folder of video frames, in name order')
    .option('--prompt <p>', 'vcot (tools) or notool', 'vcot')
    .option('--dialect <d>', 'pixel-reasoner | verl-tool | deepeyes | pyvision | pyvision-rl (the code tool, run in a sandbox)', 'pixel-reasoner')
    .option('--allow-unisolated-code', 'pyvision: run model-written code with resource limits only where no namespace isolation exists')
    .option('--mode <m>', 'eval or train presets', 'eval')
    .option('--max-tokens <n>', 'max new tokens per turn', int('--max-tokens', 1))
    .option('--max-calls <n>', 'tool-call limit (pyvision: model turns)', int('--max-calls', 0))
    .option('--temperature <t>', 'sampling temperature (0 = greedy)', (v) => nonNegative('--temperature', v), 0)
    .option('--workspace <dir>', 'workspace folder for the crops (default $LOUPE_WORKSPACE or the user data dir)')
    .option('--device <d>', 'local engine device')
    .option('--dtype <t>', 'local engine dtype')
    .option('--threads <n>', 'local engine: ONNX Runtime threads (default: 1 for a small model, else one per core)', int('--threads', 1))
    .option('--api-key <k>', 'API key for the server (better: $LOUPE_API_KEY, since argv is visible in ps)')
    .option('--json', 'print the trajectory as JSON on the last stdout line')
    .action(async (question: string, o: RunCliOptions) => {
      const [{ resolveModelRef }, { runEpisode }, { getDialect }, { Workspace, defaultWorkspaceDir }, { engineFactory, imageOpsFor, codeSandboxFactory }, { listFrames }, pyv, { runPyVisionEpisode }] = await Promise.all([
        import('../../../app/sweeps/plan'),
        import('../../../app/agent'),
        import('../../../app/protocol'),
        import('../../../app/workspace'),
        import('../../core/wiring'),
        import('../../../app/bench/adapters/frames'),
        import('../../../app/protocol/pyvision'),
        import('../../../app/agent/pyvisionEpisode'),
      ]);
      if (o.prompt !== 'vcot' && o.prompt !== 'notool') throw new Error(`--prompt must be vcot or notool, got ${JSON.stringify(o.prompt)}`);
      if (o.mode !== 'eval' && o.mode !== 'train') throw new Error(`--mode must be eval or train, got ${JSON.stringify(o.mode)}`);
      const pvDialect = pyv.isPyVisionDialect(o.dialect) ? o.dialect : null;
      if (pvDialect && (o.frames || o.video)) throw new Error(`--dialect ${pvDialect} takes one question image (--image), not video frames`);
      const dialect = pvDialect ? null : getDialect(o.dialect);
      let media: { images: string[] } | { videoFrames: string[] };
      if (o.frames) {
        const frames = listFrames(path.resolve(o.frames));
        if (!frames.length) throw new Error(`--frames ${o.frames}: no image files (jpg, png, webp, bmp) in that folder`);
        media = { videoFrames: frames };
      } else if (o.video) {
        throw new Error(`--video ${o.video}: Loupe reads video as frames; extract them first (e.g. ffmpeg -i ${o.video} -vf fps=1 frames/%04d.jpg) and pass --frames frames/`);
      } else if (o.image?.length) {
        for (const f of o.image) if (!existsSync(f)) throw new Error(`--image ${f}: no such file`);
        media = { images: o.image.map((f) => path.resolve(f)) };
      } else {
        throw new Error('give an image (--image FILE) or video frames (--frames DIR)');
      }
      const wsDir = o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir();
      const { ModelRegistry } = await import('../../../app/engines/modelRegistry');
      const { resourcesRoot } = await import('../../../app/paths');
      const model = await resolveModelRef(o.model, new ModelRegistry(wsDir, { bundledRoot: resourcesRoot() }));
      const ws = await new Workspace(wsDir).init();
      const lease = await engineFactory({ ...(o.device ? { device: o.device as never } : {}), ...(o.dtype ? { dtype: o.dtype as never } : {}), ...(o.threads ? { threads: o.threads } : {}), ...(o.apiKey ? { apiKey: o.apiKey } : {}) })(model);
      const imageOps = await imageOpsFor(ws.media);
      const ctrl = new AbortController();
      const onInt = () => ctrl.abort(new Error('SIGINT'));
      process.once('SIGINT', onInt);
      const out = (s: string) => {
        if (!o.json) process.stdout.write(s);
      };
      const mediaLine = (m: { id: string; width: number; height: number }) => `${path.join(ws.media.dir, m.id)} (${m.width}×${m.height})`;
      try {
        if (pvDialect) {
          const variant = pyv.pyvisionVariantOf(pvDialect);
          const images = 'images' in media ? media.images : [];
          const r = await runPyVisionEpisode({
            engine: lease.engineFor({ qid: 'run', bench: 'run', question, answer: null, media: {}, isVideo: false, scorer: '' }),
            variant,
            question,
            images,
            imageOps,
            sandbox: await codeSandboxFactory({ ...(o.allowUnisolatedCode ? { allowUnisolated: true } : {}) }),
            maxTurns: o.maxCalls ?? pyv.pyvisionMaxTurns(variant, o.mode),
            ...(o.maxTokens ? { maxTokens: o.maxTokens } : {}),
            temperature: o.temperature,
            signal: ctrl.signal,
            onStep: (e) => {
              if (e.type === 'episode-start') {
                out(`model ${model.kind === 'local' ? model.name : lease.info.model} (${lease.info.kind}), dialect ${pvDialect}, sandbox ${e.sandbox.isolation} (${e.sandbox.python})\n`);
                e.media.forEach((m, i) => out(`image_clue_${i}: ${mediaLine(m)}\n`));
              } else if (e.type === 'turn-start') out(`\n── turn ${e.turnIndex + 1} ──\n`);
              else if (e.type === 'token') out(e.delta);
              else if (e.type === 'code-executed') {
                const a = e.call.arguments as { stdout?: string; wallMs?: number };
                out(`\n\n→ python (${Math.round(a.wallMs ?? 0)} ms)${e.call.edited ? ' [edited]' : ''}\n`);
                if (e.call.error) out(`  error: ${e.call.error}\n`);
                for (const m of e.call.produced) out(`  figure ${mediaLine(m)}\n`);
                out(`  observation: ${JSON.stringify(e.observation)}\n`);
              }
            },
          });
          const t = r.trajectory;
          out(`\nstop: ${t.stopReason}${t.error ? ` (${t.error})` : ''}\n`);
          if (t.finalText !== undefined) out(`answer: ${t.finalText.trim()}\n`);
          if (o.json) process.stdout.write(JSON.stringify(t) + '\n');
          if (t.stopReason === 'engine_error' || t.stopReason === 'error') process.exitCode = 1;
          return;
        }
        const t = await runEpisode({
          engine: lease.engineFor({ qid: 'run', bench: 'run', question, answer: null, media: {}, isVideo: 'videoFrames' in media, scorer: '' }),
          dialect: dialect!,
          media,
          question,
          imageOps,
          settings: {
            prompt: o.prompt,
            mode: o.mode,
            decoding: { temperature: o.temperature },
            limits: { ...(o.maxTokens ? { maxTokensPerTurn: o.maxTokens } : {}), ...(o.maxCalls !== undefined ? { maxCalls: o.maxCalls } : {}) },
          },
          signal: ctrl.signal,
          onStep: (e) => {
            switch (e.type) {
              case 'episode-start':
                out(`model ${model.kind === 'local' ? model.name : lease.info.model} (${lease.info.kind}${lease.info.device ? `, ${lease.info.device}` : ''}${threadsText(lease.info.threads)}), dialect ${dialect!.id}, prompt ${o.prompt}\n`);
                e.media.forEach((m, i) => out(`image ${i + 1}: ${mediaLine(m)}\n`));
                break;
              case 'turn-start':
                out(`\n── turn ${e.turnIndex + 1} ──\n`);
                break;
              case 'token':
                out(e.delta);
                break;
              case 'call-executed': {
                const c = e.call;
                out(`\n\n→ tool ${c.name ?? '(unparsed)'}${c.bboxRaw ? ` bbox ${JSON.stringify(c.bboxRaw)} (${c.bboxMode})` : ''}${c.cropBox ? ` → crop box ${JSON.stringify(c.cropBox)}` : ''}${c.frameIndices ? ` frames ${JSON.stringify(c.frameIndices)}` : ''}\n`);
                if (c.error) out(`  error: ${c.error}\n`);
                for (const m of c.produced) out(`  wrote ${mediaLine(m)}\n`);
                if (e.observation) out(`  observation: ${JSON.stringify(e.observation)}\n`);
                break;
              }
              case 'turn-end':
                out(`\n  [${e.turn.completionTokens ?? '?'} tokens, ${Math.round(e.turn.latencyMs ?? 0)} ms${e.turn.finishReason ? `, ${e.turn.finishReason}` : ''}]\n`);
                break;
              default:
                break;
            }
          },
        });
        out(`\nstop: ${t.stopReason}${t.error ? ` (${t.error})` : ''}\n`);
        if (t.finalText !== undefined) out(`answer: ${t.finalText.trim()}\n`);
        if (o.json) process.stdout.write(JSON.stringify(t) + '\n');
        if (t.stopReason === 'engine_error' || t.stopReason === 'error') process.exitCode = 1;
      } finally {
        process.off('SIGINT', onInt);
        await imageOps.close?.();
        await lease.dispose();
      }
    });
}

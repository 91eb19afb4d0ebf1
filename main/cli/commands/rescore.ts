/**
 * `loupe rescore RUN --scorer NAME` — score a finished run again with another scorer, without running the
 * model: writes a new run whose samples carry both scores and prints how often they disagree. The
 * `llm-judge` scorer asks an OpenAI-compatible judge server (`--judge-url`, `--judge-model`) with a
 * reference prompt (`--judge-prompt`), caching every reply (`--judge-cache`, default in the workspace) so
 * a second re-score makes no judge calls.
 */
import type { Command } from 'commander';
import path from 'node:path';

interface RescoreCliOptions {
  scorer: string;
  workspace?: string;
  judgeUrl?: string;
  judgeModel?: string;
  judgeKey?: string;
  judgePrompt?: string;
  judgeTemperature?: string;
  judgeCache?: string;
  dataSource?: string;
  concurrency?: string;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('rescore')
    .description('score a run again with another scorer (e.g. llm-judge) without re-running the model; writes a new run with both scores')
    .argument('<run>', 'run id')
    .requiredOption('--scorer <name>', 'a rule scorer name, or llm-judge')
    .option('--workspace <dir>', 'workspace folder (default $LOUPE_WORKSPACE or the user data dir)')
    .option('--judge-url <url>', 'llm-judge: OpenAI-compatible base URL, e.g. http://127.0.0.1:18901/v1')
    .option('--judge-model <id>', 'llm-judge: served model id (e.g. judge)')
    .option('--judge-key <key>', 'llm-judge: API key (default $LOUPE_JUDGE_API_KEY or EMPTY)')
    .option('--judge-prompt <version>', 'llm-judge: deepeyes-eval/v1, deepeyes/v1 or pyvision-rl/v1', 'deepeyes-eval/v1')
    .option('--judge-temperature <t>', "llm-judge: override the reference's temperature")
    .option('--judge-cache <file>', 'llm-judge: reply cache (JSONL; default <workspace>/cache/judge.jsonl)')
    .option('--data-source <name>', 'pyvision-rl/v1: data source for the examples (default: each sample\'s bench)')
    .option('--concurrency <n>', 'samples scored at once (the judge engine allows 4 requests in flight)', '8')
    .option('--json', 'print the summary as JSON')
    .action(async (run: string, o: RescoreCliOptions) => {
      const [{ Workspace, defaultWorkspaceDir }, { rescoreRun }, scorersMod, judgeMod, prompts] = await Promise.all([
        import('../../../app/workspace'),
        import('../../../app/bench/rescore'),
        import('../../../app/bench/scorers'),
        import('../../../app/bench/scorers/llmJudge'),
        import('../../../app/bench/scorers/judgePrompts'),
      ]);
      const wsDir = o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir();
      const ws = new Workspace(wsDir);
      let scorer;
      if (o.scorer === 'llm-judge') {
        if (!o.judgeUrl || !o.judgeModel) throw new Error('llm-judge needs --judge-url and --judge-model');
        const version = o.judgePrompt as (typeof prompts.JUDGE_PROMPT_VERSIONS)[number];
        if (!prompts.JUDGE_PROMPT_VERSIONS.includes(version)) throw new Error(`unknown --judge-prompt ${JSON.stringify(o.judgePrompt)}; use one of ${prompts.JUDGE_PROMPT_VERSIONS.join(', ')}`);
        const { OpenAIEngine } = await import('../../../app/engines/openai/openaiEngine');
        const engine = new OpenAIEngine({ baseURL: o.judgeUrl, model: o.judgeModel, apiKey: o.judgeKey ?? process.env.LOUPE_JUDGE_API_KEY ?? 'EMPTY' });
        const cache = await judgeMod.JudgeCache.open(o.judgeCache ?? path.join(wsDir, 'cache', 'judge.jsonl'));
        const temperature = o.judgeTemperature === undefined ? undefined : Number(o.judgeTemperature);
        if (temperature !== undefined && !Number.isFinite(temperature)) throw new Error(`--judge-temperature must be a number, got ${o.judgeTemperature}`);
        scorer = new judgeMod.LlmJudgeScorer({ client: judgeMod.engineJudgeClient(engine), promptVersion: version, cache, ...(temperature !== undefined ? { temperature } : {}) });
      } else {
        scorer = scorersMod.getScorer(o.scorer);
      }
      const concurrency = Number(o.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--concurrency must be a positive integer, got ${o.concurrency}`);
      const s = await rescoreRun({ store: ws.runs, runId: run, scorer, concurrency, ...(o.dataSource ? { dataSource: o.dataSource } : {}) });
      if (o.json) process.stdout.write(JSON.stringify(s) + '\n');
      else {
        const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
        process.stdout.write(
          `${s.runId}: ${s.n} samples re-scored with ${s.scorer}\n` +
            `  ${s.originalScorer}: ${pct(s.originalAccuracy)}   ${s.scorer}: ${pct(s.newAccuracy)}   disagree on ${s.disagreements}\n` +
            (s.judgeCalls !== undefined ? `  judge calls: ${s.judgeCalls} (the rest were rules or cached)\n` : ''),
        );
      }
    });
}

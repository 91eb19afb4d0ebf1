/**
 * The llm-judge scorer through real OpenAI-compatible servers:
 * - a recorded judge transcript (tests/fixtures/judge; replies written for these tests from the verdicts
 *   the DeepEyes result files record, labelled so in the file) served by Loupe's own OpenAI server over
 *   loopback: a DeepEyes import re-scored with the DeepEyes eval judge reproduces the file's accuracy,
 *   the reference's rules decide 105 of the 191 samples, and a second re-score costs no judge call;
 * - `serve-model` with the bundled tiny random model: its replies are nonsense, but the request, the raw
 *   reply, its parsing and the cache are the real plumbing.
 */
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rescoreRun } from '../../../app/bench/rescore';
import { parseJudgeReply } from '../../../app/bench/scorers/judgePrompts';
import { engineJudgeClient, JudgeCache, LlmJudgeScorer, type JudgeDetail } from '../../../app/bench/scorers/llmJudge';
import { LocalEngine } from '../../../app/engines/local/localEngine';
import { OpenAIEngine } from '../../../app/engines/openai/openaiEngine';
import { startOpenAIServer, type OpenAIServer } from '../../../app/engines/serve/openaiServer';
import { importRun, workspaceWriter } from '../../../app/importers';
import { Workspace } from '../../../app/workspace';
import { workerThreadTransportFactory } from '../../../native/engine/workerThreadTransport';
import { TINY_DIR } from '../engines/parityFixture';
import { TranscriptJudgeEngine } from './transcriptJudge';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const DEEPEYES = path.join(root, 'tests/fixtures/importers/deepeyes');

let tmp: string;
let ws: Workspace;
let runId: string;
let transcript: TranscriptJudgeEngine;
let server: OpenAIServer;

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-judge-'));
  ws = await new Workspace(tmp).init();
  const imported = await importRun('deepeyes', DEEPEYES, { name: 'deepeyes-vstar' });
  ({ runId } = await workspaceWriter(tmp).write(imported));
  transcript = new TranscriptJudgeEngine();
  server = await startOpenAIServer({ engine: transcript, port: 0, modelId: 'judge' });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** The judge as a user points it at a server: its URL and the key the server printed. */
const judgeOver = (srv: OpenAIServer, model: string, cache: JudgeCache, promptVersion: 'deepeyes-eval/v1' | 'deepeyes/v1' = 'deepeyes-eval/v1') =>
  new LlmJudgeScorer({ client: engineJudgeClient(new OpenAIEngine({ baseURL: srv.url, model, apiKey: srv.apiKey ?? 'EMPTY', retryBaseMs: 5, timeoutMs: 60_000 })), promptVersion, cache });

describe('llm-judge against a recorded judge transcript (served over HTTP)', () => {
  it('re-scoring the DeepEyes V* import reproduces the accuracy the files record; a second re-score makes no judge call', async () => {
    const cache = await JudgeCache.open(path.join(tmp, 'judge-cache.jsonl'));
    const first = await rescoreRun({ store: ws.runs, runId, scorer: judgeOver(server, 'judge', cache) });
    expect(first).toMatchObject({ n: 191, disagreements: 0, judgeCalls: 86, skippedLines: 0 });
    expect(first.originalAccuracy).toBe((97 + 57) / 191);
    expect(first.newAccuracy).toBe((97 + 57) / 191);
    expect(transcript.seen).toHaveLength(86);
    expect(transcript.seen[0]).toMatchObject({ temperature: 0 });
    expect(transcript.seen[0]!.messages[0]).toEqual({ role: 'system', content: [{ type: 'text', text: 'You are a helpful assistant.' }] });

    const { records } = await ws.runs.readSamples(first.runId);
    const judged = records.filter((r) => (r.extra?.judge as JudgeDetail).decidedBy === 'judge');
    expect(judged).toHaveLength(86);
    for (const r of judged) {
      const d = r.extra!.judge as JudgeDetail;
      expect(d).toMatchObject({ judgeModel: 'judge', promptVersion: 'deepeyes-eval/v1', temperature: 0, cached: false });
      expect(['1', '0', 'Judgement: 1', 'Judgement: 0']).toContain(d.rawReply);
      expect(r.scores).toEqual({ [Object.keys(r.scores!)[0]!]: r.extra!.original && (r.extra!.original as { score: number }).score, 'llm-judge': r.score });
    }
    expect(records.filter((r) => (r.extra?.judge as JudgeDetail).decidedBy === 'rule')).toHaveLength(105);
    expect((await ws.runs.readManifest(first.runId)).extra).toMatchObject({ rescoredFrom: runId });

    // Same cache file, new scorer: every reply comes from the cache.
    const again = await rescoreRun({ store: ws.runs, runId, scorer: judgeOver(server, 'judge', await JudgeCache.open(path.join(tmp, 'judge-cache.jsonl'))) });
    expect(again).toMatchObject({ judgeCalls: 0, disagreements: 0, newAccuracy: first.newAccuracy });
    expect(transcript.seen).toHaveLength(86);
  }, 120_000);

  it('a judge that disagrees shows up as disagreements (the comparison can fail)', async () => {
    const contrary = new TranscriptJudgeEngine();
    for (const [k, v] of contrary.replies) contrary.replies.set(k, v.includes('1') ? '0' : '1');
    const s2 = await startOpenAIServer({ engine: contrary, port: 0, modelId: 'judge' });
    try {
      const s = await rescoreRun({ store: ws.runs, runId, scorer: judgeOver(s2, 'judge', JudgeCache.memory()) });
      expect(s.disagreements).toBe(86);
      expect(s.newAccuracy).not.toBe(s.originalAccuracy);
    } finally {
      await s2.close();
    }
  }, 120_000);

  it('`loupe rescore` prints both accuracies and the disagreement count', async () => {
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'main/cli/run.ts'), 'rescore', runId, '--scorer', 'llm-judge', '--workspace', tmp, '--judge-url', server.url, '--judge-model', 'judge', '--json'], { cwd: root, env: { ...process.env, LOUPE_JUDGE_API_KEY: server.apiKey ?? '' } });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const s = JSON.parse(out.stdout.trim().split('\n').at(-1)!) as { n: number; newAccuracy: number; disagreements: number; judgeCalls: number };
    expect(s).toMatchObject({ n: 191, newAccuracy: (97 + 57) / 191, disagreements: 0 });
    // The CLI's default cache lives in the workspace; it started empty there.
    expect(s.judgeCalls).toBe(86);
  }, 120_000);
});

describe('llm-judge against serve-model (the bundled tiny model behind a real OpenAI-compatible server)', () => {
  let local: LocalEngine;
  let served: OpenAIServer;
  beforeAll(async () => {
    local = await LocalEngine.start({ modelDir: TINY_DIR, transport: workerThreadTransportFactory, kvCache: false });
    served = await startOpenAIServer({ engine: local, port: 0 });
  }, 120_000);
  afterAll(async () => {
    await served?.close();
    await local?.dispose();
  });

  it('stores the judge model, prompt version, temperature and raw reply; the reply is parsed as the reference does; a repeat is cached', async () => {
    const cache = JudgeCache.memory();
    const judge = new LlmJudgeScorer({ client: engineJudgeClient(new OpenAIEngine({ baseURL: served.url, model: 'tiny-random-qwen25vl', apiKey: served.apiKey ?? 'EMPTY', timeoutMs: 120_000 }), { maxTokens: 8 }), promptVersion: 'deepeyes/v1', cache });
    const input = { prediction: 'Looking closer.\n<answer>red</answer>', answer: 'The car is red.', question: 'What color is the car?' };
    const r = await judge.judge(input);
    const d = r.detail as unknown as JudgeDetail;
    expect(d).toMatchObject({ judgeModel: 'tiny-random-qwen25vl', promptVersion: 'deepeyes/v1', temperature: 0.3, decidedBy: 'judge', cached: false });
    expect(typeof d.rawReply).toBe('string');
    expect(d.verdict).toBe(parseJudgeReply(d.rawReply!).verdict);
    expect(r.score).toBe(parseJudgeReply(d.rawReply!).acc);
    expect(r.extracted).toBe('red');
    const again = await judge.judge(input);
    expect(again.detail).toMatchObject({ cached: true, rawReply: d.rawReply });
    expect(judge.calls).toBe(1);
    expect(cache.size).toBe(1);
  }, 180_000);
});

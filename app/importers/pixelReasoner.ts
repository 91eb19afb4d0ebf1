/**
 * Pixel Reasoner eval outputs (TIGER-AI-Lab/Pixel-Reasoner, `experience_maker.py`):
 * - `<ckpt>/logs/sample.eval_iter{N}_{rank}.jsonl`: one line per sample with `solutions` (all assistant
 *   turns and the observation user turns, image pads stripped), `gts`, `round0_correctness` (acc ∈
 *   {−1, 0, 1}; −1 = nothing parsed), `round1_correctness`, `validity`, `reward`, `round0_nwait` (tool
 *   calls), `round1_nwait` (failed or force-terminated calls), `qids` (`<bench>-<id>`), `questions` (the
 *   decoded prompt), `num_actions` (action *tokens*), `curiosity`, `penalty`;
 * - `<ckpt>/logs/metrics_iter{N}.json`: `[{benchname, pass1, ncorrect, ntotal, modelpath}]`;
 * - `<ckpt>/logs/dumps_iter{N}/{qid}/conv.json` = `[conversation, prompt, str(images)]` and
 *   `iter{k}.jpg` = the (resized) crop returned after assistant turn k.
 * `solutions` joins turns as `{a0}<|im_start|>user\n{obs}<|vision_start|><|vision_end|><|im_end|>\n<|im_start|>assistant\n{a1}…`.
 */
import path from 'node:path';
import { promises as fsp } from 'node:fs';
import type { SampleRecord, StopReason } from '../contract/trajectory';
import { getDialect } from '../protocol';
import { lastBoxed, prIsToolTurn, PR_MAX_CALLS, PR_MAX_IMAGES } from '../protocol/pixelReasoner';
import { PR_GUIDELINES } from '../protocol/prompts';
import { APP_VERSION } from '../version';
import {
  buildTurns,
  FieldError,
  isDir,
  isFile,
  isRecord,
  mediaFromFile,
  optNumber,
  readJsonFile,
  readJsonlRows,
  reqString,
  splitChatResponse,
  systemTextOfPrompt,
  uniqueQid,
  userTextOfPrompt,
} from './common';
import { ImportError, type ImportedMedia, type ImportedRun, type ImportIssue, type ImportOptions } from './types';

const SAMPLE_RE = /^sample\.eval_iter(\d+)_(\d+)\.jsonl$/;

/** The logs folder for a path that is the checkpoint dir, its logs dir, or one sample file. */
async function locate(input: string, iter?: number): Promise<{ logs: string; files: string[]; iter: number }> {
  if (await isFile(input)) {
    const m = SAMPLE_RE.exec(path.basename(input));
    return { logs: path.dirname(input), files: [input], iter: m ? Number(m[1]) : (iter ?? 0) };
  }
  if (!(await isDir(input))) throw new ImportError(`${input}: no such file or folder`);
  const logs = (await isDir(path.join(input, 'logs'))) ? path.join(input, 'logs') : input;
  const names = (await fsp.readdir(logs)).filter((f) => SAMPLE_RE.test(f));
  if (names.length === 0) throw new ImportError(`${logs}: no Pixel Reasoner eval logs (sample.eval_iter{N}_{rank}.jsonl)`);
  const iters = [...new Set(names.map((f) => Number(SAMPLE_RE.exec(f)?.[1])))].sort((a, b) => a - b);
  const chosen = iter ?? (iters[iters.length - 1] as number);
  if (!iters.includes(chosen)) throw new ImportError(`${logs}: no eval logs for iteration ${chosen} (found ${iters.join(', ')})`);
  const files = names
    .filter((f) => Number(SAMPLE_RE.exec(f)?.[1]) === chosen)
    .sort((a, b) => Number(SAMPLE_RE.exec(a)?.[2]) - Number(SAMPLE_RE.exec(b)?.[2]))
    .map((f) => path.join(logs, f));
  return { logs, files, iter: chosen };
}

/** Question text and prompt id from the decoded prompt (user text = `q + "\n\n" + guideline`). */
export function prQuestionOf(prompt: string): { question: string; promptId: string; userText: string } {
  const user = userTextOfPrompt(prompt) ?? prompt;
  for (const id of ['vcot', 'notool'] as const) {
    const suffix = `\n\n${PR_GUIDELINES[id]}`;
    if (user.endsWith(suffix)) return { question: user.slice(0, -suffix.length), promptId: id, userText: user };
  }
  return { question: user, promptId: 'unknown', userText: user };
}

interface ConvDump {
  /** Image file per assistant turn index (basename → local path when present). */
  cropFiles: Map<number, string>;
  originals: string[];
  imageSizes: Array<[number, number]>;
  isVideo: boolean;
}

/** Read `dumps_iter{N}/{qid}/conv.json` (best effort: problems become warnings). */
async function readConv(dir: string, shown: string, issues: ImportIssue[]): Promise<ConvDump | null> {
  const file = path.join(dir, 'conv.json');
  if (!(await isFile(file))) return null;
  let v: unknown;
  try {
    v = await readJsonFile(file, shown);
  } catch (e) {
    issues.push({ severity: 'warning', file: shown, message: `${(e as Error).message}; using the log line only` });
    return null;
  }
  if (!Array.isArray(v) || !Array.isArray(v[0])) {
    issues.push({ severity: 'warning', file: shown, message: 'expected [conversation, prompt, images]; using the log line only' });
    return null;
  }
  const out: ConvDump = { cropFiles: new Map(), originals: [], imageSizes: [], isVideo: false };
  let assistantIdx = -1;
  for (const m of v[0] as unknown[]) {
    if (!isRecord(m)) continue;
    if (m.role === 'assistant') assistantIdx++;
    const parts = Array.isArray(m.content) ? m.content : [];
    for (const p of parts) {
      if (!isRecord(p)) continue;
      if (typeof p.video !== 'undefined') out.isVideo = true;
      const img = p.image;
      if (typeof img !== 'string') continue;
      if (m.role === 'user' && assistantIdx < 0) out.originals.push(img);
      else if (m.role === 'user') {
        const local = path.join(dir, path.basename(img));
        if (await isFile(local)) out.cropFiles.set(assistantIdx, local);
      }
    }
  }
  if (typeof v[2] === 'string') {
    for (const m of v[2].matchAll(/size=(\d+)x(\d+)/g)) out.imageSizes.push([Number(m[1]), Number(m[2])]);
  }
  return out;
}

export async function importPixelReasoner(input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  const { logs, files, iter } = await locate(input, opts.iter);
  const issues: ImportIssue[] = [];
  const samples: SampleRecord[] = [];
  const media = new Map<string, ImportedMedia>();
  const seen = new Map<string, number>();
  const dialect = getDialect('pixel-reasoner');
  const dumps = path.join(logs, `dumps_iter${iter}`);
  let records = 0;
  for (const file of files) {
    const shown = path.basename(file);
    const { rows, nonBlank } = await readJsonlRows(file, shown, issues);
    records += nonBlank;
    for (const row of rows) {
      try {
        if (!isRecord(row.value)) throw new FieldError('(record)', 'expected a JSON object');
        const rec = row.value;
        const qidRaw = rec.qids;
        if (typeof qidRaw !== 'string' && typeof qidRaw !== 'number') throw new FieldError('qids', qidRaw === undefined ? 'missing (expected the question id)' : 'expected a string');
        const qid = String(qidRaw);
        const solutions = reqString(rec, 'solutions');
        const prompt = typeof rec.questions === 'string' ? rec.questions : '';
        const acc = optNumber(rec, 'round0_correctness');
        if (acc === undefined) throw new FieldError('round0_correctness', 'missing (expected the accuracy -1, 0 or 1)');
        const nCalls = optNumber(rec, 'round0_nwait');
        const nFails = optNumber(rec, 'round1_nwait');

        const { assistant, observations } = splitChatResponse(solutions);
        const turns = buildTurns(dialect, assistant, observations, (o) => {
          const m = /^\nExecution error:\n([\s\S]*)\n$/.exec(o);
          return m ? (m[1] as string) : undefined;
        });
        const conv = await readConv(path.join(dumps, qid), `dumps_iter${iter}/${qid}/conv.json`, issues);
        for (const t of turns) {
          if (!t.call || t.call.error !== undefined) continue;
          const crop = conv?.cropFiles.get(t.index) ?? null;
          const fallback = path.join(dumps, qid, `iter${t.index}.jpg`);
          const f = crop ?? ((await isFile(fallback)) ? fallback : null);
          if (!f || t.call.name !== 'crop_image_normalized') continue;
          const m = await mediaFromFile(f);
          media.set(m.ref.id, m);
          t.call.produced = [m.ref];
          const said = /Image Size: (\d+)x(\d+)/.exec(t.observation ?? '');
          if (said && (Number(said[1]) !== m.ref.width || Number(said[2]) !== m.ref.height)) {
            issues.push({ severity: 'warning', file: `dumps_iter${iter}/${qid}/${path.basename(f)}`, message: `crop is ${m.ref.width}x${m.ref.height} but the observation says ${said[1]}x${said[2]}` });
          }
        }
        const calls = turns.filter((t) => t.call).length;
        if (nCalls !== undefined && nCalls !== calls) {
          issues.push({ severity: 'warning', file: shown, line: row.line, field: 'round0_nwait', message: `says ${nCalls} tool calls but the solution text has ${calls}` });
        }
        const last = assistant[assistant.length - 1] ?? '';
        const images = 1 + observations.reduce((a, o) => a + o.images, 0);
        let stop: StopReason = 'answer';
        if (prIsToolTurn(last)) stop = calls >= PR_MAX_CALLS ? 'max_calls' : images > PR_MAX_IMAGES ? 'max_images' : 'token_budget';
        const { question, promptId, userText } = prQuestionOf(prompt);
        const bench = qid.split('-')[0] || 'pixel-reasoner';
        const correct = acc > 0.5;
        const extracted = lastBoxed(last);
        const gts = rec.gts;
        const extra: Record<string, unknown> = {};
        for (const k of ['round1_correctness', 'validity', 'reward', 'round0_nwait', 'round1_nwait', 'num_actions', 'curiosity', 'penalty']) {
          if (rec[k] !== undefined) extra[k] = rec[k];
        }
        if (acc < 0) extra.unparsed = true;
        if (conv) {
          extra.originalImages = conv.originals;
          if (conv.imageSizes.length) extra.imageSizes = conv.imageSizes;
        }
        samples.push({
          qid: uniqueQid(seen, qid),
          bench,
          question,
          answer: gts ?? null,
          prediction: last,
          extracted,
          score: correct ? 1 : 0,
          scores: { acc },
          correct,
          stop_reason: stop,
          calls,
          tool_errors: turns.filter((t) => t.call?.error !== undefined).length,
          trajectory: {
            dialect: 'pixel-reasoner',
            prompt: promptId,
            media: [],
            originals: [],
            isVideo: conv?.isVideo ?? /select_frames/.test(solutions),
            question,
            ...(systemTextOfPrompt(prompt) !== null ? { system: systemTextOfPrompt(prompt) as string } : {}),
            userText,
            turns,
            stopReason: stop,
            finalText: last,
          },
          source: `${shown}:${row.line}`,
          extra: { ...extra, ...(nFails !== undefined ? { failedCalls: nFails } : {}) },
        });
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        issues.push({ severity: 'error', file: shown, line: row.line, field: e.field, message: e.message });
      }
    }
  }
  let metrics: unknown;
  const metricsFile = path.join(logs, `metrics_iter${iter}.json`);
  if (await isFile(metricsFile)) metrics = await readJsonFile(metricsFile, path.basename(metricsFile)).catch((e: Error) => {
    issues.push({ severity: 'warning', file: path.basename(metricsFile), message: e.message });
    return undefined;
  });
  const modelPath = Array.isArray(metrics) && isRecord(metrics[0]) && typeof metrics[0].modelpath === 'string' ? metrics[0].modelpath : undefined;
  const benches = [...new Set(samples.map((s) => s.bench))];
  return {
    manifest: {
      name: opts.name ?? `pixel-reasoner-iter${iter}`,
      kind: 'import',
      appVersion: APP_VERSION,
      model: { id: opts.model ?? (modelPath ? path.basename(modelPath) : 'pixel-reasoner'), ...(modelPath ? { path: modelPath } : {}) },
      engine: 'import',
      dialect: 'pixel-reasoner',
      prompt: [...new Set(samples.map((s) => s.trajectory?.prompt ?? 'unknown'))].join('+') || 'vcot',
      bench: { id: benches.join('+') || 'pixel-reasoner', n: samples.length },
      scorers: { acc: 'Pixel Reasoner rule_reward (round0_correctness > 0.5), as recorded' },
      extra: { importedFrom: 'pixel-reasoner', iter, files: files.map((f) => path.basename(f)), ...(metrics !== undefined ? { metrics } : {}) },
    },
    samples,
    media: [...media.values()],
    issues,
    stats: { files: files.length, records, imported: samples.length, skipped: records - samples.length },
  };
}

/**
 * verl-tool rollout dumps (TIGER-AI-Lab/verl-tool), two documented shapes:
 * - **A**, verl's `trainer.rollout_data_dir` / `validation_data_dir`: `{step}.jsonl`, one line per rollout
 *   with `input`, `output` (decoded with `skip_special_tokens=True`, so chat markers are gone), `score`,
 *   `step`, `gts?`, the reward extras (`accuracy`, `curiousity_penalty`, `action_redundancy_penalty`…)
 *   and verl-tool's `tool_interact_info` + `traj_stop_reason`;
 * - **B**, the pixel_reasoner reward manager's records: `{name}-step[-val]-{n}.json`, a JSON list of
 *   `{id, data_source, prompt, response, ground_truth, score: {accuracy, score, …}, reward,
 *   tool_interact_info, extra_info: {qid, index, …}, num_turn?, num_valid_action?, is_done?}` with special
 *   tokens kept and image data cut to 50 characters.
 * `tool_interact_info[k]` = `{action, obs, valid, done, is_last_step, invalid_reason?, image?}` per tool turn.
 */
import path from 'node:path';
import { promises as fsp } from 'node:fs';
import type { SampleRecord, StopReason } from '../contract/trajectory';
import { getDialect } from '../protocol';
import { lastBoxed } from '../protocol/pixelReasoner';
import { VT_GUIDELINE } from '../protocol/prompts';
import { APP_VERSION } from '../version';
import { buildTurns, FieldError, isDir, isRecord, optNumber, readJsonFile, readJsonlRows, splitByObservations, splitChatResponse, systemTextOfPrompt, uniqueQid, userTextOfPrompt } from './common';
import { ImportError, type ImportedRun, type ImportIssue, type ImportOptions } from './types';

async function inputFiles(p: string): Promise<string[]> {
  if (!(await isDir(p))) return [p];
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of (await fsp.readdir(d, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }))) {
      const f = path.join(d, e.name);
      if (e.isDirectory()) await walk(f);
      else if (/^\d+\.jsonl$/.test(e.name) || /-step(?:-val)?-\d+\.json$/.test(e.name) || e.name.endsWith('.jsonl')) out.push(f);
    }
  };
  await walk(p);
  if (out.length === 0) throw new ImportError(`${p}: no verl-tool rollout dumps ({step}.jsonl or *-step-*.json) in this folder`);
  return out;
}

/** Split a response with chat markers, or one decoded without special tokens (`…</tool_call>\nuser\n…\nassistant\n`). */
export function splitVtResponse(text: string): { assistant: string[]; observations: Array<{ text: string; images: number }> } {
  if (text.includes('<|im_start|>')) return splitChatResponse(text);
  return splitByObservations(text, /(?<=<\/tool_call>)\n?user\n([\s\S]*?)\nassistant\n/g);
}

/** The question from a prompt with or without chat markers; drops `<image>` tokens and the guideline. */
export function vtQuestionOf(prompt: string): { question: string; userText: string; system?: string } {
  let user: string;
  let system: string | undefined;
  if (prompt.includes('<|im_start|>')) {
    user = userTextOfPrompt(prompt) ?? prompt;
    system = systemTextOfPrompt(prompt) ?? undefined;
  } else {
    const i = prompt.lastIndexOf('\nuser\n');
    const j = prompt.lastIndexOf('\nassistant\n');
    user = i >= 0 ? prompt.slice(i + 6, j > i ? j : undefined) : prompt;
    if (prompt.startsWith('system\n') && i > 0) system = prompt.slice(7, i);
  }
  let q = user.replace(/^(?:<image>)+/, '');
  for (const sep of ['\n\n\n\n', '\n\n']) {
    if (q.endsWith(sep + VT_GUIDELINE)) {
      q = q.slice(0, -(sep.length + VT_GUIDELINE.length));
      break;
    }
  }
  return { question: q, userText: user, ...(system !== undefined ? { system } : {}) };
}

function mapStop(reason: unknown): StopReason | undefined {
  if (typeof reason !== 'string') return undefined;
  const r = reason.toLowerCase();
  // verl-tool's agent loop (verltool_agent_loop.py): max_model_len_exceeded, max_response_length_reached, …
  if (r.includes('model_len')) return 'token_budget';
  if (r.includes('length') || r.includes('token')) return 'length';
  if (r.includes('turn') || r.includes('max_action') || r.includes('calls')) return 'max_calls';
  if (r.includes('finish') || r.includes('done') || r.includes('answer') || r.includes('stop')) return 'answer';
  return undefined;
}

export function convertVtRecord(rec: Record<string, unknown>, fallbackQid: string, shown: string): SampleRecord {
  const shapeB = 'response' in rec || 'prompt' in rec;
  const outField = shapeB ? 'response' : 'output';
  const inField = shapeB ? 'prompt' : 'input';
  const output = rec[outField];
  if (typeof output !== 'string') throw new FieldError(outField, output === undefined ? 'missing (expected the model response text)' : 'expected a string');
  const prompt = typeof rec[inField] === 'string' ? (rec[inField] as string) : '';
  const extraInfo = isRecord(rec.extra_info) ? rec.extra_info : {};
  const scoreObj = isRecord(rec.score) ? rec.score : undefined;
  const accuracy = scoreObj ? optNumber(scoreObj, 'accuracy') : optNumber(rec, 'accuracy');
  const scoreNum = scoreObj ? optNumber(scoreObj, 'score') : optNumber(rec, 'score');
  if (accuracy === undefined && scoreNum === undefined) throw new FieldError('score', 'missing (expected score or accuracy)');
  const acc = accuracy ?? ((scoreNum as number) > 0 ? 1 : 0);

  const tii = Array.isArray(rec.tool_interact_info) ? rec.tool_interact_info.filter(isRecord) : [];
  const { assistant, observations } = splitVtResponse(output);
  const dialect = getDialect('verl-tool');
  let k = 0;
  const turns = buildTurns(dialect, assistant, observations, () => {
    const info = tii[k++];
    if (!info || info.valid !== false) return undefined;
    const why = typeof info.invalid_reason === 'string' ? info.invalid_reason : typeof info.obs === 'string' && info.obs ? info.obs : isRecord(info.obs) && typeof info.obs.obs === 'string' ? info.obs.obs : 'invalid action';
    return why;
  });
  const calls = turns.filter((t) => t.call).length;
  const last = assistant[assistant.length - 1] ?? '';
  const stop = mapStop(rec.traj_stop_reason) ?? (turns[turns.length - 1]?.call ? 'max_calls' : 'answer');
  const { question, userText, system } = vtQuestionOf(prompt);
  const idOf = extraInfo.qid ?? (rec.id !== null && rec.id !== undefined ? rec.id : undefined);
  const qid = String(idOf ?? (extraInfo.index !== undefined ? `${String(rec.data_source ?? 'sample')}-${String(extraInfo.index)}` : fallbackQid));
  // Pixel Reasoner qids are `<bench>-<id>`; a made-up qid says nothing about the benchmark.
  const bench = typeof rec.data_source === 'string' ? rec.data_source : idOf !== undefined && String(idOf).includes('-') ? (String(idOf).split('-')[0] as string) : 'verl-tool';
  const scores: Record<string, number> = { accuracy: acc };
  for (const [key, v] of Object.entries(scoreObj ?? rec)) {
    if (typeof v === 'number' && Number.isFinite(v) && ['score', 'curiousity_penalty', 'action_redundancy_penalty', 'reward'].includes(key)) scores[key] = v;
  }
  if (typeof rec.reward === 'number') scores.reward = rec.reward;
  const extra: Record<string, unknown> = {};
  for (const key of ['step', 'num_turn', 'num_valid_action', 'is_done', 'traj_stop_reason', 'verl_tool_metrics', 'request_id']) if (rec[key] !== undefined) extra[key] = rec[key];
  if (Object.keys(extraInfo).length) extra.extra_info = extraInfo;
  if (tii.length !== calls && tii.length > 0) extra.toolInteractions = tii.length;
  return {
    qid,
    bench,
    question,
    answer: rec.ground_truth ?? rec.gts ?? (isRecord(rec.reward_model) ? rec.reward_model.ground_truth : undefined) ?? null,
    prediction: last,
    extracted: lastBoxed(last),
    score: acc > 0 ? 1 : 0,
    scores,
    correct: acc > 0,
    stop_reason: stop,
    calls,
    tool_errors: turns.filter((t) => t.call?.error !== undefined).length,
    trajectory: {
      dialect: 'verl-tool',
      prompt: 'vcot',
      media: [],
      originals: [],
      isVideo: extraInfo.is_video === true,
      question,
      ...(system !== undefined ? { system } : {}),
      userText,
      turns,
      stopReason: stop,
      finalText: last,
    },
    source: shown,
    extra,
  };
}

export async function importVerlTool(input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  const files = await inputFiles(input);
  const issues: ImportIssue[] = [];
  const samples: SampleRecord[] = [];
  const seen = new Map<string, number>();
  let records = 0;
  for (const file of files) {
    const shown = path.relative(await isDir(input) ? input : path.dirname(input), file) || path.basename(file);
    let rows: Array<{ line: number; value: unknown }>;
    if (file.endsWith('.json')) {
      const v = await readJsonFile(file, shown);
      if (!Array.isArray(v)) {
        issues.push({ severity: 'error', file: shown, message: 'expected a JSON list of records' });
        continue;
      }
      // For a JSON list, "line" is the record's 1-based position.
      rows = v.map((value, i) => ({ line: i + 1, value }));
      records += v.length;
    } else {
      const r = await readJsonlRows(file, shown, issues);
      rows = r.rows;
      records += r.nonBlank;
    }
    const stem = path.basename(file).replace(/\.jsonl?$/, '');
    // verl_step_records/<exp>/<step>.jsonl (rollouts) and <exp>-val/<step>.jsonl (validation): the folder says which.
    const split = /-val$/.test(path.basename(path.dirname(file))) ? 'val' : undefined;
    for (const row of rows) {
      try {
        if (!isRecord(row.value)) throw new FieldError('(record)', 'expected a JSON object');
        const s = convertVtRecord(row.value, `${split ? `${split}-` : ''}${/^\d+$/.test(stem) ? `step${stem}` : stem}-${row.line}`, `${shown}:${row.line}`);
        if (split) s.extra = { ...s.extra, split };
        s.qid = uniqueQid(seen, s.qid);
        samples.push(s);
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        // A JSON list has no lines worth naming: the record is named by its index instead.
        issues.push(
          file.endsWith('.json')
            ? { severity: 'error', file: shown, field: `[${row.line - 1}].${e.field}`, message: e.message }
            : { severity: 'error', file: shown, line: row.line, field: e.field, message: e.message },
        );
      }
    }
  }
  const benches = [...new Set(samples.map((s) => s.bench))];
  return {
    manifest: {
      name: opts.name ?? `verl-tool-${benches.join('+') || 'import'}`,
      kind: 'import',
      appVersion: APP_VERSION,
      model: { id: opts.model ?? 'verl-tool' },
      engine: 'import',
      dialect: 'verl-tool',
      prompt: 'vcot',
      bench: { id: benches.join('+') || 'verl-tool', n: samples.length },
      scorers: { accuracy: 'verl-tool pixel_reasoner reward manager (math_verify), as recorded' },
      extra: { importedFrom: 'verl-tool', files: files.map((f) => path.basename(f)) },
    },
    samples,
    media: [],
    issues,
    stats: { files: files.length, records, imported: samples.length, skipped: records - samples.length },
  };
}

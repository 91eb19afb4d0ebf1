/**
 * Training templates as the Training page shows them: the upstream recipes plus Loupe's custom-script job, each
 * turned into flat form fields (from its zod schema), with whether it can run here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { FieldIssue, TemplateField, TemplateInfo } from '../contract';
import { LOUPE_TINY_DRIVER, TEMPLATES, getTemplate } from './templates';
import type { JobTemplate, TemplateOutput } from './types';
import { LOUPE_TINY_PY_MODULES, type TrainerPython } from '../workspace/python';

/** Every template the Training page offers (the upstream recipes and the custom script). */
export const ALL_TEMPLATES: JobTemplate[] = TEMPLATES as unknown as JobTemplate[];

/** Short help for fields whose meaning is not obvious from the name (the schemas' JSDoc is not available at runtime). */
const DESCRIPTIONS: Record<string, string> = {
  repoDir: 'Checkout of the trainer on the machine that runs the job',
  model: 'Policy to start from (Hugging Face id or path)',
  policy: 'Warm-start policy (Hugging Face id or path)',
  'dataPrep.filterLen': 'Drop prompts longer than this many tokens (empty = keep all)',
  trainFiles: 'Parquet files to train on instead of the prepared data (one per line)',
  valFiles: 'Validation parquet files (one per line)',
  n: 'Responses per prompt (GRPO group size)',
  trainver: 'Training parquet',
  testver: 'Evaluation parquet',
  lr: 'Learning rate',
  dataset: 'ms-swift JSONL (messages, videos, solution, question_type)',
  judgeHost: 'Where the judge runs, as seen from the training nodes',
  baseModel: 'Model folder to start from (config.json, model.safetensors, tokenizer); relative = in the Loupe checkout',
  dataDir: 'Prepared data folder(s) from prepare.ts, comma-separated; empty = synthesize scenes',
  synthSeed: 'loupe-synth seed of the scenes to make (when dataDir is empty)',
  scenes: 'Scenes to synthesize and prepare (~1–2 s each on a CPU)',
  maxSteps: 'Stop after this many steps (empty = no step limit)',
  minutes: 'Stop after this many minutes of training (empty = no time limit)',
  device: 'Where train.py runs (auto = cuda when available)',
  valEvery: 'Validation loss every K steps',
  outputDir: 'Where the fine-tuned model goes (empty = the job folder’s model/)',
  exportOnnx: 'Also export ONNX (fp32 + q8) so the Models page can load it (needs transformers + onnx; ~20 s)',
  workDir: 'Job-local folder for the synthesized and prepared data',
  recipe: 'plain = language-model loss only; grounded = also train.py’s training-only grounding losses (target, position, pointer, read-out, box weight, mirrored first turns)',
  reading: 'Also the reading losses (glyph head and reading pointer on the crop); with synthesized scenes, half of every batch is built afresh from them',
  trainArgs: 'Extra train.py flags, space-separated, appended last (e.g. --aux-read 5 --crop-eval 0)',
  script: 'Bash body, run as typed',
  metricsFormat: 'How to parse metric lines from the log',
};
const TEXT_FIELDS = new Set(['script']);

type Json = Record<string, unknown>;

/** JSON-schema (zod's toJSONSchema, input side) → flat form fields. */
function fieldsOf(schema: Json, prefix = ''): TemplateField[] {
  const props = (schema['properties'] ?? {}) as Record<string, Json>;
  const required = new Set((schema['required'] ?? []) as string[]);
  const out: TemplateField[] = [];
  for (const [k, raw] of Object.entries(props)) {
    const name = `${prefix}${k}`;
    let p = raw;
    let nullable = false;
    const any = p['anyOf'] as Json[] | undefined;
    if (any) {
      nullable = any.some((x) => x['type'] === 'null');
      p = { ...(any.find((x) => x['type'] !== 'null') ?? {}), ...(p['default'] !== undefined ? { default: p['default'] } : {}) };
    }
    if (p['type'] === 'object' && p['properties']) {
      out.push(...fieldsOf(p, `${name}.`));
      continue;
    }
    const items = (p['items'] ?? {}) as Json;
    const type: TemplateField['type'] =
      p['type'] === 'boolean'
        ? 'boolean'
        : p['type'] === 'integer'
          ? 'integer'
          : p['type'] === 'number'
            ? 'number'
            : p['type'] === 'array'
              ? items['enum']
                ? 'enum[]'
                : 'string[]'
              : p['enum']
                ? 'enum'
                : TEXT_FIELDS.has(name)
                  ? 'text'
                  : 'string';
    const big = (x: unknown): boolean => typeof x === 'number' && Math.abs(x) >= Number.MAX_SAFE_INTEGER;
    const min = p['minimum'] ?? p['exclusiveMinimum'];
    const max = p['maximum'] ?? p['exclusiveMaximum'];
    const options = (p['enum'] ?? items['enum']) as string[] | undefined;
    const description = (p['description'] as string | undefined) ?? DESCRIPTIONS[name];
    out.push({
      name,
      type,
      ...(p['default'] !== undefined ? { default: p['default'] } : {}),
      required: p['default'] === undefined && required.has(k),
      nullable,
      ...(description ? { description } : {}),
      ...(typeof min === 'number' && !big(min) ? { min, ...(p['exclusiveMinimum'] !== undefined ? { exclusiveMin: true } : {}) } : {}),
      ...(typeof max === 'number' && !big(max) ? { max } : {}),
      ...(options ? { options } : {}),
      ...(typeof p['pattern'] === 'string' ? { pattern: p['pattern'] } : {}),
    });
  }
  return out;
}

// ───────────── loupe-tiny: is the local trainer usable here? ─────────────

/** Whether the loupe-tiny template can run here, and what the form says about it. */
export interface LoupeTinyState {
  ok: boolean;
  notice: string;
  /** When not ok: the reason in a few words, for the template list ("torch is missing", "not in this build"). */
  reason?: string;
}
export const LOUPE_TINY_CHECKING: LoupeTinyState = { ok: false, notice: 'Checking for Python with torch…' };

/** The loupe-tiny template is runnable when the driver and a train.py with the fine-tune flags exist and torch imports. */
export async function checkLoupeTiny(root: string, torchPython: () => Promise<TrainerPython>): Promise<LoupeTinyState> {
  const driver = path.join(root, LOUPE_TINY_DRIVER);
  const trainer = path.join(root, 'models', 'loupe-tiny', 'train.py');
  const src = await fs.promises.readFile(trainer, 'utf8').catch(() => null);
  if (!fs.existsSync(driver) || src === null) {
    return { ok: false, reason: 'not in this build', notice: `The loupe-tiny trainer is not part of this build (${LOUPE_TINY_DRIVER} or models/loupe-tiny/train.py is missing): the job fails at once.` };
  }
  if (!src.includes('--max-steps') || !src.includes('--init')) {
    return { ok: false, reason: 'trainer too old', notice: 'models/loupe-tiny/train.py in this build predates the local fine-tune (no --init/--max-steps): the job would fail at the train phase.' };
  }
  const py = await torchPython();
  if ('torch' in py) {
    return { ok: true, notice: `Runs here: synth → prepare → train on ${py.python} (torch ${py.torch}). CPU-sized defaults: a few minutes in all. LOUPE_PYTHON chooses another Python.` };
  }
  // the modules the best candidate lacks (the one missing fewest), named the way a user installs them
  const lacks = Object.values(py.missing).sort((a, b) => a.length - b.length)[0] ?? ['torch'];
  const what = lacks.length === 1 ? `${lacks[0]} is missing` : `${lacks.join(', ')} are missing`;
  const how = LOUPE_TINY_PY_MODULES.filter((m) => lacks.includes(m.module)).map((m) => `${m.module}: ${m.install}`).join('; ');
  const per = py.tried.map((p) => `${p}: no ${(py.missing[p] ?? []).join(', ')}`).join('; ');
  return {
    ok: false,
    reason: what,
    notice: `${what[0]?.toUpperCase()}${what.slice(1)}: the fine-tune needs Python 3 with ${LOUPE_TINY_PY_MODULES.map((m) => m.module).join(', ')} (${per}), so the job would fail at once. Install ${how ? `(${how})` : 'them'}, or set LOUPE_PYTHON to a Python that has them, then press Check again.`,
  };
}

export function templateInfo(t: JobTemplate, loupeTinyState: LoupeTinyState): TemplateInfo {
  const js = z.toJSONSchema(t.schema, { io: 'input', unrepresentable: 'any' }) as Json;
  let available = true;
  let notice: string | undefined;
  let reason: string | undefined;
  if (t.id === 'loupe-tiny-finetune') {
    available = loupeTinyState.ok;
    notice = loupeTinyState.notice;
    reason = loupeTinyState.reason;
  } else if (t.id === 'custom-script') {
    notice = 'Runs your script as typed. The default script is synthetic: it prints made-up verl-format metrics and trains nothing.';
  } else {
    notice = `Needs the upstream trainer installed where the job runs (source: ${t.source}). Loupe generates the command; it does not install the trainer.`;
  }
  return {
    id: t.id,
    title: t.title,
    description: t.description,
    source: t.source,
    available,
    ...(notice ? { notice } : {}),
    ...(!available && reason ? { unavailableReason: reason } : {}),
    fields: fieldsOf(js),
  };
}

export const findTemplate = getTemplate;

export function buildForm(id: string, params: unknown): { ok: true; out: TemplateOutput; params: Json } | { ok: false; issues: FieldIssue[] } {
  const t = findTemplate(id);
  const r = t.schema.safeParse(params ?? {});
  if (!r.success) return { ok: false, issues: r.error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(params)', message: i.message })) };
  return { ok: true, out: t.build(r.data), params: r.data as Json };
}


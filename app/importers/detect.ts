/**
 * Which tool wrote a file: read from its name and the keys of its first record, so that an import with
 * the wrong `--from` says which format it looks like instead of listing a missing field per record.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isDir, isRecord } from './common';
import type { ImportFormat } from './types';

/** Keys only one tool writes; the first format with a match wins. */
const SIGNATURES: Array<{ format: ImportFormat; keys: string[][]; name?: RegExp }> = [
  // eval_vstar.py / eval_hrbench*.py: {image?, question, answer, pred_ans, pred_output, status}
  { format: 'deepeyes', keys: [['pred_output'], ['pred_ans', 'question']], name: /^result_.+\.jsonl$/ },
  // --log_samples: {doc_id, doc, target, arguments, resps, filtered_resps, …}
  { format: 'lmms-eval', keys: [['doc_id', 'resps'], ['doc_id', 'filtered_resps']], name: /_samples_.+\.jsonl$/ },
  // experience_maker.py eval logs: {solutions, gts, qids, questions, round0_correctness, …}
  { format: 'pixel-reasoner', keys: [['solutions', 'qids'], ['round0_correctness']], name: /^sample\.eval_iter\d+_\d+\.jsonl$/ },
  // verl `_dump_generations` {input, output, gts, score, step} and the reward manager's {prompt, response, tool_interact_info}
  { format: 'verl-tool', keys: [['input', 'output', 'score'], ['prompt', 'response', 'tool_interact_info'], ['tool_interact_info']], name: /^\d+\.jsonl$|-step(?:-val)?-\d+\.json$/ },
];

async function firstRecord(file: string): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    const fh = await fsp.open(file, 'r');
    try {
      // A record can be long (DeepEyes repeats itself for pages): read enough for one line, not the file.
      const buf = Buffer.alloc(4 * 2 ** 20);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      text = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await fh.close();
    }
  } catch {
    return null;
  }
  const t = text.trimStart();
  if (t.startsWith('[')) {
    // A JSON list (verl-tool records): the whole file must parse.
    try {
      const v = JSON.parse(await fsp.readFile(file, 'utf8')) as unknown;
      return Array.isArray(v) && isRecord(v[0]) ? v[0] : null;
    } catch {
      return null;
    }
  }
  for (const line of t.split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as unknown;
      return isRecord(v) ? v : null;
    } catch {
      return null;
    }
  }
  return null;
}

async function candidateFiles(p: string): Promise<string[]> {
  if (!(await isDir(p))) return [p];
  const out: string[] = [];
  const walk = async (d: string, depth: number): Promise<void> => {
    const entries = await fsp.readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= 20) return;
      const f = path.join(d, e.name);
      if (e.isDirectory() && depth < 3) await walk(f, depth + 1);
      else if (/\.jsonl?$/.test(e.name)) out.push(f);
    }
  };
  await walk(p, 0);
  return out;
}

/** The format `input` looks like, or null when nothing matches. */
export async function detectFormat(input: string): Promise<ImportFormat | null> {
  for (const f of await candidateFiles(input)) {
    const rec = await firstRecord(f);
    const base = path.basename(f);
    for (const sig of SIGNATURES) {
      if (rec && sig.keys.some((ks) => ks.every((k) => k in rec))) return sig.format;
    }
    for (const sig of SIGNATURES) if (!rec && sig.name?.test(base)) return sig.format;
  }
  return null;
}

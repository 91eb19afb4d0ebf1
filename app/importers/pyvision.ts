/**
 * PyVision (the API inference loop, agents-x-project/PyVision `main.py` + `inference_engine/vis_inference_demo_gpt.py`):
 * the loop returns its chat `messages`, which `main.py` saves with `json.dump(messages, f, indent=4)`. A file is one
 * episode: a JSON array of `{role, content: [{type: 'text', text} | {type: 'image_url', image_url: {url}}]}`:
 * - the first user message: `<image_clue_0>`, the question image as a base64 data URL, `</image_clue_0>\n\n`, the
 *   `vistool_with_img_info_v2` prompt (the question is its `{query}`);
 * - a code turn: an assistant message `{generated}</code>\n` (the API dropped the `</code>` stop; the loop adds it);
 *   then a user message `<interpreter>\nText Result:\n{stdout}\nImage Result:\n` + per figure `<image_clue_k>`, the
 *   figure (base64 PNG, labelled image/jpeg), `</image_clue_k>` (or `None`) + `</interpreter>\n`; an error is
 *   `<interpreter>{error}` + `</interpreter>\n`;
 * - the last assistant message: the answer text (`<answer>\n\boxed{…}\n</answer>`).
 * The file records no ground truth and no model name: samples are unscored (score 0, `extra.unscored`); `--model`
 * names the model. No real output file was found in any public repository (tests/fixtures/importers/README.md), so the
 * fixtures are built from the writer's documented shape.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MediaRef, SampleRecord, StopReason, ToolCallRecord, Turn } from '../contract/trajectory';
import { pyFormatNamed, VISTOOL_WITH_IMG_INFO_V2 } from '../protocol/pyvision';
import { APP_VERSION } from '../version';
import { FieldError, isDir, isRecord, mediaFromFile, readJsonFile, uniqueQid } from './common';
import { ImportError, type ImportedMedia, type ImportedRun, type ImportIssue, type ImportOptions } from './types';

/** The prompt as a pattern: width, height and the query captured. */
const PROMPT_RE = (() => {
  const marked = pyFormatNamed(VISTOOL_WITH_IMG_INFO_V2, { width: '\u0000W', height: '\u0000H', query: '\u0000Q' });
  const esc = marked.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${esc.replace('\u0000W', '(\\d+)').replace('\u0000H', '(\\d+)').replace('\u0000Q', '([\\s\\S]*)')}$`);
})();

/** Largest decoded image kept (a figure or a question image); larger ones are reported, not stored. */
const MAX_IMAGE_BYTES = 64 * 1024 * 1024;

interface Part {
  text?: string;
  image?: string;
}

function partsOf(msg: unknown, where: string): { role: string; parts: Part[] } {
  if (!isRecord(msg)) throw new FieldError(where, 'expected a message object {role, content}');
  const role = msg['role'];
  if (role !== 'user' && role !== 'assistant' && role !== 'system') throw new FieldError(`${where}.role`, `expected "user" or "assistant", got ${JSON.stringify(role)}`);
  const content = msg['content'];
  if (typeof content === 'string') return { role, parts: [{ text: content }] };
  if (!Array.isArray(content)) throw new FieldError(`${where}.content`, 'expected a list of parts or a string');
  const parts = content.map((c, i): Part => {
    if (!isRecord(c)) throw new FieldError(`${where}.content[${i}]`, 'expected {type, …}');
    if (c['type'] === 'text') {
      if (typeof c['text'] !== 'string') throw new FieldError(`${where}.content[${i}].text`, 'expected a string');
      return { text: c['text'] };
    }
    if (c['type'] === 'image_url') {
      const u = isRecord(c['image_url']) ? c['image_url']['url'] : undefined;
      if (typeof u !== 'string') throw new FieldError(`${where}.content[${i}].image_url.url`, 'expected a string');
      return { image: u };
    }
    throw new FieldError(`${where}.content[${i}].type`, `unknown part type ${JSON.stringify(c['type'])}`);
  });
  return { role, parts };
}

const textOf = (parts: Part[]) => parts.map((p) => p.text ?? '').join('');

/** The last ```python block of an assistant code turn, as PV extracts it. */
function codeOf(text: string): string | null {
  const blocks = [...text.matchAll(/```python\s*([\s\S]*?)\s*```/g)];
  return blocks.at(-1)?.[1] ?? null;
}

/** Decode a data URL into a file in `dir`; the extension from the bytes (PV labels PNG figures image/jpeg). */
async function decodeImage(url: string, dir: string, where: string, issues: ImportIssue[], shown: string): Promise<ImportedMedia | null> {
  const m = /^data:image\/[A-Za-z0-9.+-]+;base64,([A-Za-z0-9+/=\s]*)$/.exec(url);
  if (!m) {
    issues.push({ severity: 'warning', file: shown, field: where, message: 'not a base64 image data URL; the image is left out' });
    return null;
  }
  const bytes = Buffer.from(m[1]!, 'base64');
  if (bytes.length === 0) {
    issues.push({ severity: 'warning', file: shown, field: where, message: 'empty image data (stripped from the file); attach the images to see them' });
    return null;
  }
  if (bytes.length > MAX_IMAGE_BYTES) {
    issues.push({ severity: 'warning', file: shown, field: where, message: `image of ${bytes.length} bytes is over ${MAX_IMAGE_BYTES}; left out` });
    return null;
  }
  const ext = bytes[0] === 0x89 && bytes[1] === 0x50 ? 'png' : bytes[0] === 0xff && bytes[1] === 0xd8 ? 'jpg' : null;
  if (!ext) {
    issues.push({ severity: 'warning', file: shown, field: where, message: 'image data is neither PNG nor JPEG; left out' });
    return null;
  }
  const file = path.join(dir, `${issues.length}-${Math.random().toString(36).slice(2)}.${ext}`);
  await fsp.writeFile(file, bytes);
  return mediaFromFile(file);
}

async function convertEpisode(value: unknown, qid: string, shown: string, tmp: string, media: ImportedMedia[], issues: ImportIssue[]): Promise<SampleRecord> {
  if (!Array.isArray(value)) throw new FieldError('(file)', 'expected a JSON array of chat messages (what PyVision main.py saves)');
  const msgs = value.map((m, i) => partsOf(m, `[${i}]`));
  const first = msgs[0];
  if (!first || first.role !== 'user') throw new FieldError('[0]', 'the first message must be the user prompt');
  const keep = async (url: string, where: string): Promise<MediaRef | null> => {
    const im = await decodeImage(url, tmp, where, issues, shown);
    if (!im) return null;
    if (!media.some((x) => x.ref.id === im.ref.id)) media.push(im);
    return im.ref;
  };
  const questionImages: MediaRef[] = [];
  for (const [i, p] of first.parts.entries()) if (p.image !== undefined) {
    const r = await keep(p.image, `[0].content[${i}]`);
    if (r) questionImages.push(r);
  }
  const promptText = first.parts.filter((p) => p.text !== undefined && !/^<\/?image_clue_\d+>\s*$/.test(p.text)).map((p) => p.text).join('');
  const pm = PROMPT_RE.exec(promptText);
  if (!pm) issues.push({ severity: 'warning', file: shown, field: '[0].content', message: 'the prompt is not vistool_with_img_info_v2: the whole prompt is kept as the question' });
  const question = pm ? pm[3]! : promptText;
  const turns: Turn[] = [];
  let finalText: string | undefined;
  for (let i = 1; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (m.role !== 'assistant') throw new FieldError(`[${i}].role`, 'expected an assistant turn here (messages alternate assistant / interpreter)');
    const full = textOf(m.parts);
    const isCode = /<\/code>\n?$/.test(full);
    const text = isCode ? full.replace(/<\/code>\n?$/, '') : full;
    const turn: Turn = { index: turns.length, text };
    if (!isCode) {
      finalText = text;
      turns.push(turn);
      if (i !== msgs.length - 1) issues.push({ severity: 'warning', file: shown, field: `[${i}]`, message: 'messages after the final answer are ignored' });
      break;
    }
    const code = codeOf(text) ?? '';
    const obs = msgs[i + 1];
    const call: ToolCallRecord = { raw: code, name: 'python', arguments: { code }, produced: [] };
    if (!obs || obs.role !== 'user') {
      turn.call = { ...call, error: 'no interpreter result recorded (the episode was cut off)' };
      turns.push(turn);
      break;
    }
    const otext = textOf(obs.parts);
    const tm = /^<interpreter>\nText Result:\n([\s\S]*)\nImage Result:\n/.exec(otext);
    if (tm) (call.arguments as Record<string, unknown>)['stdout'] = tm[1];
    else call.error = otext.replace(/^<interpreter>/, '').replace(/<\/interpreter>\n?$/, '');
    for (const [k, p] of obs.parts.entries()) if (p.image !== undefined) {
      const r = await keep(p.image, `[${i + 1}].content[${k}]`);
      if (r) call.produced.push(r);
    }
    turn.call = call;
    // The observation as the model read it, figures as their `<image_clue_k>` tags.
    turn.observation = obs.parts.map((p) => p.text ?? '<image>').join('');
    turns.push(turn);
    i++;
  }
  const stop: StopReason = finalText !== undefined ? 'answer' : 'max_calls';
  const boxed = finalText ? /\\boxed\{([\s\S]*)\}/.exec(finalText.split('<answer>').at(-1) ?? '')?.[1] ?? null : null;
  const calls = turns.filter((t) => t.call).length;
  return {
    qid,
    bench: 'pyvision',
    question,
    answer: null,
    prediction: finalText ?? turns.at(-1)?.text ?? '',
    extracted: boxed,
    score: 0,
    correct: false,
    stop_reason: stop,
    calls,
    tool_errors: turns.filter((t) => t.call?.error).length,
    trajectory: {
      dialect: 'pyvision',
      prompt: 'vistool_with_img_info_v2',
      media: questionImages,
      originals: questionImages,
      isVideo: false,
      question,
      userText: first.parts.map((p) => p.text ?? '<image>').join(''),
      turns,
      stopReason: stop,
      ...(finalText !== undefined ? { finalText } : {}),
    },
    source: shown,
    extra: { unscored: true, ...(pm ? { reportedSize: [Number(pm[1]), Number(pm[2])] } : {}) },
  };
}

export async function importPyVision(input: string, opts: ImportOptions = {}): Promise<ImportedRun> {
  const files = (await isDir(input)) ? (await fsp.readdir(input)).filter((f) => f.endsWith('.json')).sort().map((f) => path.join(input, f)) : [input];
  if (files.length === 0) throw new ImportError(`${input}: no .json files (PyVision saves one episode's messages per .json file)`);
  const issues: ImportIssue[] = [];
  const samples: SampleRecord[] = [];
  const media: ImportedMedia[] = [];
  const seen = new Map<string, number>();
  // Decoded images wait here until the writer copies them into the workspace's media store.
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-import-pyvision-'));
  for (const file of files) {
    const shown = files.length === 1 && file === input ? input : path.basename(file);
    let value: unknown;
    try {
      value = await readJsonFile(file, shown);
    } catch (e) {
      if (!(e instanceof ImportError) || files.length === 1) throw e;
      issues.push({ severity: 'error', file: shown, message: e.message });
      continue;
    }
    try {
      const s = await convertEpisode(value, uniqueQid(seen, path.basename(file, '.json')), shown, tmp, media, issues);
      samples.push(s);
    } catch (e) {
      if (!(e instanceof FieldError)) throw e;
      issues.push({ severity: 'error', file: shown, field: e.field, message: e.message });
    }
  }
  return {
    manifest: {
      name: opts.name ?? 'pyvision-import',
      kind: 'import',
      appVersion: APP_VERSION,
      model: { id: opts.model ?? 'pyvision' },
      engine: 'import',
      dialect: 'pyvision',
      prompt: 'vistool_with_img_info_v2',
      bench: { id: 'pyvision', n: samples.length },
      scorers: {},
      extra: { importedFrom: 'pyvision', files: files.map((f) => path.basename(f)), note: 'PyVision saves no ground truth: samples are unscored' },
    },
    samples,
    media,
    issues,
    stats: { files: files.length, records: files.length, imported: samples.length, skipped: files.length - samples.length },
  };
}

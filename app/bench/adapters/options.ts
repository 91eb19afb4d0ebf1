/** Option letters, option-list parsing and the seeded option shuffle. */
import { createHash } from 'node:crypto';
import { mulberry32 } from '../../prng';

export const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

export function letterOf(index: number): string {
  const l = LETTERS[index];
  if (l === undefined) throw new Error(`option index ${index} has no letter`);
  return l;
}

/** lmms-eval's post-prompt for V* and VSI-Bench's multiple-choice questions (also the last line of V*'s official `text`). */
export const LMMS_LETTER_PROMPT = "Answer with the option's letter from the given choices directly.";

/**
 * The question as the model is asked it: the question, then one "(A) option" line per option and the instruction to
 * answer with the letter (no options: the question alone). A sample's options are scored by letter, so a model that is
 * not shown them can only guess; this is the one place that writes them into the prompt (the evaluation loop and
 * loupe-synth's SFT trajectories both call it, through `questionForSample` for benchmark samples).
 */
export function questionWithOptions(question: string, options?: readonly string[]): string {
  if (!options || options.length === 0) return question;
  return `${question}\n${options.map((o, i) => `(${letterOf(i)}) ${o}`).join('\n')}\nAnswer with the option letter.`;
}

/**
 * A benchmark sample's question with its options, in the wording of the harness its numbers are compared with:
 * - `vstar`: V*'s official `text` layout (question, "(A) …" lines, lmms-eval's letter instruction);
 * - `vsibench`: lmms-eval's (question, the data's own "A. …" lines, the same instruction);
 * - `mvbench`: lmms-eval's ("Question: …", "Option:", "(A) …" lines, "Only give the best option.");
 * - everything else (loupe-synth, VLMEvalKit TSVs, custom files): `questionWithOptions`.
 * Pixel Reasoner's own parquet questions carry their options in the text and have no `options` field: unchanged.
 */
export function questionForSample(s: { bench?: string | undefined; question: string; options?: readonly string[] | undefined }): string {
  const { question, options } = s;
  if (!options || options.length === 0) return question;
  const lines = (fmt: (letter: string, o: string) => string) => options.map((o, i) => fmt(letterOf(i), o)).join('\n');
  switch (s.bench) {
    case 'vstar':
      return `${question}\n${lines((l, o) => `(${l}) ${o}`)}\n${LMMS_LETTER_PROMPT}`;
    case 'vsibench':
      return `${question}\n${lines((l, o) => `${l}. ${o}`)}\n${LMMS_LETTER_PROMPT}`;
    case 'mvbench':
      return `Question: ${question}\nOption:\n${lines((l, o) => `(${l}) ${o}`)}\nOnly give the best option.`;
    default:
      return questionWithOptions(question, options);
  }
}

/** mulberry32 (`app/prng.ts`) seeded from sha256(`${seed}:${key}`): the same (seed, key) always gives the same order. */
function rngFor(seed: number | string, key: string): () => number {
  return mulberry32(createHash('sha256').update(`${seed}:${key}`).digest().readUInt32LE(0));
}

/**
 * A Fisher–Yates permutation of `n` indices for question `key`: `perm[i]` is the source index shown at
 * position i. Deterministic in (seed, key), independent of load order or limit.
 */
export function seededPermutation(n: number, seed: number | string, key: string): number[] {
  const perm = Array.from({ length: n }, (_, i) => i);
  const rnd = rngFor(seed, key);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  return perm;
}

/**
 * Shuffle options whose source order puts the correct one at `correctIndex` (V* raw annotations: 0).
 * Returns the shown options, the gold letter and the permutation to record.
 */
export function shuffleOptions(
  options: string[],
  correctIndex: number,
  seed: number | string,
  key: string,
): { options: string[]; answer: string; permutation: number[] } {
  const permutation = seededPermutation(options.length, seed, key);
  const shown = permutation.map((i) => options[i]!);
  return { options: shown, answer: letterOf(permutation.indexOf(correctIndex)), permutation };
}

/**
 * Split "question\n(A) x\n(B) y\n…trailer" (V* `text`, lmms-eval style) into the question and options.
 * Also accepts "A. x" lines. Returns null when no option lines are found.
 */
export function parseLetteredOptions(text: string): { question: string; options: string[]; trailer: string } | null {
  const lines = text.split('\n');
  const first = lines.findIndex((l) => /^\s*(?:\(A\)|A\.)\s?/.test(l));
  if (first < 0) return parseInlineOptions(text);
  const options: string[] = [];
  let i = first;
  for (; i < lines.length; i++) {
    const m = /^\s*(?:\(([A-Z])\)|([A-Z])\.)\s?(.*)$/.exec(lines[i]!);
    if (!m) break;
    const letter = m[1] ?? m[2];
    if (letter !== letterOf(options.length)) break;
    options.push(m[3]!.trim());
  }
  return { question: lines.slice(0, first).join('\n').trim(), options, trailer: lines.slice(i).join('\n').trim() };
}

const TRAILER = /\s*Answer with the option's letter from the given choices directly\.?\s*$/;

/** "Question? (A) x (B) y (C) z" on one line (the layout lmms-eval's V* `doc_to_text` also accepts). */
function parseInlineOptions(text: string): { question: string; options: string[]; trailer: string } | null {
  const at = text.indexOf('(A)');
  if (at < 0) return null;
  let body = text.slice(at);
  let trailer = '';
  const t = TRAILER.exec(body);
  if (t) {
    trailer = t[0].trim();
    body = body.slice(0, t.index);
  }
  const parts = body.split(/\(([A-Z])\)/);
  // parts: ['', 'A', ' x ', 'B', ' y ', ...]
  const options: string[] = [];
  for (let i = 1; i + 1 < parts.length; i += 2) {
    if (parts[i] !== letterOf(options.length)) break;
    options.push(parts[i + 1]!.trim());
  }
  if (options.length < 2) return null;
  return { question: text.slice(0, at).trim(), options, trailer };
}

/**
 * The PyVision code-tool dialect, in the two variants its references implement:
 *
 * - **PV**, the API inference loop (agents-x-project/PyVision@d08b4502,
 *   `inference_engine/vis_inference_demo_gpt.py` + `safe_persis_shared_vis_python_exe.py`): the API
 *   stops at `</code>` and drops it; code is `split("```python")[-1].split("```")[0].strip()`; text output
 *   is stripped and cut to 400 code points; images are separate message parts; no turn limit.
 * - **PVRL**, the verl RL environment (agents-x-project/PyVision-RL@62ca599d, env
 *   `pyvision_gym_w_image_hint` + `parallel_env.py`): `</code>` is kept in the output; the last non-empty
 *   `<answer>` wins before any code; code is the last `<code>\s*```python\s*(.*?)\s*```\s*</code>` (else a
 *   bare fence); any error ends the episode; observations are chat text wrapped in `<tool_response>`.
 *
 * Everything here is pure string work, pinned by the golden vectors (`pyvision_*` suites). Running the
 * code is the sandbox's job (`native/pysandbox`); this module only says what to run and what the model
 * sees afterwards.
 */
import { pyLen, pySlice, pyStrip } from '../pycompat/str';
import { IM_END, IM_START, VISION_IMAGE, renderParts } from './render';
import type { RenderPart } from './types';

export type PyVisionVariant = 'PV' | 'PVRL';

/**
 * One whitespace character of the `regex` module's `\s` (Python's whitespace set without U+001C..U+001F;
 * no U+FEFF). JavaScript's `\s` differs on U+0085, U+001C..U+001F and U+FEFF, so it is never used here.
 */
const RX_WS = '[\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';

const PVRL_ANSWER_RE = /<answer>([\s\S]*?)<\/answer>/gu;
const PVRL_TAGGED_CODE_RE = new RegExp(`<code>${RX_WS}*\`\`\`python${RX_WS}*([\\s\\S]*?)${RX_WS}*\`\`\`${RX_WS}*</code>`, 'gu');
const PVRL_BARE_CODE_RE = new RegExp(`\`\`\`python${RX_WS}*([\\s\\S]*?)${RX_WS}*\`\`\``, 'gu');
/** `(\s|^)?(input|os\.system|subprocess)\(`: the optional prefix makes it a plain substring test. */
const FORBIDDEN_RE = /(?:input|os\.system|subprocess)\(/u;

/** The code-turn stop string; PV's API drops it, PVRL's vLLM keeps it (`include_stop_str_in_output`). */
export const PYVISION_STOP = '</code>';

/** Limits the references use (vectors README, "Limits"). */
export const PYVISION_LIMITS = {
  PV: { timeoutS: 20, truncate: 400, maxTokens: 10000, temperature: 0.6, maxTurns: Infinity },
  PVRL: { timeoutS: 30, maxTurns: 5, maxTurnsValidation: 30, maxImages: 32, maxTokensPerTurn: 10240, toolReward: 0.1, maxAnswerLength: 1000 },
} as const;

/** The two dialect ids of the code tool (PV = the API loop, PVRL = the verl RL environment). */
export const PYVISION_DIALECT_IDS = ['pyvision', 'pyvision-rl'] as const;
export type PyVisionDialectId = (typeof PYVISION_DIALECT_IDS)[number];

export function isPyVisionDialect(id: string): id is PyVisionDialectId {
  return (PYVISION_DIALECT_IDS as readonly string[]).includes(id);
}

export function pyvisionVariantOf(id: PyVisionDialectId): PyVisionVariant {
  return id === 'pyvision' ? 'PV' : 'PVRL';
}

/**
 * Model turns an episode may take. PVRL: `max_turns` 5 for training rollouts, 30 for validation (an eval run
 * is validation); PV has no limit in the reference, Loupe stops it at 30.
 */
export function pyvisionMaxTurns(variant: PyVisionVariant, mode: 'eval' | 'train'): number {
  if (variant === 'PV') return 30;
  return mode === 'train' ? PYVISION_LIMITS.PVRL.maxTurns : PYVISION_LIMITS.PVRL.maxTurnsValidation;
}

/** Max new tokens per turn each reference asks its engine for. */
export function pyvisionMaxTokens(variant: PyVisionVariant): number {
  return variant === 'PV' ? PYVISION_LIMITS.PV.maxTokens : PYVISION_LIMITS.PVRL.maxTokensPerTurn;
}

/** The figure-capture snippet PV substitutes for every `plt.show()` (PVX:265-273, byte for byte). */
export const PV_CAPTURE_SNIPPET = `
# Capture current figure
buf = io.BytesIO()
plt.savefig(buf, format='png')
buf.seek(0)
_captured_image = base64.b64encode(buf.read()).decode('utf-8')
_captured_figures.append(_captured_image)
plt.close()
`;
/** PVRL calls a helper defined in its runtime header instead (TOOL:167-185). */
export const PVRL_CAPTURE_CALL = '_internal_capture_plt_figure()';

export const PV_FORBIDDEN_MESSAGE = 'Forbidden function calls detected';
export const PVRL_FORMAT_ERROR_MESSAGE = 'No Python code or final answer found. There is something wrong with the format.';
export const PVRL_IMAGE_ERROR_MESSAGE = 'Something wrong with processed images.';

/** The runtime's forbidden-call check, run on the code before `exec` (both variants). */
export function pyvisionForbidden(code: string): boolean {
  return FORBIDDEN_RE.test(code);
}

/** The exact source handed to `exec` (after the forbidden check passed). */
export function pyvisionExecSource(variant: PyVisionVariant, code: string): string {
  return code.split('plt.show()').join(variant === 'PV' ? PV_CAPTURE_SNIPPET : PVRL_CAPTURE_CALL);
}

/** `s[:200] + "..." + s[-200:]` when `len(s) > 400`, on code points (PVX:459-470). */
export function pvTruncate(s: string, max = 400): string {
  if (pyLen(s) <= max) return s;
  const half = Math.floor(max / 2);
  return `${pySlice(s, 0, half)}...${pySlice(s, -half)}`;
}

// ---------------------------------------------------------------------------------------------------
// One model turn
// ---------------------------------------------------------------------------------------------------

export interface PvCodeTurn {
  isToolTurn: boolean;
  /** `</code>` on a tool turn, else the API's finish reason. */
  stopReason: string;
  code: string | null;
  /** PV crashes (IndexError) when the extracted code is empty: it skips execution, then indexes `[]`. */
  error: { type: string; message: string } | null;
  /** What PV appends as the assistant message. */
  assistantMessage: string;
  forbidden: boolean | null;
  execSource: string | null;
}

/**
 * PV: `response` is `message.content` (the API already removed the `</code>` stop string).
 * A tool turn is one whose text contains `</code>` or `<code>` (PVI:427-442).
 */
export function pvCodeTurn(response: string, finishReason: string): PvCodeTurn {
  let stopReason = response.includes(PYVISION_STOP) ? PYVISION_STOP : finishReason;
  if (response.includes('<code>')) stopReason = PYVISION_STOP;
  if (stopReason !== PYVISION_STOP) {
    return { isToolTurn: false, stopReason, code: null, error: null, assistantMessage: response, forbidden: null, execSource: null };
  }
  const code = pyStrip(response.split('```python').at(-1)!.split('```')[0]!);
  const assistantMessage = `${response}</code>\n`;
  if (code === '') {
    return { isToolTurn: true, stopReason, code, error: { type: 'IndexError', message: 'list index out of range' }, assistantMessage, forbidden: null, execSource: null };
  }
  const forbidden = pyvisionForbidden(code);
  return { isToolTurn: true, stopReason, code, error: null, assistantMessage, forbidden, execSource: forbidden ? null : pyvisionExecSource('PV', code) };
}

export type PvrlDecision = 'length' | 'empty' | 'answer' | 'code' | 'format_error';
export type PvrlEndReason = 'DONE' | 'ERROR_IN_ACTION' | 'EXCEED_MAX_TURNS' | 'EXCEED_MAX_IMAGE_NUM_32' | 'OVER_LENGTH';

export interface PvrlCodeTurn {
  decision: PvrlDecision;
  isToolTurn: boolean;
  answer: string | null;
  code: string | null;
  /** Set for a format error and for forbidden code (the only outcomes known before execution). */
  observation: string | null;
  done: boolean;
  isError: boolean;
  /** null: the episode goes on if the code runs. */
  endReason: PvrlEndReason | null;
  reward: number;
  forbidden: boolean | null;
  execSource: string | null;
}

function lastGroup(re: RegExp, text: string): string | null {
  let last: string | null = null;
  for (const m of text.matchAll(re)) last = m[1]!;
  return last;
}

/** PVRL `extract_answer`: the last `<answer>(.*?)</answer>` (DOTALL), or null. */
export function pvrlExtractAnswer(text: string): string | null {
  return lastGroup(PVRL_ANSWER_RE, text);
}

/** PVRL `extract_code`: the last tagged block, else the last bare ```` ```python ```` fence, or null. */
export function pvrlExtractCode(text: string): string | null {
  return lastGroup(PVRL_TAGGED_CODE_RE, text) ?? lastGroup(PVRL_BARE_CODE_RE, text);
}

/** A PVRL user turn as raw chat text (the env's text observations). */
export function pvrlTextObservation(inner: string): string {
  return `\n${IM_START}user\n<tool_response>\n<interpreter>${inner}</interpreter>\n\n</tool_response>${IM_END}\n${IM_START}assistant\n`;
}

/**
 * PVRL: `response` is the vLLM text (`</code>` kept, `<|im_end|>` possible); `finishReason` is vLLM's.
 * `toolReward` is `tool_using_cumulative_reward_per_turn` (0.1 in the published run).
 */
export function pvrlCodeTurn(response: string, finishReason: string, toolReward = PYVISION_LIMITS.PVRL.toolReward): PvrlCodeTurn {
  const base = { isToolTurn: false, answer: null, code: null, observation: null, forbidden: null, execSource: null };
  // parallel_env.step: a length stop or an empty output ends the episode as an error, unexecuted.
  if (finishReason === 'length') return { ...base, decision: 'length', done: true, isError: true, endReason: 'ERROR_IN_ACTION', reward: 0 };
  if (response === '') return { ...base, decision: 'empty', done: true, isError: true, endReason: 'ERROR_IN_ACTION', reward: 0 };
  const answer = pvrlExtractAnswer(response);
  if (answer) return { ...base, answer, decision: 'answer', done: true, isError: false, endReason: 'DONE', reward: 0 };
  const code = pvrlExtractCode(response);
  if (!code) {
    return {
      ...base,
      answer,
      code,
      decision: 'format_error',
      observation: pvrlTextObservation(`Error: ${PVRL_FORMAT_ERROR_MESSAGE}`),
      done: false,
      isError: true,
      endReason: 'ERROR_IN_ACTION',
      reward: 0,
    };
  }
  const forbidden = pyvisionForbidden(code);
  if (forbidden) {
    return {
      ...base,
      answer,
      code,
      decision: 'code',
      isToolTurn: true,
      observation: pvrlTextObservation(`Execution error: ${PV_FORBIDDEN_MESSAGE}`),
      done: false,
      isError: true,
      endReason: 'ERROR_IN_ACTION',
      reward: toolReward,
      forbidden,
    };
  }
  return { ...base, answer, code, decision: 'code', isToolTurn: true, done: false, isError: false, endReason: null, reward: toolReward, forbidden, execSource: pyvisionExecSource('PVRL', code) };
}

// ---------------------------------------------------------------------------------------------------
// One execution result → the observation
// ---------------------------------------------------------------------------------------------------

/** What one sandbox run produced, before either variant formats it. */
export interface ExecOutcome {
  /** Raw printed text (discarded on error or timeout). */
  stdout: string;
  /** Figures captured by this run, in order. */
  numFigures: number;
  /** Indices (into this run's figures) that do not decode as images. */
  undecodableFigures?: readonly number[];
  /** `str(exception)`, or null when the code ran. */
  error: string | null;
  timeout: boolean;
}

/** PV user-message parts: text parts plus `{type:'image_url'}` where a figure goes. */
export type PvPart = { type: 'text'; text: string } | { type: 'image_url' };

export interface PvObservation {
  parts: PvPart[];
  /** The parts as one string, images written `<image>`. */
  observation: string;
  nextImageIndex: number;
  textResult: string | null;
  errorResult: string | null;
  numImages: number;
}

/** PV: `startIndex` is the next `image_clue` number (PV starts it at the number of input images). */
export function pvObservation(o: ExecOutcome, startIndex: number): PvObservation {
  let parts: PvPart[];
  let textResult: string | null = null;
  let errorResult: string | null = null;
  let numImages = 0;
  let next = startIndex;
  if (o.timeout || o.error !== null) {
    // The worker reports 'Timeout Error' or f'Error: {e}'; batch_apply strips, then truncates it.
    errorResult = pvTruncate(pyStrip(o.timeout ? 'Timeout Error' : `Error: ${o.error}`));
    parts = [
      { type: 'text', text: `<interpreter>${errorResult}` },
      { type: 'text', text: '</interpreter>\n' },
    ];
  } else {
    // The result dict has a 'text' key only for a non-empty stdout; strip happens after that test.
    textResult = o.stdout !== '' ? pvTruncate(pyStrip(o.stdout)) : null;
    parts = [{ type: 'text', text: `<interpreter>\nText Result:\n${textResult ?? 'None'}\nImage Result:\n` }];
    if (o.numFigures > 0) {
      for (let i = 0; i < o.numFigures; i++) {
        parts.push({ type: 'text', text: `<image_clue_${next}>` }, { type: 'image_url' }, { type: 'text', text: `</image_clue_${next}>` });
        next++;
      }
      numImages = o.numFigures;
    } else {
      parts.push({ type: 'text', text: 'None' });
    }
    parts.push({ type: 'text', text: '</interpreter>\n' });
  }
  const observation = parts.map((p) => (p.type === 'text' ? p.text : '<image>')).join('');
  return { parts, observation, nextImageIndex: next, textResult, errorResult, numImages };
}

export interface PvrlObservation {
  /** 'chat': a user turn rendered through the chat template (figures attached); 'text': raw chat text. */
  obsKind: 'text' | 'chat';
  /** The observation text; in a chat observation each figure is a literal `<image>`. */
  observation: string;
  /** What vLLM receives: `<image>` → `<|vision_start|><|image_pad|><|vision_end|>` (PENV:112). */
  vllmObservation: string;
  numImagesAttached: number;
  nextImageIndex: number;
  reward: number;
  done: boolean;
  isError: boolean;
  endReason: PvrlEndReason | null;
  info: { status: 'success' } | { error: string };
}

const SYSTEM_BLOCK_RE = /<\|im_start\|>system[\s\S]*?<\|im_end\|>/g;

/** PENV `_strip_system_block`: removes every system block (lazy, across lines) — `re.sub`, all matches. */
export function pvrlStripSystemBlock(text: string): string {
  return text.replace(SYSTEM_BLOCK_RE, '');
}

/** The stock Qwen2.5-VL chat template on a single user turn, generation prompt on, system blocks stripped. */
function pvrlRenderUserTurn(parts: readonly RenderPart[]): string {
  const rendered = `${IM_START}system\nYou are a helpful assistant.${IM_END}\n${IM_START}user\n${renderParts(parts)}${IM_END}\n${IM_START}assistant\n`;
  return pvrlStripSystemBlock(rendered);
}

/**
 * PVRL: `startIndex` is the tool's `_figures_count` (1 at reset, then the runtime's total figure count);
 * the runtime is modelled as already holding `startIndex` figures, so a run with figures moves it to
 * `startIndex + numFigures`.
 */
export function pvrlObservation(o: ExecOutcome, startIndex: number, toolReward = PYVISION_LIMITS.PVRL.toolReward): PvrlObservation {
  const err = (msg: string, reward: number, info: string): PvrlObservation => {
    const observation = pvrlTextObservation(msg);
    return { obsKind: 'text', observation, vllmObservation: observation, numImagesAttached: 0, nextImageIndex: startIndex, reward, done: false, isError: true, endReason: 'ERROR_IN_ACTION', info: { error: info } };
  };
  if (o.timeout) return err('Execution error: Execution timeout', toolReward, 'Execution error: Execution timeout');
  if (o.error !== null) return err(`Execution error: ${o.error}`, toolReward, `Execution error: ${o.error}`);
  const text = pyStrip(o.stdout);
  if (o.numFigures > 0) {
    if ((o.undecodableFigures ?? []).some((i) => i >= 0 && i < o.numFigures)) {
      return err(`\nError: ${PVRL_IMAGE_ERROR_MESSAGE}`, 0, 'ERROR_WHEN_PROCESSING_IMAGES');
    }
    const parts: RenderPart[] = [
      { type: 'text', text: '<tool_response>\n<interpreter>' },
      { type: 'text', text: `Text Result:\n${text}\n` },
      { type: 'text', text: 'Image Result:\n' },
    ];
    for (let i = 0; i < o.numFigures; i++) {
      const k = startIndex + i;
      parts.push({ type: 'text', text: `<image_clue_${k}>` }, { type: 'text', text: '<image>' }, { type: 'text', text: `</image_clue_${k}>` });
    }
    parts.push({ type: 'text', text: '</interpreter>\n\n</tool_response>' });
    const observation = pvrlRenderUserTurn(parts);
    return {
      obsKind: 'chat',
      observation,
      vllmObservation: observation.split('<image>').join(VISION_IMAGE),
      numImagesAttached: o.numFigures,
      nextImageIndex: startIndex + o.numFigures,
      reward: toolReward,
      done: false,
      isError: false,
      endReason: null,
      info: { status: 'success' },
    };
  }
  const observation = pvrlTextObservation(`\nText Result:\n${text}`);
  return { obsKind: 'text', observation, vllmObservation: observation, numImagesAttached: 0, nextImageIndex: startIndex, reward: toolReward, done: false, isError: false, endReason: null, info: { status: 'success' } };
}

// ---------------------------------------------------------------------------------------------------
// The first user turn
// ---------------------------------------------------------------------------------------------------

/**
 * `vistool_with_img_info_v2` (PV `prompt_template/prompt_template_vis.json`:6, identical to PVRL
 * `verl_agents/verl/utils/dataset/rl_system_prompt_template.json`:6), a `str.format` template: `{{`/`}}`
 * are literal braces; `{width}`, `{height}`, `{query}` are the fields.
 */
export const VISTOOL_WITH_IMG_INFO_V2 =
  "You are an agent - please keep going until the user’s query is completely resolved, before ending your turn and yielding back to the user. Only terminate your turn when you are sure that the problem is solved. \n\nSolve the following problem step by step. You now have the ability to selectively write executable Python code to enhance your reasoning process. The Python code will be executed by an external sandbox. \n\nYou MUST plan extensively before each function call, and reflect extensively on the outcomes of the previous function calls. DO NOT do this entire process by making function calls only, as this can impair your ability to solve the problem and think insightfully.\n\nFor all the provided images, in order, the i-th image has already been read into the global variable `image_clue_i` using the PIL.Image.open() function. When writing Python code, you can directly use these variables without needing to read them again.\n\nSince you are dealing with the vision-related question answering task, you MUST use the python tool (e.g., matplotlib library) to analyze or transform images whenever it could improve your understanding or aid your reasoning. This includes but is not limited to zooming in, rotating, adjusting contrast, computing statistics, or isolating features. \n\nNote that when you use matplotlib to visualize data or further process images, you need to use plt.show() to display these images; there is no need to save them. Do not use image processing libraries like cv2 or PIL. If you want to check the value of a variable, you MUST use print() to check it.\n\nThe output (wrapped in `<interpreter>output_str</interpreter>`) can be returned to aid your reasoning and help you arrive at the final answer. The Python code should be complete scripts, including necessary imports. \nEach code snippet is wrapped with `<code>\n```python\ncode snippet\n```\n</code>`.\nThe last part of your response should be in the following format:\n<answer>\n\\boxed{{'The final answer goes here.'}}\n</answer>\n\n*image resolution:*\n\nImage Width: {width}; Image Height: {height}\n\n*user question:*\nAnswer the following Problem with an image provided and put the answer in the format of \\boxed{{answer}}\n\n{query}\n\nRemember to place the final answer in the last part using the format: \n<answer>\n\\boxed{{'The final answer goes here.'}}\n</answer>";

/** Python `str.format` with named fields only, one pass (substituted values are never re-expanded). */
export function pyFormatNamed(template: string, fields: Record<string, string>): string {
  return template.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name: string | undefined) => {
    if (m === '{{') return '{';
    if (m === '}}') return '}';
    const v = fields[name!];
    if (v === undefined) throw new Error(`KeyError: '${name}'`);
    return v;
  });
}

export function pyvisionPromptText(width: number, height: number, query: string): string {
  return pyFormatNamed(VISTOOL_WITH_IMG_INFO_V2, { width: String(width), height: String(height), query });
}

/** PV on Claude halves both sides (`//2`) when either exceeds 1024 (`encode_image_with_resize`). */
export function pvReportedSize(width: number, height: number, apiName: string): [number, number] {
  if (apiName.includes('claude') && (width > 1024 || height > 1024)) return [Math.floor(width / 2), Math.floor(height / 2)];
  return [width, height];
}

/** PV's first user message (single image, tool prompt), images as `{type:'image_url'}`. */
export function pvUserContent(width: number, height: number, query: string, apiName: string): PvPart[] {
  const [w, h] = pvReportedSize(width, height, apiName);
  const text = pyvisionPromptText(w, h, query);
  const clue: PvPart[] = [{ type: 'text', text: '<image_clue_0>' }, { type: 'image_url' }, { type: 'text', text: '</image_clue_0>\n\n' }];
  if (!query.includes('<IMAGE_PLACE_HOLDER_0>')) return [...clue, { type: 'text', text }];
  // Split at the placeholder; only parts[0] and parts[1] are kept, each stripped, empties dropped.
  const split = text.split('<IMAGE_PLACE_HOLDER_0>');
  const out: PvPart[] = [];
  const before = pyStrip(split[0]!);
  if (before) out.push({ type: 'text', text: before });
  out.push(...clue);
  const after = split.length > 1 ? pyStrip(split[1]!) : '';
  if (after) out.push({ type: 'text', text: after });
  return out;
}

/** PVRL dataset prompt: `"<image>\n" + template.format(...)` (DS:98-108). */
export function pvrlPrompt(width: number, height: number, query: string): string {
  return `<image>\n${pyvisionPromptText(width, height, query)}`;
}

/** PVRL `_build_messages_pyvision`: split on `(<image>|<video>)`; each `<image>` becomes a clue-tagged image. */
export function pvrlUserContent(prompt: string): RenderPart[] {
  const out: RenderPart[] = [];
  for (const seg of prompt.split(/(<image>|<video>)/)) {
    if (seg === '<image>') out.push({ type: 'text', text: '<image_clue_0>' }, { type: 'image' }, { type: 'text', text: '</image_clue_0>' });
    else out.push({ type: 'text', text: seg });
  }
  return out;
}

/** The PVRL first prompt through the stock Qwen2.5-VL template, generation prompt on. */
export function pvrlRenderedPrompt(content: readonly RenderPart[]): string {
  return `${IM_START}system\nYou are a helpful assistant.${IM_END}\n${IM_START}user\n${renderParts(content)}${IM_END}\n${IM_START}assistant\n`;
}

/**
 * Prompt texts of the three dialects, built the way the references build them.
 *
 * Pixel Reasoner: the system message is "You are a helpful assistant." plus, unless the prompt is
 * `notool`, qwen-agent's Nous function-call template with one `json.dumps(tool, ensure_ascii=False)`
 * line per bound tool (PR EM:1450-1453, QA nous_fncall_prompt.py). The guideline (`vcot`/`notool`) is
 * appended to the *user* text: `q + "\n\n" + templates[sys]` (PR prompts_dataset.py:133-143).
 */
import { pyJsonDumps } from '../pycompat/json';
import type { PromptId } from './types';

export const DEFAULT_SYSTEM = 'You are a helpful assistant.';

/** PR `CropImageNormalized.function` (EM:124-147), key order as the Python dict literal. */
export const PR_CROP_TOOL = {
  name: 'crop_image_normalized',
  description:
    'Zoom in on the image based on the bounding box coordinates. It is useful when the object or text in the image is too small to be seen.',
  parameters: {
    type: 'object',
    properties: {
      bbox_2d: {
        type: 'array',
        description: 'coordinates for bounding box of the area you want to zoom in. Values should be within [0.0,1.0].',
        items: { type: 'number' },
      },
      target_image: {
        type: 'number',
        description: 'The index of the image to crop. Index from 1 to the number of images. Choose 1 to operate on original image.',
      },
    },
    required: ['bbox_2d', 'target_image'],
  },
} as const;

/** PR `SelectFrames.function` (EM:47-71). */
export const PR_SELECT_FRAMES_TOOL = {
  name: 'select_frames',
  description: 'Select frames from a video.',
  parameters: {
    type: 'object',
    properties: {
      target_frames: {
        type: 'array',
        description: 'List of frame indices to select from the video (no more than 8 frames in total).',
        items: { type: 'integer', description: 'Frame index from 1 to 16.' },
      },
    },
    required: ['target_frames'],
  },
} as const;

/** VT's crop line (examples/data_preprocess/pixel_reasoner/prepare_train.py): other name and texts. */
export const VT_CROP_TOOL = {
  name: 'crop_image',
  description: 'Zoom in on the image based on the bounding box coordinates.',
  parameters: {
    type: 'object',
    properties: {
      bbox_2d: {
        type: 'array',
        description:
          'coordinates for bounding box of the area you want to zoom in. minimum value is 0 and maximum value is the width/height of the image.',
        items: { type: 'number' },
      },
      target_image: {
        type: 'number',
        description: 'The index of the image to crop. Index from 1 to the number of images. Choose 1 to operate on original image.',
      },
    },
    required: ['bbox_2d', 'target_image'],
  },
} as const;

/** The English `FN_CALL_TEMPLATE` of qwen-agent's `NousFnCallPrompt`, around the tool lines. */
export function nousToolSystem(tools: ReadonlyArray<object>): string {
  const lines = tools.map((t) => pyJsonDumps({ type: 'function', function: t }, { ensureAscii: false }));
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
    lines.join('\n') +
    '\n</tools>\n\n' +
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/** Pixel Reasoner system text: 1446 chars with tools, or just the default for `notool`. */
export function prSystemPrompt(prompt: PromptId): string {
  if (prompt === 'notool') return DEFAULT_SYSTEM;
  return `${DEFAULT_SYSTEM}\n\n${nousToolSystem([PR_CROP_TOOL, PR_SELECT_FRAMES_TOOL])}`;
}

/** `templates['vcot']` / `templates['notool']` of PR prompts_dataset.py:37-38. */
export const PR_GUIDELINES: Record<PromptId, string> = {
  vcot:
    '\n\nGuidelines: Understand the given visual information and the user query. Determine if it is beneficial to employ the given visual operations (tools). For a video, we can look closer by `select_frames`. For an image, we can look closer by `crop_image`. Reason with the visual information step by step, and put your final answer within \\boxed{}.',
  notool: 'Please think step by step, and put your final answer within \\boxed{}.',
};

/** PR user text: `q + "\n\n" + templates[sys]` (so vcot gives four newlines). */
export function prUserText(question: string, prompt: PromptId): string {
  return `${question}\n\n${PR_GUIDELINES[prompt]}`;
}

/** VT system text: the PR text with the `crop_image` line. */
export function vtSystemPrompt(prompt: PromptId): string {
  if (prompt === 'notool') return DEFAULT_SYSTEM;
  return `${DEFAULT_SYSTEM}\n\n${nousToolSystem([VT_CROP_TOOL, PR_SELECT_FRAMES_TOOL])}`;
}

/** VT `guideline` = the vcot text without its leading "\n\n". */
export const VT_GUIDELINE = PR_GUIDELINES.vcot.slice(2);

/** VT user text: `"<image>"*n + q + "\n\n" + guideline` (train/infovqa/tallyqa/mvbench). */
export function vtUserText(question: string, prompt: PromptId, imageCount: number): string {
  const guide = prompt === 'notool' ? PR_GUIDELINES.notool : VT_GUIDELINE;
  return `${'<image>'.repeat(imageCount)}${question}\n\n${guide}`;
}

/** DeepEyes `PROMPT.SYSTEM_PROMPT_V2` verbatim (the Example lines end in two spaces). */
export const DEEPEYES_SYSTEM_PROMPT =
  'You are a helpful assistant.\n\n# Tools\nYou may call one or more functions to assist with the user query.\n' +
  'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
  '{"type":"function","function":{"name":"image_zoom_in_tool","description":"Zoom in on a specific region of an image by cropping it based on a bounding box (bbox) and an optional object label.","parameters":{"type":"object","properties":{"bbox_2d":{"type":"array","items":{"type":"number"},"minItems":4,"maxItems":4,"description":"The bounding box of the region to zoom in, as [x1, y1, x2, y2], where (x1, y1) is the top-left corner and (x2, y2) is the bottom-right corner."},"label":{"type":"string","description":"The name or label of the object in the specified bounding box (optional)."}},"required":["bbox"]}}}\n' +
  '</tools>\n\n# How to call a tool\nReturn a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n\n' +
  '**Example**:  \n<tool_call>  \n{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [10, 20, 100, 200], "label": "the apple on the desk"}}  \n</tool_call>';

/** DeepEyes `USER_PROMPT_V2`. */
export const DEEPEYES_USER_PROMPT =
  '\nThink first, call **image_zoom_in_tool** if needed, then answer. Format strictly as:  <think>...</think>  <tool_call>...</tool_call> (if tools needed)  <answer>...</answer> ';

/** DeepEyes eval user text: `"Question: {q}\nOptions: {opts}\n" + USER_PROMPT_V2` (no options → plain). */
export function deepEyesUserText(question: string, options?: string[]): string {
  if (options && options.length > 0) {
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const opts = '\n' + options.map((o, i) => `${letters[i]}. ${o}`).join('\n') + '\n';
    return `Question: ${question}\nOptions: ${opts}\n${DEEPEYES_USER_PROMPT}`;
  }
  return `${question}\n${DEEPEYES_USER_PROMPT}`;
}

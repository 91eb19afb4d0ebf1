import { describe, expect, it } from 'vitest';
import { pyJsonLoads } from '../pycompat/json';
import { PR_SYSTEM_PROMPT_REFERENCE } from '../../tests/support/pixelReasoner.fixture';
import { pixelReasonerDialect as pr, prIsToolTurn } from './pixelReasoner';
import type { EpisodeState, ParsedCall } from './types';

const PREFIX = '<|im_start|>user\n<|vision_start|><|vision_end|>Q<|im_end|>\n<|im_start|>assistant\n';

function imageState(over: Partial<EpisodeState> = {}): EpisodeState {
  return {
    mode: 'eval',
    isVideo: false,
    originals: [{ width: 1008, height: 812, kind: 'original' }],
    videoFrames: [],
    prior: [],
    rawSizes: [[1000, 800]],
    ...over,
  };
}

function call(name: string, args: string): ParsedCall {
  const raw = `{"name": "${name}", "arguments": ${args}}`;
  const r = pr.parseCall(PREFIX, `<tool_call>\n${raw}\n</tool_call>`);
  if (!r.ok) throw new Error(`test call did not parse: ${r.error.message}`);
  return r.call;
}

describe('Pixel Reasoner prompts', () => {
  it('builds the 1446-char system text from the tool schemas, byte for byte', () => {
    const sys = pr.systemPrompt('vcot');
    expect(sys).toBe(PR_SYSTEM_PROMPT_REFERENCE);
    expect(sys.length).toBe(1446);
    expect(pr.systemPrompt('notool')).toBe('You are a helpful assistant.');
  });

  it('appends the guideline to the user text as the reference does', () => {
    const u = pr.userText('What is it?', 'vcot', 1);
    expect(u.startsWith('What is it?\n\n\n\nGuidelines: Understand the given visual information')).toBe(true);
    expect(u.endsWith('put your final answer within \\boxed{}.')).toBe(true);
    expect(pr.userText('Q', 'notool', 1)).toBe('Q\n\nPlease think step by step, and put your final answer within \\boxed{}.');
  });

  it('renders the Qwen2.5-VL chat with images before text', () => {
    const text = pr.render(
      [
        { role: 'system', parts: [{ type: 'text', text: 'SYS' }] },
        { role: 'user', parts: [{ type: 'image' }, { type: 'text', text: 'Q' }] },
      ],
      true,
    );
    expect(text).toBe('<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Q<|im_end|>\n<|im_start|>assistant\n');
    expect(pr.render([{ role: 'user', parts: [{ type: 'video' }] }], false)).toBe(
      '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|><|im_end|>\n',
    );
  });
});

describe('Pixel Reasoner tool turns', () => {
  it('is a tool turn iff the response minus <|im_end|> ends with </tool_call>', () => {
    expect(prIsToolTurn('<tool_call>{}</tool_call><|im_end|><|im_end|>')).toBe(true);
    expect(prIsToolTurn('<tool_call>{}</tool_call>\n<|im_end|>')).toBe(false);
    expect(prIsToolTurn('</tool_call><|im_end|>extra')).toBe(false);
    expect(prIsToolTurn('answer \\boxed{3}')).toBe(false);
  });

  it('parses only the last call, across the prompt when the response has no opening tag', () => {
    const r = pr.parseCall(PREFIX, '<tool_call>\n{bad}\n</tool_call>\n<tool_call>\n{"name": "select_frames", "arguments": {"target_frames": [1, 2]}}\n</tool_call>');
    expect(r).toMatchObject({ ok: true, call: { name: 'select_frames', arguments: { target_frames: [1, 2] } } });
    const p = pr.parseCall('<tool_call>{"name": "crop_image_normalized", "arguments": {}}', '</tool_call>');
    expect(p).toMatchObject({ ok: true, call: { name: 'crop_image_normalized' } });
  });

  it('returns Python error texts as observations', () => {
    const bad = pr.parseCall(PREFIX, 'Zoom.\n<tool_call>\n{"name": "crop_image_normalized", "arguments": None}\n</tool_call>');
    expect(bad).toMatchObject({ ok: false, error: { type: 'JSONDecodeError', message: 'Expecting value: line 2 column 48 (char 48)' }, observation: '\nExecution error:\nExpecting value: line 2 column 48 (char 48)\n' });
    const unknown = pr.parseCall(PREFIX, '<tool_call>\n{"name": "crop\\timage", "arguments": {}}\n</tool_call>');
    expect(unknown).toMatchObject({ ok: false, error: { type: 'KeyError', message: "'crop\\timage'" }, parsed: { name: 'crop\timage', arguments: {} } });
    const missing = pr.parseCall(PREFIX, '<tool_call>\n{"name": "select_frames", "parameters": {}}\n</tool_call>');
    expect(missing).toMatchObject({ ok: false, error: { type: 'KeyError', message: "'arguments'" }, parsed: null });
    const listName = pr.parseCall(PREFIX, '<tool_call>{"name": ["x"], "arguments": {}}</tool_call>');
    expect(listName).toMatchObject({ ok: false, error: { type: 'TypeError', message: "unhashable type: 'list'" } });
  });
});

describe('Pixel Reasoner plans', () => {
  it('plans a crop on the resized original with the zoom resize and observation', () => {
    const plan = pr.planCall(call('crop_image_normalized', '{"bbox_2d": [0.5, 0.5, 1, 1], "target_image": 1}'), imageState());
    expect(plan).toMatchObject({
      kind: 'crop',
      target: { source: 'raw', index: 0, size: [1008, 812], list: 'originals', position: 0 },
      bboxMode: 'absolute',
      cropBox: [0, 0, 102, 82],
      resizedSize: [504, 420],
      observation: '\nHere is the cropped image (Image Size: 504x420):',
      imagesAfter: 2,
      exceedsMaxImages: false,
    });
    expect(pr.observationParts!(plan)).toEqual([{ type: 'text', text: plan.observation }, { type: 'image' }]);
  });

  it('keeps int-vs-float: target_image 2.0 fails where 2 works', () => {
    const state = imageState({ prior: [{ width: 812, height: 560, kind: 'crop' }] });
    expect(pr.planCall(call('crop_image_normalized', '{"bbox_2d": [0.1, 0.1, 0.5, 0.5], "target_image": 2}'), state).kind).toBe('crop');
    expect(pr.planCall(call('crop_image_normalized', '{"bbox_2d": [0.1, 0.1, 0.5, 0.5], "target_image": 2.0}'), state)).toEqual({
      kind: 'error',
      error: { type: 'TypeError', message: 'list indices must be integers or slices, not float' },
      observation: '\nExecution error:\nlist indices must be integers or slices, not float\n',
    });
  });

  it('plans select_frames on a video and numbers frames from len(images)', () => {
    const frames = Array.from({ length: 16 }, () => ({ width: 644, height: 364, kind: 'frame' as const }));
    const state = imageState({ isVideo: true, originals: [], videoFrames: frames, prior: [{ width: 644, height: 364, kind: 'frame' }] });
    const plan = pr.planCall(call('select_frames', '{"target_frames": [2, 2, 16]}'), state);
    expect(plan).toMatchObject({
      kind: 'frames',
      frameIndices: [1, 1, 15],
      framePositions: [1, 1, 15],
      frameSize: [644, 364],
      observation: '\nHere are the selected frames (Frame Size: 644x364, Numbered 2 to 4):',
      imagesAfter: 5,
    });
    expect(pr.observationParts!(plan).filter((p) => p.type === 'image')).toHaveLength(3);
  });

  it('flags a turn that would pass 16 images', () => {
    const prior = Array.from({ length: 15 }, () => ({ width: 300, height: 300, kind: 'crop' as const }));
    const plan = pr.planCall(call('crop_image_normalized', '{"bbox_2d": [0, 0, 0.5, 0.5], "target_image": 1}'), imageState({ prior }));
    expect(plan).toMatchObject({ kind: 'crop', imagesAfter: 17, exceedsMaxImages: true });
  });

  it('plans from edited plain-JSON arguments when no parsed values are attached', () => {
    const plan = pr.planCall({ name: 'crop_image_normalized', arguments: { bbox_2d: [0.1, 0.1, 0.6, 0.6], target_image: 1 }, raw: 'edited' }, imageState());
    expect(plan.kind).toBe('crop');
  });

  it('has the reference limits and forces the finish past them', () => {
    expect(pr.limits).toEqual({ maxCalls: 4, maxImages: 16, tokenBudget: 12 * 1024 - 200, maxTokensPerTurn: 2048 });
    expect(pr.stop).toEqual(['<|im_end|>', '<|eot_id|>', '<|endoftext|>']);
    const base = { toolCallsSoFar: 3, imageCount: 16, promptTokens: 10000, outputTokens: 2088 };
    expect(pr.forceFinish!(base)).toBe(false);
    expect(pr.forceFinish!({ ...base, toolCallsSoFar: 4 })).toBe(true);
    expect(pr.forceFinish!({ ...base, imageCount: 17 })).toBe(true);
    expect(pr.forceFinish!({ ...base, outputTokens: 2089 })).toBe(true);
  });

  it('extracts the last boxed answer', () => {
    expect(pr.extractAnswer('a \\boxed{1} then \\boxed{\\frac{1}{2}}')).toBe('\\frac{1}{2}');
    expect(pr.extractAnswer('no box')).toBeNull();
    expect(pyJsonLoads('1')).toBe(1n);
  });
});

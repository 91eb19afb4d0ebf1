import { describe, expect, it } from 'vitest';
import { DEFAULT_DIALECT, getDialect } from './index';
import { DEEPEYES_SYSTEM_PROMPT } from './prompts';
import type { EpisodeState } from './types';

const state: EpisodeState = {
  mode: 'eval',
  isVideo: false,
  originals: [{ width: 1008, height: 812, kind: 'original' }],
  videoFrames: [],
  prior: [{ width: 504, height: 420, kind: 'crop' }],
  rawSizes: [[1000, 800]],
};

describe('dialect registry', () => {
  it('defaults to pixel-reasoner and names the known ids on a bad one', () => {
    expect(DEFAULT_DIALECT).toBe('pixel-reasoner');
    expect(getDialect().id).toBe('pixel-reasoner');
    expect(getDialect('verl-tool').id).toBe('verl-tool');
    expect(getDialect('deepeyes').id).toBe('deepeyes');
    expect(() => getDialect('nope')).toThrow(/unknown dialect "nope": use one of pixel-reasoner, verl-tool, deepeyes/);
  });
});

describe('verl-tool dialect', () => {
  const vt = getDialect('verl-tool');

  it('uses the crop_image schema line and its own user text', () => {
    const sys = vt.systemPrompt('vcot');
    expect(sys).toContain('{"type": "function", "function": {"name": "crop_image", "description": "Zoom in on the image based on the bounding box coordinates.", "parameters"');
    expect(sys).toContain('minimum value is 0 and maximum value is the width/height of the image.');
    expect(vt.userText('Q', 'vcot', 2)).toMatch(/^<image><image>Q\n\nGuidelines: /);
  });

  it('parses the first call; an unparsable or unknown action gives the empty observation', () => {
    const r = vt.parseCall('', 'x <tool_call>{"name": "crop_image", "arguments": {"bbox_2d": [0,0,0.5,0.5], "target_image": "2"}}</tool_call> <tool_call>{bad}</tool_call>');
    expect(r.ok).toBe(true);
    expect(vt.parseCall('', '<tool_call>{"name": "rotate", "arguments": {}}</tool_call>')).toMatchObject({ ok: false, observation: '' });
    expect(vt.parseCall('', 'no call')).toMatchObject({ ok: false, observation: '' });
    expect(vt.parseCall('', '<tool_call>{"name": "crop_image"}</tool_call>')).toMatchObject({ ok: false, observation: "Missing 'arguments' in the tool call." });
  });

  it('crops raw-size question images with int() truncation and re-fetch sizing', () => {
    const r = vt.parseCall('', '<tool_call>{"name": "crop_image", "arguments": {"bbox_2d": [0.2, 0.2, 0.6, 0.6], "target_image": "1"}}</tool_call>');
    if (!r.ok) throw new Error('parse');
    const plan = vt.planCall(r.call, state);
    expect(plan).toMatchObject({ kind: 'crop', target: { list: 'raw', position: 0, size: [1000, 800] }, cropBox: [100, 80, 700, 560] });
    expect(plan.observation).toMatch(/^Here is the cropped image\. \(Image Size: \d+x\d+\)\n<image>$/);
    expect(vt.observationParts!(plan)).toEqual([{ type: 'text', text: plan.observation.replace('<image>', '') }, { type: 'image' }]);
  });

  it('reports its validation strings', () => {
    const plan = (args: string) => {
      const r = vt.parseCall('', `<tool_call>{"name": "crop_image", "arguments": ${args}}</tool_call>`);
      if (!r.ok) throw new Error('parse');
      return vt.planCall(r.call, state).observation;
    };
    expect(plan('{"target_image": 1}')).toBe('Missing parameters: bbox_2d');
    expect(plan('{"bbox_2d": [1, 2, 3], "target_image": 1}')).toBe('Invalid bbox_2d format. It should be a list of four numbers.');
    expect(plan('{"bbox_2d": [1, 2, 3, 4], "target_image": 3}')).toBe('Invalid target_image index. It should be an integer between 1 and the number of previous images (2).');
    expect(plan('[]')).toBe("'arguments' should be a dictionary of parameters key-value pairs, got <class 'list'>.");
  });
});

describe('DeepEyes dialect', () => {
  const de = getDialect('deepeyes');

  it('uses the verbatim system prompt and stops on <answer>', () => {
    expect(de.systemPrompt('vcot')).toBe(DEEPEYES_SYSTEM_PROMPT);
    expect(DEEPEYES_SYSTEM_PROMPT).toContain('"required":["bbox"]');
    expect(de.isToolTurn('<think>x</think><answer>B</answer>')).toBe(false);
    expect(de.isToolTurn('<think>x</think><tool_call>{}</tool_call>')).toBe(true);
    expect(de.extractAnswer('<answer>A</answer> then <answer>B</answer>')).toBe('B');
  });

  it('crops absolute pixels of the raw image and reports errors as chat text', () => {
    const ok = de.parseCall('', '<tool_call> {"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [10, 20, 300, 400]}} </tool_call>');
    if (!ok.ok) throw new Error('parse');
    expect(de.planCall(ok.call, state)).toMatchObject({ kind: 'crop', target: { list: 'raw', size: [1000, 800] }, cropBox: [10, 20, 300, 400] });
    const small = de.parseCall('', '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [10, 20, 30, 40]}}</tool_call>');
    if (!small.ok) throw new Error('parse');
    expect(de.planCall(small.call, state).observation).toBe('\n<|im_start|>user\nError: ZOOM IN ARGUMENTS ARE INVALID<|im_end|>\n<|im_start|>assistant\n');
    const bad = de.parseCall('', '<tool_call>{"name": }</tool_call>');
    expect(bad).toMatchObject({ ok: false, observation: '\n<|im_start|>user\nError: Invalid tool call format: {"name": }. Error: Expecting value: line 1 column 10 (char 9)<|im_end|>\n<|im_start|>assistant\n' });
  });
});

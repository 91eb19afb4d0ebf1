/** verl-tool importer on fixtures built from the documented dump formats (rollout JSONL and reward-manager records). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatIssue, importRun } from '../../../app/importers';
import { splitVtResponse, vtQuestionOf } from '../../../app/importers/verlTool';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const DIR = path.join(HERE, '../../fixtures/importers/verl_tool');

describe('verl-tool importer', () => {
  it('reads both dump shapes from a folder and names each bad record', async () => {
    const run = await importRun('verl-tool', DIR);
    expect(run.stats).toEqual({ files: 2, records: 8, imported: 5, skipped: 3 });
    expect(run.issues.map(formatIssue)).toEqual([
      'error: records/pixel_reasoner-step-val-0.json: [2].response: missing (expected the model response text)',
      expect.stringMatching(/^error: rollouts\/12\.jsonl:3: not valid JSON/),
      'error: rollouts/12.jsonl:4: output: missing (expected the model response text)',
    ]);
    expect(run.samples.map((s) => s.qid)).toEqual(['vstar-17', 'vstar-18', 'step12-1', 'step12-2', 'step12-5']);
  });

  it('reward-manager records: chat-marked response split into turns, scores kept', async () => {
    const run = await importRun('verl-tool', path.join(DIR, 'records/pixel_reasoner-step-val-0.json'));
    const s = run.samples[0]!;
    expect(s.bench).toBe('vstar');
    expect(s.question).toBe('What does the sign say?\n(A) STOP\n(B) GO\n(C) YIELD\n(D) EXIT');
    expect(s.calls).toBe(2);
    expect(s.trajectory!.turns.map((t) => t.call?.targetIndex)).toEqual([0, 1, undefined]);
    expect(s.trajectory!.turns[1]!.observation).toBe('Here is the cropped image. (Image Size: 336x336)\n');
    expect(s.scores).toMatchObject({ accuracy: 1, action_redundancy_penalty: -0.05, reward: 1 });
    expect(s.extracted).toBe('A');
    expect(s.correct).toBe(true);
    expect(run.samples[1]!.correct).toBe(false);
  });

  it('rollout JSONL (no chat markers): invalid actions become tool errors', async () => {
    const run = await importRun('verl-tool', path.join(DIR, 'rollouts/12.jsonl'));
    const bad = run.samples.find((s) => s.qid === 'step12-2')!;
    expect(bad.bench).toBe('verl-tool');
    expect(bad.tool_errors).toBe(1);
    expect(bad.trajectory!.turns[0]!.call!.error).toBe('Invalid bbox_2d format. It should be a list of four numbers.');
    expect(bad.trajectory!.turns[0]!.call!.bboxRaw).toBeUndefined();
    const good = run.samples.find((s) => s.qid === 'step12-1')!;
    expect(good.trajectory!.turns[0]!.call).toMatchObject({ name: 'crop_image', bboxRaw: [120, 80, 360, 240], bboxMode: 'absolute' });
    expect(good.question).toBe('What number is on the label?');
    expect(good.answer).toBe('42');
  });

  it('a missing path or unknown format is one clear error', async () => {
    await expect(importRun('verl-tool', path.join(DIR, 'nope'))).rejects.toThrow(/nope: no such file or folder/);
    await expect(importRun('openai-evals', DIR)).rejects.toThrow(/unknown import format "openai-evals" \(known: pixel-reasoner, verl-tool, deepeyes, lmms-eval, pyvision\)/);
  });

  it('splits plain and chat-marked responses the same way', () => {
    const call = '<tool_call>\n{"name": "crop_image", "arguments": {"bbox_2d": [1, 2, 3, 4], "target_image": 1}}\n</tool_call>';
    const plain = splitVtResponse(`look ${call}\nuser\nHere is the cropped image. (Image Size: 28x28)\n\nassistant\n\\boxed{1}`);
    const marked = splitVtResponse(
      `look ${call}<|im_end|>\n<|im_start|>user\nHere is the cropped image. (Image Size: 28x28)\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n\\boxed{1}<|im_end|>`,
    );
    expect(plain.assistant).toEqual([`look ${call}`, '\\boxed{1}']);
    expect(marked.assistant).toEqual(plain.assistant);
    expect(marked.observations[0]).toEqual({ text: 'Here is the cropped image. (Image Size: 28x28)\n', images: 1 });
    expect(vtQuestionOf('system\nS\nuser\n<image>Q?\n\n' + 'x').question).toBe('Q?\n\nx');
  });
});

describe('verl-tool verl_step_records (trainer.rollout_data_dir / validation_data_dir)', () => {
  const REC = path.join(DIR, '../verl_tool_step_records/verl_step_records');

  it('reads <exp>/<step>.jsonl and <exp>-val/<step>.jsonl with chat markers, images pads and reward extras', async () => {
    const run = await importRun('verl-tool', REC);
    expect(run.stats).toEqual({ files: 2, records: 3, imported: 3, skipped: 0 });
    expect(run.issues).toEqual([]);
    expect(run.samples.map((s) => s.qid)).toEqual(['step2-1', 'step2-2', 'val-step2-1']);
    const [ok, bad, val] = run.samples as [typeof run.samples[0], typeof run.samples[0], typeof run.samples[0]];
    expect(ok.question).toBe('What is written on the red sign?\n(A) STOP\n(B) GO\n(C) EXIT\n(D) OPEN');
    expect(ok.trajectory!.turns.map((t) => t.call?.name ?? null)).toEqual(['crop_image', null]);
    expect(ok.trajectory!.turns[0]!.call!.bboxRaw).toEqual([0.61, 0.22, 0.78, 0.35]);
    expect(ok.trajectory!.turns[0]!.observation).toBe('Here is the cropped image (Image Size: 336x252):');
    expect(ok.trajectory!.turns[1]!.text).toBe('It reads STOP. \\boxed{A}');
    expect(ok).toMatchObject({ correct: true, extracted: 'A', stop_reason: 'answer', calls: 1, tool_errors: 0 });
    expect(ok.scores).toMatchObject({ accuracy: 1, score: 1, curiousity_penalty: 0 });
    expect((ok.extra as Record<string, unknown>).verl_tool_metrics).toEqual({ num_turns: 2, num_valid_action: 1 });
    // An invalid action (valid: false) is a tool error with the tool's reason; the length stop is kept.
    expect(bad).toMatchObject({ correct: false, stop_reason: 'length', tool_errors: 1 });
    expect(bad.trajectory!.turns[0]!.call!.error).toBe('Invalid bbox: x1 must be smaller than x2');
    expect(bad.scores).toMatchObject({ accuracy: 0, score: -0.05, curiousity_penalty: -0.05 });
    // Validation dump: input decoded without special tokens, output with them.
    expect(val.question).toBe(ok.question);
    expect(val).toMatchObject({ correct: true, calls: 0, stop_reason: 'answer' });
    expect((val.extra as Record<string, unknown>).split).toBe('val');
    expect(val.scores).toMatchObject({ reward: 1 });
  });

  it('the wrong --from on these files names verl-tool', async () => {
    await expect(importRun('pixel-reasoner', REC)).rejects.toThrow(/try --from verl-tool/);
  });
});

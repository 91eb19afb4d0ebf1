/**
 * A recorded trajectory to replay in demo tests: model text in the Pixel Reasoner dialect about the V*
 * demo image (tests/fixtures/images/animate_glass.jpg), written into a workspace as an imported run.
 * The text is hand-written in the model's format (two crops, then an answer), not real model output.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RunStore, MediaStore } from '../../app/workspace';
import { SharpImageOps } from '../../native/image';
import type { Trajectory } from '../../app/contract';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const GLASS = path.resolve(HERE, '..', 'fixtures', 'images', 'animate_glass.jpg');
export const GLASS_QUESTION = 'What color is the liquid in the glass?';
export const RECORDED_RUN = 'recorded-glass';
export const RECORDED_QID = 'glass-1';

const call = (bbox: number[], target: number) => `<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [${bbox.join(', ')}], "target_image": ${target}}}\n</tool_call>`;

export const RECORDED_TEXTS = [
  `The glass should be on the low table in the middle of the room, but it is small at this resolution. Let me zoom in on the table.\n${call([0.42, 0.25, 0.58, 0.47], 1)}`,
  `The table holds books, pens and a glass on its right side. Let me zoom in on the glass.\n${call([0.6, 0.3, 0.95, 0.8], 2)}`,
  'The glass holds a green liquid.\n\\boxed{green}',
];

/** Write the recorded run into `workspace`; returns the imported image. */
export async function writeRecordedRun(workspace: string): Promise<void> {
  const ops = new SharpImageOps(new MediaStore(path.join(workspace, 'media')));
  const img = await ops.importFile(GLASS);
  const runs = new RunStore(path.join(workspace, 'runs'));
  const h = await runs.createRun({ id: RECORDED_RUN, name: 'recorded glass', kind: 'import', model: { id: 'hand-written' }, engine: 'import', dialect: 'pixel-reasoner', prompt: 'vcot' });
  const trajectory: Trajectory = {
    dialect: 'pixel-reasoner',
    prompt: 'vcot',
    media: [img],
    originals: [img],
    isVideo: false,
    question: GLASS_QUESTION,
    turns: RECORDED_TEXTS.map((text, index) => ({ index, text, completionTokens: Math.ceil(text.length / 4) })),
    stopReason: 'answer',
    finalText: RECORDED_TEXTS[2],
  };
  await h.appendSample({ qid: RECORDED_QID, bench: 'vstar', question: GLASS_QUESTION, answer: 'green', prediction: 'green', score: 1, correct: true, stop_reason: 'answer', calls: 2, tool_errors: 0, trajectory });
  await h.close();
}

export const FRAMES_DIR = path.resolve(HERE, '..', 'fixtures', 'benchmarks', 'mvbench', 'frames', 'object_shuffle', 'video_10000');
export const VIDEO_RUN = 'recorded-video';
export const ERROR_RUN = 'recorded-error';
/** The exact text the Pixel Reasoner dialect's parser reports for the broken call below (checked in the tests). */
export const BROKEN_CALL = '<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.1, 0.1, 0.2}}\n</tool_call>';

/** Two more recordings: `select_frames` on a three-frame video, and a call the parser rejects. */
export async function writeMoreRecordings(workspace: string): Promise<void> {
  const ops = new SharpImageOps(new MediaStore(path.join(workspace, 'media')));
  const frames = [];
  for (const n of ['5.jpg', '10.jpg', '15.jpg']) frames.push(await ops.importFile(path.join(FRAMES_DIR, n)));
  const glass = await ops.importFile(GLASS);
  const runs = new RunStore(path.join(workspace, 'runs'));
  const v = await runs.createRun({ id: VIDEO_RUN, name: 'recorded video', kind: 'import', model: { id: 'hand-written' }, engine: 'import', dialect: 'pixel-reasoner', prompt: 'vcot' });
  const vt = ['Let me look at the first and last frames.\n<tool_call>\n{"name": "select_frames", "arguments": {"target_frames": [1, 3]}}\n</tool_call>', 'The objects were shuffled.\n\\boxed{B}'];
  await v.appendSample({ qid: 'video-1', bench: 'mvbench', question: 'Where is the ball at the end?', answer: 'B', prediction: 'B', score: 1, correct: true, stop_reason: 'answer', calls: 1, tool_errors: 0, trajectory: { dialect: 'pixel-reasoner', prompt: 'vcot', media: frames, originals: frames, isVideo: true, question: 'Where is the ball at the end?', turns: vt.map((text, index) => ({ index, text })), stopReason: 'answer', finalText: vt[1] } });
  await v.close();
  const e = await runs.createRun({ id: ERROR_RUN, name: 'recorded error', kind: 'import', model: { id: 'hand-written' }, engine: 'import', dialect: 'pixel-reasoner', prompt: 'vcot' });
  const et = [`Zoom.\n${BROKEN_CALL}`, 'I could not zoom.\n\\boxed{unknown}'];
  await e.appendSample({ qid: 'error-1', bench: 'vstar', question: GLASS_QUESTION, answer: 'green', prediction: 'unknown', score: 0, correct: false, stop_reason: 'answer', calls: 1, tool_errors: 1, trajectory: { dialect: 'pixel-reasoner', prompt: 'vcot', media: [glass], originals: [glass], isVideo: false, question: GLASS_QUESTION, turns: et.map((text, index) => ({ index, text })), stopReason: 'answer', finalText: et[1] } });
  await e.close();
}

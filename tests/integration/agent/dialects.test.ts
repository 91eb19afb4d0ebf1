import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEpisode, ScriptedEngine } from '../../../app/agent';
import { getDialect } from '../../../app/protocol';
import { Workspace } from '../../../app/workspace';
import { SharpImageOps } from '../../../native/image/sharpImageOps';

const here = path.dirname(fileURLToPath(import.meta.url));
const GLASS = path.join(here, '..', '..', 'fixtures', 'images', 'animate_glass.jpg');
const OCR = path.join(here, '..', '..', 'fixtures', 'images', 'ocr_example2.jpg');

let tmp: string;
let ops: SharpImageOps;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-dialects-'));
  ops = new SharpImageOps((await new Workspace(tmp).init()).media);
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const call = (name: string, args: unknown) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

describe('the loop is dialect-agnostic', () => {
  it('verl-tool: absolute-pixel crop, then select_frames over the image list (frame crops)', async () => {
    const engine = new ScriptedEngine([
      call('crop_image', { bbox_2d: [100, 200, 500, 700], target_image: 1 }),
      call('select_frames', { target_frames: [1, 2] }),
      'The text says hello. \\boxed{hello}',
    ]);
    const t = await runEpisode({ engine, dialect: getDialect('verl-tool'), media: { images: [OCR] }, question: 'What does it say?', imageOps: ops });
    expect(t.stopReason).toBe('answer');
    const [crop, frames] = [t.turns[0]!.call!, t.turns[1]!.call!];
    expect(crop.bboxMode).toBe('absolute');
    expect(crop.produced).toHaveLength(1);
    expect(t.turns[0]!.observation).toBe(`Here is the cropped image. (Image Size: ${crop.produced[0]!.width}x${crop.produced[0]!.height})\n<image>`);
    expect(frames.produced).toHaveLength(2);
    expect(frames.frameIndices).toEqual([0, 1]);
    // The observation's <image> markers become image parts in the engine's next user message.
    const last = engine.requests[2]!.messages.at(-1)!;
    expect(last.content.filter((c) => c.type === 'image')).toHaveLength(2);
    const w = crop.produced[0]!.width;
    const h = crop.produced[0]!.height;
    expect(engine.requests[2]!.prompt).toContain(`<|im_start|>user\nHere is the cropped image. (Image Size: ${w}x${h})\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>`);
  });

  it('deepeyes: the crop is cut from the un-resized original file', async () => {
    const engine = new ScriptedEngine([
      `<think>look</think>\n${call('image_zoom_in_tool', { bbox_2d: [1000, 200, 1400, 600], label: 'glass' })}`,
      '<think>ok</think><answer>red</answer>',
    ]);
    const t = await runEpisode({ engine, dialect: getDialect('deepeyes'), media: { images: [GLASS] }, question: 'What color is the liquid?', imageOps: ops });
    expect(t.stopReason).toBe('answer');
    const c = t.turns[0]!.call!;
    expect(c.cropBox).toEqual([1000, 200, 1400, 600]);
    const got = await sharp(ops.pathOf(c.produced[0]!)).raw().toBuffer({ resolveWithObject: true });
    expect([got.info.width, got.info.height]).toEqual([400, 400]);
    const want = await sharp(GLASS).extract({ left: 1000, top: 200, width: 400, height: 400 }).raw().toBuffer();
    expect(Buffer.compare(got.data, want)).toBe(0);
  });

  it('a dialect that throws ends the episode with stop reason error, keeping the turn', async () => {
    const broken = { ...getDialect('pixel-reasoner'), planCall: () => { throw new Error('planner bug'); } };
    const engine = new ScriptedEngine([call('crop_image_normalized', { bbox_2d: [0.1, 0.1, 0.5, 0.5], target_image: 1 }), 'x']);
    const t = await runEpisode({ engine, dialect: broken, media: { images: [GLASS] }, question: 'q', imageOps: ops });
    expect(t.stopReason).toBe('error');
    expect(t.error).toBe('turn 0: dialect planCall failed: planner bug');
    expect(t.turns).toHaveLength(1);
    expect(engine.used).toBe(1);
  });
});

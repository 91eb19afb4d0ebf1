/**
 * attentionRequestFor rebuilds, from a finished trajectory, exactly the request the loop sent for a turn (the
 * dialect-rendered prompt and the messages with their images), so an attention map is taken over the same prompt the
 * model saw; checked against the requests a scripted engine recorded in real episodes (real pixels, real crops), for a
 * first and a second crop (a crop of a crop) in the pixel-reasoner and verl-tool dialects. Turns without a crop and
 * trajectories without their prompt texts get a clear refusal.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEpisode, ScriptedEngine } from '../../../app/agent';
import { AttentionRequestError, attentionRequestFor } from '../../../app/agent/attentionRequest';
import { getDialect } from '../../../app/protocol';
import { Workspace } from '../../../app/workspace';
import { SharpImageOps } from '../../../native/image/sharpImageOps';

const here = path.dirname(fileURLToPath(import.meta.url));
const OCR = path.join(here, '..', '..', 'fixtures', 'images', 'ocr_example2.jpg');

let tmp: string;
let ops: SharpImageOps;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-attn-req-'));
  ops = new SharpImageOps((await new Workspace(tmp).init()).media);
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const call = (name: string, args: unknown) => `Let me look.\n<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

describe('attentionRequestFor', () => {
  for (const [dialect, name, box1, box2] of [
    ['pixel-reasoner', 'crop_image_normalized', [0.1, 0.2, 0.6, 0.7], [0.2, 0.2, 0.8, 0.9]],
    ['verl-tool', 'crop_image', [100, 200, 500, 700], [10, 20, 200, 300]],
  ] as const) {
    it(`${dialect}: the prompt, messages, query span and image of each crop turn are the loop's`, async () => {
      const engine = new ScriptedEngine([call(name, { bbox_2d: box1, target_image: 1 }), call(name, { bbox_2d: box2, target_image: 2 }), 'It says hi. \\boxed{hi}']);
      const d = getDialect(dialect);
      const t = await runEpisode({ engine, dialect: d, media: { images: [OCR] }, question: 'What does it say?', imageOps: ops, settings: { maxPixels: 200_000 } });
      expect(t.turns.map((x) => !!x.call?.produced.length)).toEqual([true, true, false]);
      for (const k of [0, 1]) {
        const req = attentionRequestFor(t, k, d, (m) => ops.pathOf(m), { maxPixels: 200_000 });
        const sent = engine.requests[k]!;
        expect(req.prompt).toBe(sent.prompt);
        // The same messages, image for image: the loop sent the images held in memory, the rebuilt request names
        // the files they were kept as, with the same pixels.
        const shape = (ms: typeof req.messages) => JSON.stringify(ms, (key, v: unknown) => (key === 'image' ? { w: (v as { width: number }).width, h: (v as { height: number }).height } : v));
        expect(shape(req.messages)).toBe(shape(sent.messages));
        const imgs = (ms: typeof req.messages) => ms.flatMap((m) => m.content.flatMap((c) => (c.type === 'image' ? [c.image] : [])));
        const [got, live] = [imgs(req.messages), imgs(sent.messages)];
        expect(got.length).toBe(live.length);
        for (let i = 0; i < got.length; i++) {
          const file = await sharp(got[i]!.path!).raw().toBuffer();
          expect(Buffer.compare(file, Buffer.from((await live[i]!.pixels!()).data))).toBe(0);
        }
        expect(req.maxPixels).toBe(200_000);
        expect(req.imageIndex).toBe(k); // turn 2 crops image 2, the first crop
        expect(req.completion).toBe(t.turns[k]!.text);
        const [s, e] = req.span!;
        expect(JSON.parse(req.completion.slice(s, e))).toEqual(k === 0 ? box1 : box2);
      }
      expect(() => attentionRequestFor(t, 2, d, (m) => ops.pathOf(m))).toThrow(AttentionRequestError);
      expect(() => attentionRequestFor(t, 2, d, (m) => ops.pathOf(m))).toThrow(/turn 2 has no crop call/);
      expect(() => attentionRequestFor(t, 9, d, (m) => ops.pathOf(m))).toThrow(/has no turn 9/);
      const { system: _s, ...bare } = t;
      expect(() => attentionRequestFor(bare as typeof t, 0, d, (m) => ops.pathOf(m))).toThrow(/does not record its system prompt/);
    });
  }
});

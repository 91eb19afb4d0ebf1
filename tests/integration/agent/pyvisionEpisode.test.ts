/**
 * A PyVision episode end to end: a scripted engine replays model text written from the PyVision spec
 * (PyVision's prompt asks for `<code>\n```python …```\n</code>` turns and a final
 * `<answer>\n\boxed{…}\n</answer>`; the turns below were written for this test, not recorded from a
 * model) through the real loop, the real bubblewrap sandbox with the system Python, and the real
 * media store.
 */
import { promises as fsp, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedEngine } from '../../../app/agent';
import { runPyVisionEpisode, type PyVisionEvent } from '../../../app/agent/pyvisionEpisode';
import { Workspace } from '../../../app/workspace';
import { SharpImageOps } from '../../../native/image/sharpImageOps';
import { startPySandbox } from '../../../native/pysandbox';

const here = path.dirname(fileURLToPath(import.meta.url));
const GLASS = path.join(here, '..', '..', 'fixtures', 'images', 'animate_glass.jpg');

let tmp: string;
let ws: Workspace;
let ops: SharpImageOps;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pyvision-'));
  ws = await new Workspace(tmp).init();
  ops = new SharpImageOps(ws.media);
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const sandbox = (limits = {}) => (ep: Parameters<typeof startPySandbox>[0]) => startPySandbox(ep, { limits: { wallSeconds: 30, ...limits } });

// Written from the spec (labelled): a zoom on the upper-left quarter, a size print, then the answer.
const ZOOM = "Let me zoom into the upper-left quarter.\n<code>\n```python\nw, h = image_clue_0.size\nprint(w, h)\ncrop = image_clue_0.crop((0, 0, w // 2, h // 2))\nplt.imshow(crop)\nplt.axis('off')\nplt.show()\n```\n";
const ANSWER = 'The zoomed view shows the glass clearly.\n<answer>\n\\boxed{glass}\n</answer>';

describe('PyVision episode through the real sandbox', () => {
  it('PV: code → text and figure observation → answer; the engine sees what PV sends', async () => {
    const engine = new ScriptedEngine([ZOOM, ANSWER]);
    const events: PyVisionEvent[] = [];
    const { trajectory, sandbox: info } = await runPyVisionEpisode({ engine, variant: 'PV', question: 'What is in the picture?', images: [GLASS], imageOps: ops, sandbox: sandbox(), onStep: (e) => events.push(e) });
    const first = trajectory.media[0]!;
    expect(trajectory).toMatchObject({ dialect: 'pyvision', stopReason: 'answer', finalText: ANSWER });
    expect(trajectory.userText).toContain(`Image Width: ${first.width}; Image Height: ${first.height}`);
    const t0 = trajectory.turns[0]!;
    expect(t0.call).toMatchObject({ name: 'python', raw: "w, h = image_clue_0.size\nprint(w, h)\ncrop = image_clue_0.crop((0, 0, w // 2, h // 2))\nplt.imshow(crop)\nplt.axis('off')\nplt.show()" });
    expect(t0.call!.produced).toHaveLength(1);
    expect(t0.observation).toBe(`<interpreter>\nText Result:\n${first.width} ${first.height}\nImage Result:\n<image_clue_1><image></image_clue_1></interpreter>\n`);
    // The figure is a real PNG in the media store.
    const fig = ops.pathOf(t0.call!.produced[0]!);
    expect(readFileSync(fig).subarray(1, 4).toString()).toBe('PNG');
    // Turn 2's request: PV's assistant message (`</code>\n` appended) and the observation with the figure in place.
    const req = engine.requests[1]!;
    expect(req.stop).toEqual(['</code>']);
    expect(req.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: `${ZOOM}</code>\n` }] });
    const obs = req.messages[2]!.content;
    expect(obs.map((c) => c.type)).toEqual(['text', 'image', 'text']);
    expect(obs[1]).toMatchObject({ type: 'image', image: { id: t0.call!.produced[0]!.id, width: 640, height: 480, path: fig } });
    expect(info).toMatchObject({ isolation: 'bwrap', limits: { wallSeconds: 30 } });
    expect(info.runs).toHaveLength(1);
    expect(events.filter((e) => e.type === 'token').map((e) => (e as { delta: string }).delta).join('')).toBe(ZOOM + ANSWER);
    expect(events.filter((e) => e.type !== 'token').map((e) => e.type)).toEqual(['episode-start', 'turn-start', 'code-planned', 'code-executed', 'turn-end', 'turn-start', 'turn-end', 'done']);
  }, 120_000);

  it('PVRL: an execution error ends the episode, as the verl environment does', async () => {
    const engine = new ScriptedEngine(['<code>\n```python\nprint(undefined_name)\n```\n', ANSWER]);
    const { trajectory } = await runPyVisionEpisode({ engine, variant: 'PVRL', question: 'What is in the picture?', images: [GLASS], imageOps: ops, sandbox: sandbox() });
    expect(trajectory).toMatchObject({ dialect: 'pyvision-rl', stopReason: 'error' });
    expect(trajectory.turns).toHaveLength(1);
    expect(trajectory.turns[0]!.observation).toBe(
      "\n<|im_start|>user\n<tool_response>\n<interpreter>Execution error: name 'undefined_name' is not defined</interpreter>\n\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
    );
    expect(engine.used).toBe(1);
  }, 120_000);

  it('step mode: the user edits the code before it runs; the record says edited and the edit ran', async () => {
    const engine = new ScriptedEngine(['<code>\n```python\nprint(1 + 1)\n```\n', ANSWER]);
    const { trajectory } = await runPyVisionEpisode({
      engine,
      variant: 'PVRL',
      question: 'q',
      images: [GLASS],
      imageOps: ops,
      sandbox: sandbox(),
      stepHook: ({ code }) => ({ code: code.replace('1 + 1', '6 * 7') }),
    });
    expect(trajectory.turns[0]!.call).toMatchObject({ raw: 'print(6 * 7)', edited: true });
    expect(trajectory.turns[0]!.observation).toContain('<interpreter>\nText Result:\n42</interpreter>');
    expect(trajectory.stopReason).toBe('answer');
  }, 120_000);
});

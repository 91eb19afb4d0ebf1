/**
 * The engine request that asks where the model looked while it wrote one turn's crop box: the conversation before
 * that turn rebuilt from the trajectory as the loop built it (system, the user turn with the initial images, then
 * each earlier turn's text and observation with its produced images, rendered by the dialect), the turn's own text as
 * the teacher-forced completion, the characters of its `bbox_2d` as the query span and its target image.
 */
import type { MediaRef, Trajectory } from '../contract/trajectory';
import { boxSpan } from '../contract/attention';
import type { AttentionRequest, ChatContent, ChatMessage, EngineImage } from '../engines/types';
import type { CallPlan, Dialect, RenderPart, RenderTurn } from '../protocol/types';

export class AttentionRequestError extends Error {}

function observationParts(dialect: Dialect, t: Trajectory['turns'][number]): RenderPart[] {
  const call = t.call!;
  const observation = t.observation ?? '';
  const plan = (
    call.error !== undefined
      ? { kind: 'error', observation, error: new Error(call.error) }
      : call.name === 'select_frames'
        ? { kind: 'frames', observation, frameIndices: call.frameIndices ?? call.produced.map((_, i) => i) }
        : { kind: 'crop', observation }
  ) as CallPlan;
  return dialect.observationParts?.(plan) ?? [{ type: 'text', text: observation }, ...call.produced.map(() => ({ type: 'image' }) as RenderPart)];
}

/**
 * The request for turn `turnIndex` of `t` (a turn with a crop call whose box the maps are about). `pathOf` gives a
 * media file's path on disk; `bounds` are the run's MIN/MAX_PIXELS for the engine, as the loop passed them.
 */
export function attentionRequestFor(
  t: Trajectory,
  turnIndex: number,
  dialect: Dialect,
  pathOf: (m: MediaRef) => string,
  bounds: { minPixels?: number; maxPixels?: number } = {},
): AttentionRequest {
  const turn = t.turns[turnIndex];
  if (!turn) throw new AttentionRequestError(`the trajectory has no turn ${turnIndex}`);
  const call = turn.call;
  if (!call || call.targetIndex === undefined || call.name === 'select_frames' || call.name === 'python') {
    throw new AttentionRequestError(`turn ${turnIndex} has no crop call: attention maps are taken from the tokens that wrote a crop box`);
  }
  if (t.isVideo) throw new AttentionRequestError('attention maps are for image questions (this one is a video)');
  if (t.system === undefined || t.userText === undefined) throw new AttentionRequestError('the trajectory does not record its system prompt and user text, so its prompt cannot be rebuilt');
  const img = (m: MediaRef): EngineImage => ({ ...m, path: pathOf(m) });
  const userParts: RenderPart[] = [...t.media.map(() => ({ type: 'image' }) as RenderPart), { type: 'text', text: t.userText }];
  const messages: ChatMessage[] = [
    { role: 'system', content: [{ type: 'text', text: t.system }] },
    { role: 'user', content: [...t.media.map((m) => ({ type: 'image', image: img(m) }) as ChatContent), { type: 'text', text: t.userText }] },
  ];
  const render: RenderTurn[] = [
    { role: 'system', parts: [{ type: 'text', text: t.system }] },
    { role: 'user', parts: userParts },
  ];
  for (const prev of t.turns.slice(0, turnIndex)) {
    if (!prev.call || prev.observation === undefined) throw new AttentionRequestError(`turn ${prev.index} before the crop is not a tool turn with an observation`);
    messages.push({ role: 'assistant', content: [{ type: 'text', text: prev.text }] });
    render.push({ role: 'assistant', parts: [{ type: 'text', text: prev.text }] });
    const parts = observationParts(dialect, prev);
    const content: ChatContent[] = [];
    let k = 0;
    for (const p of parts) {
      if (p.type === 'text') content.push({ type: 'text', text: p.text });
      else if (p.type === 'image') {
        const ref = prev.call.produced[k++];
        if (ref) content.push({ type: 'image', image: img(ref) });
      }
    }
    messages.push({ role: 'user', content });
    render.push({ role: 'user', parts });
  }
  const span = boxSpan(turn.text, call.raw);
  return {
    messages,
    prompt: dialect.render(render, true),
    completion: turn.text,
    ...(span ? { span } : {}),
    imageIndex: call.targetIndex,
    ...(bounds.minPixels !== undefined ? { minPixels: bounds.minPixels } : {}),
    ...(bounds.maxPixels !== undefined ? { maxPixels: bounds.maxPixels } : {}),
  };
}

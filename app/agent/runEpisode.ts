/**
 * The rollout loop, engine- and dialect-agnostic: generate → tool turn? → parse → plan → (step hook)
 * → execute the plan on real pixels through ImageOps → observation → next turn, until an answer, a
 * limit, a cancel or an engine failure. Every episode returns a Trajectory; nothing already done is
 * dropped when it ends early.
 *
 * Limits follow Pixel Reasoner (EM:2211-2370): before running a tool turn's call, the episode is
 * forced to finish when `calls so far >= maxCalls` (PR: `num_toolcalls > 3`, i.e. maxCalls = 4), when
 * the image list already holds more than `maxImages`, or when this turn's prompt + output tokens are
 * over `tokenBudget`; the forced call is recorded but not run. When a call's results would push the
 * image list past `maxImages`, the episode ends and the observation is dropped.
 */
import type { MediaRef, StopReason, ToolCallRecord, Trajectory, Turn, Box } from '../contract/trajectory';
import type { ChatContent, ChatMessage, EngineImage, GenerateResult } from '../engines/types';
import type { CallPlan, EpisodeImage, EpisodeState, ParsedCall, ParseResult, RenderPart, RenderTurn } from '../protocol/types';
import { isHeldRef } from '../tools/imageOps';
import { presetFor, RESIZE_PRESETS, smartResize, paddedFrameCount } from '../tools/smartResize';
import { resolveSettings } from './settings';
import type { EpisodeEvent, EpisodeSettings, PixelBounds, PreparedEpisodeMedia, RunEpisodeOptions, StepHookDecision } from './types';

const FACTOR = 28;

/** The loop's own failure (not the model's): ends the episode with stop reason `error`. */
class EpisodeError extends Error {}

function stripPads(text: string): string {
  return text.split('<|image_pad|>').join('').split('<|video_pad|>').join('');
}

function resizeTo(size: readonly [number, number], b: PixelBounds): [number, number] {
  const r = smartResize(size[1], size[0], FACTOR, b.minPixels, b.maxPixels);
  return [r.width, r.height];
}

/** Run a dialect function; a throw (a dialect bug, not a model error) becomes an EpisodeError naming it. */
function dialectCall<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new EpisodeError(`dialect ${what} failed: ${errorMessage(err)}`);
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A combined AbortSignal: the caller's plus an optional per-call timeout. */
function turnSignal(outer: AbortSignal | undefined, timeoutMs: number | undefined): { signal: AbortSignal; timedOut: () => boolean; dispose: () => void } {
  const ctrl = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timed = false;
  const onAbort = () => ctrl.abort(outer?.reason);
  if (outer) {
    if (outer.aborted) ctrl.abort(outer.reason);
    else outer.addEventListener('abort', onAbort, { once: true });
  }
  if (timeoutMs !== undefined && timeoutMs > 0) {
    timer = setTimeout(() => {
      timed = true;
      ctrl.abort(new Error(`engine call timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  }
  return {
    signal: ctrl.signal,
    timedOut: () => timed,
    dispose: () => {
      if (timer) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

/** Race a promise against an abort signal (engines that ignore the signal still end the episode). */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * The question media of an episode, imported and resized as the reference does before the first turn: the originals
 * (imported through ImageOps) and the initial images (smart_resize'd; a video's frames padded to an even count). This
 * is the episode's input preparation, the part that needs no engine: `runEpisode` calls it, or takes its result as
 * `prepared` when a caller started it earlier (the sweep runner's look-ahead). Throws on a missing or bad image.
 * With `keep`, the initial images' keeps (writes) start too (`writes` settles when done): for a caller preparing ahead.
 */
export async function prepareEpisodeMedia(opts: Pick<RunEpisodeOptions, 'media' | 'imageOps' | 'settings' | 'signal'> & { keep?: boolean }): Promise<PreparedEpisodeMedia> {
  const { imageOps, signal } = opts;
  const settings = resolveSettings(opts.settings);
  const isVideo = 'videoFrames' in opts.media;
  const inputs = isVideo ? (opts.media as { videoFrames: Array<string | MediaRef> }).videoFrames : (opts.media as { images: Array<string | MediaRef> }).images;
  const originals: MediaRef[] = [];
  const initial: MediaRef[] = [];
  for (const m of inputs) {
    if (signal?.aborted) throw signal.reason ?? new Error('cancelled');
    originals.push(typeof m === 'string' ? await imageOps.importFile(m) : m);
  }
  if (originals.length === 0) throw new EpisodeError('the question has no images or frames');
  if (isVideo) {
    const first = originals[0]!;
    const bounds = settings.videoFramePixels ?? RESIZE_PRESETS[presetFor('video_frame', settings.mode)!];
    const [w, h] = resizeTo([first.width, first.height], bounds);
    for (const o of originals) initial.push(o.width === w && o.height === h ? o : await imageOps.resize(o, w, h));
    // Qwen's frame-list videos are padded to an even frame count by repeating the last frame.
    while (initial.length < paddedFrameCount(originals.length)) initial.push(initial[initial.length - 1]!);
  } else {
    const bounds = settings.initialPixels ?? RESIZE_PRESETS[presetFor('initial', settings.mode)!];
    for (const o of originals) {
      if (signal?.aborted) throw signal.reason ?? new Error('cancelled');
      const [w, h] = resizeTo([o.width, o.height], bounds);
      initial.push(o.width === w && o.height === h ? o : await imageOps.resize(o, w, h));
    }
  }
  // The trajectory names these images: a caller preparing ahead (the sweep runner's look-ahead) starts keeping them
  // here, so their PNG encode and write run while the previous request does (the episode awaits the same keeps; the
  // engine's data URL shares the encode). Not awaited: the episode need not wait for a write to send its request.
  if (opts.keep) {
    const writes = Promise.allSettled(initial.map((r) => imageOps.keep(r))).then(() => undefined);
    return { originals, initial, writes };
  }
  return { originals, initial };
}

export async function runEpisode(opts: RunEpisodeOptions): Promise<Trajectory> {
  const { engine, dialect, imageOps, question, signal } = opts;
  const settings: EpisodeSettings = resolveSettings(opts.settings);
  const limits = { ...dialect.limits, ...settings.limits };
  const started = Date.now();

  // Derived images stay in memory (ImageOps holds them) and the engines read them from there; each one the
  // trajectory names is kept (written once, under its content id) in the background as soon as it exists, so the
  // write overlaps the next engine call instead of preceding it. Events and the returned trajectory name only kept
  // ids: an event waits for the keeps it names, in an ordered queue the loop itself never waits on (except before
  // a step hook, whose caller reads what the events told it).
  const keeps = new Map<string, Promise<MediaRef>>();
  const keepRef = (ref: MediaRef): Promise<MediaRef> => {
    if (!isHeldRef(ref)) return Promise.resolve(ref);
    let k = keeps.get(ref.id);
    if (!k) {
      k = imageOps.keep(ref);
      k.catch(() => undefined); // reported where it is awaited (an event, or the trajectory's end)
      keeps.set(ref.id, k);
    }
    return k;
  };
  /** The kept refs of `refs`; one that could not be stored is left out (the trajectory's end reports why). */
  const keptOnly = async (refs: MediaRef[]): Promise<MediaRef[]> => (await Promise.allSettled(refs.map(keepRef))).flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const keptTurn = async (turn: Turn): Promise<Turn> => (turn.call?.produced.length ? { ...turn, call: { ...turn.call, produced: await keptOnly(turn.call.produced) } } : turn);
  const keptEvent = async (ev: EpisodeEvent): Promise<EpisodeEvent> => {
    switch (ev.type) {
      case 'episode-start':
        return { ...ev, media: await keptOnly(ev.media) };
      case 'call-executed':
        return { ...ev, call: { ...ev.call, produced: await keptOnly(ev.call.produced) } };
      case 'turn-end':
        return { ...ev, turn: await keptTurn(ev.turn) };
      default:
        return ev;
    }
  };
  let events: Promise<void> = Promise.resolve();
  const emit = (ev: EpisodeEvent) => {
    const listener = opts.onStep;
    if (!listener) return;
    events = events.then(async () => {
      const out = await keptEvent(ev);
      try {
        listener(out);
      } catch {
        // A broken listener must not break the episode.
      }
    });
  };

  const isVideo = 'videoFrames' in opts.media;
  const inputs = isVideo ? (opts.media as { videoFrames: Array<string | MediaRef> }).videoFrames : (opts.media as { images: Array<string | MediaRef> }).images;
  const system = dialect.systemPrompt(settings.prompt);
  const userText = dialect.userText(question, settings.prompt, isVideo ? 1 : inputs.length);

  const originals: MediaRef[] = [];
  const initial: MediaRef[] = [];
  /** Images appended by calls (crops after resize, selected frames), in order. */
  const prior: MediaRef[] = [];
  const priorKinds: EpisodeImage['kind'][] = [];
  const turns: Turn[] = [];
  let stopReason: StopReason = 'answer';
  let error: string | undefined;
  let finalText: string | undefined;
  let lastContext = 0;

  const finish = async (): Promise<Trajectory> => {
    // The trajectory names kept images only: wait for every keep (started as each image appeared). One that failed
    // (the store could not write) is left out, and the episode ends as an error saying so.
    const failed = (await Promise.allSettled([...initial, ...turns.flatMap((x) => x.call?.produced ?? [])].map(keepRef))).find((r) => r.status === 'rejected');
    if (failed) {
      stopReason = 'error';
      error = `storing the episode's images: ${errorMessage(failed.reason)}${error !== undefined ? ` (after: ${error})` : ''}`;
    }
    const media = await keptOnly(initial);
    const keptTurns = await Promise.all(turns.map(keptTurn));
    const t: Trajectory = {
      dialect: dialect.id,
      prompt: settings.prompt,
      media,
      originals,
      isVideo,
      question,
      system,
      userText,
      turns: keptTurns,
      stopReason,
      ...(error !== undefined ? { error } : {}),
      ...(finalText !== undefined ? { finalText } : {}),
      totalTokens: lastContext,
      latencyMs: Date.now() - started,
    };
    emit({ type: 'done', trajectory: t });
    await events;
    return t;
  };

  // 1. Import and resize the question media as the reference does before the first turn (or take the media a
  // caller prepared ahead with `prepareEpisodeMedia`, e.g. the sweep runner while the previous sample's request ran).
  try {
    const ready = await (opts.prepared ?? prepareEpisodeMedia(opts));
    originals.push(...ready.originals);
    initial.push(...ready.initial);
    for (const r of initial) void keepRef(r);
  } catch (err) {
    if (signal?.aborted) stopReason = 'cancelled';
    else stopReason = 'error';
    error = `preparing the question media: ${errorMessage(err)}`;
    return finish();
  }
  emit({ type: 'episode-start', media: initial, originals, isVideo, system, userText });

  const engineImage = (ref: MediaRef): EngineImage => imageOps.engineImage(ref);
  const episodeImage = (ref: MediaRef, kind: EpisodeImage['kind']): EpisodeImage => ({ width: ref.width, height: ref.height, kind });
  const state = (): EpisodeState => ({
    mode: settings.mode,
    isVideo,
    originals: isVideo ? [] : initial.map((r) => episodeImage(r, 'original')),
    videoFrames: isVideo ? initial.map((r) => episodeImage(r, 'frame')) : [],
    prior: prior.map((r, i) => episodeImage(r, priorKinds[i] ?? 'crop')),
    rawSizes: originals.map((o) => [o.width, o.height] as [number, number]),
  });
  /** The reference's image count (a video counts as one entry). */
  const imageCount = () => (isVideo ? 1 : initial.length) + prior.length;

  // 2. The conversation, kept in two shapes: engine messages and template turns.
  // Images (or the video) first, then the text, as PR's prompts_dataset does.
  const userParts: RenderPart[] = [...(isVideo ? [{ type: 'video' } as RenderPart] : initial.map(() => ({ type: 'image' }) as RenderPart)), { type: 'text', text: userText }];
  const firstContent: ChatContent[] = [];
  let nextImage = 0;
  for (const part of userParts) {
    if (part.type === 'text') firstContent.push({ type: 'text', text: part.text });
    else if (part.type === 'video') firstContent.push({ type: 'video', frames: initial.map(engineImage) });
    else {
      const ref = initial[nextImage++];
      if (ref) firstContent.push({ type: 'image', image: engineImage(ref) });
    }
  }
  const messages: ChatMessage[] = [
    { role: 'system', content: [{ type: 'text', text: system }] },
    { role: 'user', content: firstContent },
  ];
  const renderTurns: RenderTurn[] = [
    { role: 'system', parts: [{ type: 'text', text: system }] },
    { role: 'user', parts: userParts },
  ];

  const resolveTarget = (sel: Extract<CallPlan, { kind: 'crop' }>['target']): MediaRef => {
    const list = sel.list;
    const pos = sel.position ?? sel.index;
    let ref: MediaRef | undefined;
    // `list` is authoritative. PR's 'raw' source is its `rawimagelist` = the *resized* originals
    // (list 'originals'); only list 'raw' (DeepEyes) means the un-resized files.
    if (list === 'prior') ref = prior[pos];
    else if (list === 'raw') ref = originals[pos];
    else if (list === 'videoFrames' || list === 'originals') ref = initial[pos];
    else if (sel.source === 'raw') ref = originals[pos];
    else ref = pos < initial.length ? initial[pos] : prior[pos - initial.length];
    if (!ref) throw new EpisodeError(`the plan targets image ${list ?? sel.source}[${pos}], which does not exist`);
    if (ref.width !== sel.size[0] || ref.height !== sel.size[1]) {
      throw new EpisodeError(`the plan expects image ${list ?? sel.source}[${pos}] to be ${sel.size[0]}x${sel.size[1]} but it is ${ref.width}x${ref.height}`);
    }
    return ref;
  };
  const combinedIndex = (sel: Extract<CallPlan, { kind: 'crop' }>['target']): number =>
    sel.list === 'prior' ? initial.length + (sel.position ?? 0) : (sel.position ?? sel.index);

  let toolCalls = 0;
  for (let turnIndex = 0; ; turnIndex++) {
    if (signal?.aborted) {
      stopReason = 'cancelled';
      break;
    }
    const prompt = dialect.render(renderTurns, true);
    emit({ type: 'turn-start', turnIndex, prompt });
    const dec = settings.decoding;
    const temperature = turnIndex > 0 && dec.laterTemperature !== undefined ? dec.laterTemperature : dec.temperature;
    const ts = turnSignal(signal, settings.turnTimeoutMs);
    let streamed = '';
    let result: GenerateResult;
    try {
      result = await raceAbort(
        engine.generate({
          messages: messages.map((m) => ({ ...m, content: [...m.content] })),
          prompt,
          maxTokens: limits.maxTokensPerTurn,
          temperature,
          topP: dec.topP,
          topK: dec.topK,
          stop: dialect.stop,
          ...(dec.seed !== undefined ? { seed: dec.seed } : {}),
          ...(settings.minPixels !== undefined ? { minPixels: settings.minPixels } : {}),
          ...(settings.maxPixels !== undefined ? { maxPixels: settings.maxPixels } : {}),
          signal: ts.signal,
          onToken: (delta) => {
            streamed += delta;
            emit({ type: 'token', turnIndex, delta });
          },
        }),
        ts.signal,
      );
    } catch (err) {
      const cancelled = !!signal?.aborted;
      stopReason = cancelled ? 'cancelled' : 'engine_error';
      if (!cancelled) error = ts.timedOut() ? `engine call timed out after ${settings.turnTimeoutMs} ms (turn ${turnIndex})` : `engine failed on turn ${turnIndex}: ${errorMessage(err)}`;
      if (streamed) {
        const partial: Turn = { index: turnIndex, text: streamed, finishReason: cancelled ? 'cancelled' : 'error' };
        turns.push(partial);
        emit({ type: 'turn-end', turn: partial });
      }
      break;
    } finally {
      ts.dispose();
    }

    const text = result.text;
    lastContext = result.promptTokens + result.completionTokens;
    const turn: Turn = {
      index: turnIndex,
      text,
      promptTokens: result.promptTokens,
      completionTokens: result.completionTokens,
      latencyMs: result.latencyMs,
      finishReason: result.finishReason,
    };
    const pushTurn = () => {
      turns.push(turn);
      emit({ type: 'turn-end', turn });
    };
    if (result.finishReason === 'cancelled' || signal?.aborted) {
      pushTurn();
      stopReason = 'cancelled';
      break;
    }

    if (!dialect.isToolTurn(text)) {
      pushTurn();
      stopReason = result.finishReason === 'length' ? 'length' : 'answer';
      finalText = text;
      break;
    }

    // A tool turn. Parse it first so even a forced finish records what the model asked for.
    const prefix = stripPads(prompt);
    let parse: ParseResult;
    let plan: CallPlan;
    try {
      parse = dialectCall('parseCall', () => dialect.parseCall(prefix, text));
      const p = parse;
      plan = p.ok ? dialectCall('planCall', () => dialect.planCall(p.call, state())) : { kind: 'error', error: p.error, observation: p.observation };
    } catch (err) {
      pushTurn();
      stopReason = 'error';
      error = `turn ${turnIndex}: ${errorMessage(err)}`;
      break;
    }
    const baseRecord = (p: ParseResult): ToolCallRecord =>
      p.ok
        ? { raw: p.call.raw, name: p.call.name, arguments: p.call.arguments, produced: [] }
        : { raw: p.raw, name: p.name ?? null, ...(p.parsed ? { arguments: p.parsed.arguments } : {}), produced: [] };

    const overCalls = toolCalls >= limits.maxCalls;
    const overImages = imageCount() > limits.maxImages;
    const overTokens = result.promptTokens + result.completionTokens > limits.tokenBudget;
    const dialectForce = dialect.forceFinish?.({ toolCallsSoFar: toolCalls, imageCount: imageCount(), promptTokens: result.promptTokens, outputTokens: result.completionTokens }) ?? false;
    toolCalls += 1;
    if (overCalls || overImages || overTokens || (dialectForce && !settings.limits)) {
      turn.call = baseRecord(parse);
      turn.observation = '';
      pushTurn();
      stopReason = overTokens ? 'token_budget' : overImages ? 'max_images' : 'max_calls';
      break;
    }

    let call: ParsedCall | null = parse.ok ? parse.call : null;
    let edited = false;
    let assistantText = text;
    emit({ type: 'call-planned', turnIndex, call, plan, edited });

    if (opts.stepHook) {
      let decision: StepHookDecision;
      try {
        await events; // the hook's caller sees every event before it (their images kept)
        decision = await opts.stepHook({ turnIndex, text, parse, plan, state: state() });
      } catch (err) {
        turn.call = baseRecord(parse);
        pushTurn();
        stopReason = 'error';
        error = `step hook failed on turn ${turnIndex}: ${errorMessage(err)}`;
        break;
      }
      if (decision && 'cancel' in decision) {
        turn.call = baseRecord(parse);
        pushTurn();
        stopReason = 'cancelled';
        break;
      }
      if (decision && 'call' in decision) {
        const old = parse.ok ? parse.call.raw : parse.raw;
        call = decision.call;
        const edit = call;
        try {
          plan = dialectCall('planCall', () => dialect.planCall(edit, state()));
        } catch (err) {
          turn.call = { raw: edit.raw, name: edit.name, arguments: edit.arguments, produced: [], edited: true };
          pushTurn();
          stopReason = 'error';
          error = `turn ${turnIndex}: ${errorMessage(err)}`;
          break;
        }
        edited = true;
        // Keep the conversation consistent with what ran: the edited call replaces the model's last call.
        const at = old ? assistantText.lastIndexOf(old) : -1;
        if (at >= 0 && old !== call.raw) assistantText = assistantText.slice(0, at) + call.raw + assistantText.slice(at + old.length);
        turn.text = assistantText;
        emit({ type: 'call-planned', turnIndex, call, plan, edited });
      }
    }

    const record: ToolCallRecord = call ? { raw: call.raw, name: call.name, arguments: call.arguments, produced: [] } : baseRecord(parse);
    if (edited) record.edited = true;

    // Execute the plan on pixels.
    let produced: MediaRef[] = [];
    let dropped = false;
    let observationParts: RenderPart[];
    try {
      if (plan.kind === 'error') {
        record.error = plan.error.message;
      } else if (plan.kind === 'crop') {
        const target = resolveTarget(plan.target);
        const tw = plan.target.size[0];
        const th = plan.target.size[1];
        record.targetIndex = combinedIndex(plan.target);
        record.bboxMode = plan.bboxMode;
        record.bboxRaw = plan.bboxRaw;
        record.bboxNormalized = (plan.bboxMode === 'normalized' ? plan.bboxRaw : [plan.bboxRaw[0] / tw, plan.bboxRaw[1] / th, plan.bboxRaw[2] / tw, plan.bboxRaw[3] / th]) as Box;
        record.bboxPadded = plan.normalizedBox;
        record.cropBox = plan.cropBox;
        let size = plan.resizedSize;
        let observation = plan.observation;
        if (settings.zoomPixels) {
          const over = resizeTo(plan.cropSize, settings.zoomPixels);
          observation = observation.split(`${size[0]}x${size[1]}`).join(`${over[0]}x${over[1]}`);
          size = over;
          plan = { ...plan, resizedSize: over, observation };
        }
        if (plan.imagesAfter > limits.maxImages) {
          dropped = true;
        } else {
          produced = [await imageOps.crop(target, plan.cropBox as [number, number, number, number], size)];
        }
      } else {
        // 0-based indices into the episode's image list (video frames for PR; the combined list for VT).
        record.frameIndices = plan.frameCrops ? plan.frameCrops.map((fc) => combinedIndex(fc.target)) : (plan.framePositions ?? plan.frameIndices);
        if (plan.imagesAfter > limits.maxImages) {
          dropped = true;
        } else if (plan.frameCrops) {
          for (const fc of plan.frameCrops) {
            const src = resolveTarget(fc.target);
            produced.push(await imageOps.crop(src, fc.cropBox as [number, number, number, number], fc.resizedSize));
          }
        } else {
          const positions = plan.framePositions ?? plan.frameIndices;
          for (const p of positions) {
            const f = initial[p];
            if (!isVideo || !f) throw new EpisodeError(`the plan selects frame ${p}, which does not exist`);
            const [w, h] = plan.frameSize;
            produced.push(f.width === w && f.height === h ? f : await imageOps.resize(f, w, h));
          }
        }
      }
      observationParts = dialect.observationParts?.(plan) ?? [{ type: 'text', text: plan.observation }, ...produced.map(() => ({ type: 'image' }) as RenderPart)];
    } catch (err) {
      turn.call = record;
      pushTurn();
      stopReason = signal?.aborted ? 'cancelled' : 'error';
      error = `executing the call of turn ${turnIndex}: ${errorMessage(err)}`;
      break;
    }

    record.produced = produced;
    for (const p of produced) void keepRef(p);
    turn.call = record;
    if (dropped) {
      turn.observation = '';
      pushTurn();
      emit({ type: 'call-executed', turnIndex, call: record, observation: '' });
      stopReason = 'max_images';
      break;
    }
    turn.observation = plan.observation;
    emit({ type: 'call-executed', turnIndex, call: record, observation: plan.observation });
    pushTurn();

    // Append the assistant turn and the observation to the conversation.
    messages.push({ role: 'assistant', content: [{ type: 'text', text: assistantText }] });
    renderTurns.push({ role: 'assistant', parts: [{ type: 'text', text: assistantText }] });
    const content: ChatContent[] = [];
    let img = 0;
    for (const part of observationParts) {
      if (part.type === 'text') content.push({ type: 'text', text: part.text });
      else if (part.type === 'image') {
        const ref = produced[img++];
        if (ref) content.push({ type: 'image', image: engineImage(ref) });
      }
    }
    messages.push({ role: 'user', content });
    renderTurns.push({ role: 'user', parts: observationParts });
    for (const p of produced) {
      prior.push(p);
      priorKinds.push(plan.kind === 'frames' ? 'frame' : 'crop');
    }
  }
  return finish();
}

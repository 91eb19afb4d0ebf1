/**
 * The PyVision episode loop: generate (stop at `</code>`) → decide (the dialect's rules for PV or PVRL)
 * → run the code in the episode's sandbox → observation (text and figures) → next turn, until an answer,
 * an error the reference ends on, or the turn limit.
 *
 * The decision and observation steps are pure (`pyvisionDecide`, `pyvisionObserve`) so the property test
 * can drive them with any model text and any sandbox outcome; `runPyVisionEpisode` adds the engine, the
 * sandbox and the media store. Trajectories use the shared contract: a code turn's `call` has
 * `name: 'python'`, the code, its text output and every figure in `produced`.
 */
import type { MediaRef, StopReason, ToolCallRecord, Trajectory, Turn } from '../contract/trajectory';
import type { ChatContent, ChatMessage, Engine, EngineImage } from '../engines/types';
import {
  PYVISION_LIMITS,
  PYVISION_STOP,
  pvCodeTurn,
  pvObservation,
  pvrlCodeTurn,
  pvrlObservation,
  pvrlPrompt,
  pvrlUserContent,
  pvUserContent,
  pyvisionExecSource,
  pyvisionForbidden,
  PV_FORBIDDEN_MESSAGE,
  type ExecOutcome,
  type PyVisionVariant,
} from '../protocol/pyvision';
import type { CodeRunResult, CodeSandbox, CodeSandboxFactory, CodeSandboxInfo } from '../tools/codeSandbox';
import type { ImageOps } from '../tools/imageOps';

/** What one model turn means, before anything runs. */
export type PyVisionDecision =
  /** The episode ends on this turn's text (an answer, or a final turn the reference ends on). */
  | { kind: 'final'; stop: StopReason; error?: string }
  /** Code to run; `execSource` is exactly what the reference would `exec`. */
  | { kind: 'run'; code: string; execSource: string }
  /** No run: the observation is known already (forbidden code, a PVRL format error, PV's empty code). */
  | { kind: 'observe'; code: string | null; observation: string; error: string; stop: StopReason | null };

/** The assistant text PVRL's vLLM would have returned: the `</code>` stop string is kept in its output. */
export function pvrlOutputText(text: string, finishReason: string): string {
  if (finishReason !== 'stop') return text;
  const open = text.lastIndexOf('<code>');
  return open >= 0 && text.indexOf(PYVISION_STOP, open) < 0 ? `${text}${PYVISION_STOP}` : text;
}

export function pyvisionDecide(variant: PyVisionVariant, text: string, finishReason: string): PyVisionDecision {
  if (variant === 'PV') {
    const t = pvCodeTurn(text, finishReason);
    if (!t.isToolTurn) return { kind: 'final', stop: finishReason === 'length' ? 'length' : 'answer' };
    if (t.error) {
      // PV skips the run and then crashes indexing an empty result list; Loupe ends the episode instead.
      return { kind: 'observe', code: t.code, observation: `<interpreter>Error: ${t.error.message}</interpreter>\n`, error: `${t.error.type}: ${t.error.message} (the reference crashes on an empty code block)`, stop: 'error' };
    }
    if (t.forbidden) return { kind: 'observe', code: t.code, observation: `<interpreter>Error: ${PV_FORBIDDEN_MESSAGE}</interpreter>\n`, error: PV_FORBIDDEN_MESSAGE, stop: null };
    return { kind: 'run', code: t.code!, execSource: t.execSource! };
  }
  const t = pvrlCodeTurn(pvrlOutputText(text, finishReason), finishReason);
  switch (t.decision) {
    case 'answer':
      return { kind: 'final', stop: 'answer' };
    case 'length':
      return { kind: 'final', stop: 'length' };
    case 'empty':
      return { kind: 'final', stop: 'error', error: 'empty model output (the environment ends the episode)' };
    case 'format_error':
      return { kind: 'observe', code: t.code, observation: t.observation!, error: 'no code or answer found (format error)', stop: 'error' };
    case 'code':
      if (t.forbidden) return { kind: 'observe', code: t.code, observation: t.observation!, error: PV_FORBIDDEN_MESSAGE, stop: 'error' };
      return { kind: 'run', code: t.code!, execSource: t.execSource! };
  }
}

/** A run's observation, where the image numbering goes next, and whether the episode ends here. */
export interface PyVisionObserved {
  observation: string;
  nextImageIndex: number;
  stop: StopReason | null;
  error?: string;
}

export function pyvisionObserve(variant: PyVisionVariant, run: ExecOutcome, imageIndex: number): PyVisionObserved {
  if (variant === 'PV') {
    const o = pvObservation(run, imageIndex);
    return { observation: o.observation, nextImageIndex: o.nextImageIndex, stop: null, ...(o.errorResult ? { error: o.errorResult } : {}) };
  }
  const o = pvrlObservation(run, imageIndex);
  return { observation: o.observation, nextImageIndex: o.nextImageIndex, stop: o.isError ? 'error' : null, ...('error' in o.info ? { error: o.info.error } : {}) };
}

export interface PyVisionStepContext {
  turnIndex: number;
  text: string;
  code: string;
}
/** Step mode: run as planned, run edited code instead (the record is marked `edited`), or stop. */
export type PyVisionStepDecision = void | undefined | { code: string } | { cancel: true };

export type PyVisionEvent =
  | { type: 'episode-start'; media: MediaRef[]; userText: string; sandbox: CodeSandboxInfo }
  | { type: 'turn-start'; turnIndex: number }
  | { type: 'token'; turnIndex: number; delta: string }
  | { type: 'code-planned'; turnIndex: number; code: string }
  | { type: 'code-executed'; turnIndex: number; call: ToolCallRecord; observation: string }
  | { type: 'turn-end'; turn: Turn }
  | { type: 'done'; trajectory: Trajectory };

export interface PyVisionEpisodeOptions {
  engine: Engine;
  variant: PyVisionVariant;
  question: string;
  /** Question image files (one image in the reference's single-image prompt). */
  images: string[];
  imageOps: ImageOps;
  sandbox: CodeSandboxFactory;
  /** Default: PVRL 5 (its `max_turns`); PV has no limit in the reference, Loupe stops at 30. */
  maxTurns?: number;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  /** PV: the API name decides the reported size (Claude halves images over 1024 px). */
  apiName?: string;
  onStep?: (e: PyVisionEvent) => void;
  stepHook?: (ctx: PyVisionStepContext) => PyVisionStepDecision | Promise<PyVisionStepDecision>;
  signal?: AbortSignal;
}

export interface PyVisionEpisodeResult {
  trajectory: Trajectory;
  /** Sandbox facts for the run manifest: isolation, Python, limits, and per-run timing. */
  sandbox: CodeSandboxInfo & { runs: Array<{ turn: number; wallMs: number; cpuMs: number | null; limitsHit: string[] }> };
}

function emit(onStep: PyVisionEpisodeOptions['onStep'], e: PyVisionEvent): void {
  try {
    onStep?.(e);
  } catch {
    // listeners must not break the episode
  }
}

export async function runPyVisionEpisode(opts: PyVisionEpisodeOptions): Promise<PyVisionEpisodeResult> {
  const { engine, variant, imageOps } = opts;
  const maxTurns = opts.maxTurns ?? (variant === 'PVRL' ? PYVISION_LIMITS.PVRL.maxTurns : 30);
  const started = Date.now();
  const media = await Promise.all(opts.images.map((p) => imageOps.importFile(p)));
  const engineImage = (m: MediaRef): EngineImage => imageOps.engineImage(m);
  const first = media[0];
  if (!first) throw new Error('a PyVision episode needs one question image');
  // The first user turn, as each reference builds it.
  let userContent: ChatContent[];
  let userText: string;
  if (variant === 'PV') {
    const parts = pvUserContent(first.width, first.height, opts.question, opts.apiName ?? 'loupe');
    userContent = parts.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image', image: engineImage(first) }));
    userText = parts.map((p) => (p.type === 'text' ? p.text : '<image>')).join('');
  } else {
    const prompt = pvrlPrompt(first.width, first.height, opts.question);
    userContent = pvrlUserContent(prompt).map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image', image: engineImage(first) }));
    userText = prompt;
  }
  const messages: ChatMessage[] = [{ role: 'user', content: userContent }];
  const sandbox: CodeSandbox = await opts.sandbox({ variant, images: media.map((m) => imageOps.pathOf(m)) });
  const runs: PyVisionEpisodeResult['sandbox']['runs'] = [];
  emit(opts.onStep, { type: 'episode-start', media, userText, sandbox: sandbox.info });
  const turns: Turn[] = [];
  let stopReason: StopReason = 'max_calls';
  let error: string | undefined;
  let finalText: string | undefined;
  let totalTokens = 0;
  // PV numbers figures from the number of input images; PVRL's tool starts at 1.
  let imageIndex = variant === 'PV' ? media.length : 1;
  let imagesInContext = media.length;
  try {
    for (let turnIndex = 0; turnIndex < maxTurns; turnIndex++) {
      if (opts.signal?.aborted) {
        stopReason = 'cancelled';
        break;
      }
      emit(opts.onStep, { type: 'turn-start', turnIndex });
      let gen;
      try {
        gen = await engine.generate({
          messages,
          maxTokens: opts.maxTokens ?? (variant === 'PV' ? PYVISION_LIMITS.PV.maxTokens : PYVISION_LIMITS.PVRL.maxTokensPerTurn),
          temperature: opts.temperature ?? (variant === 'PV' ? PYVISION_LIMITS.PV.temperature : 1.0),
          topP: opts.topP ?? 1.0,
          topK: -1,
          stop: [PYVISION_STOP],
          signal: opts.signal,
          onToken: (delta) => emit(opts.onStep, { type: 'token', turnIndex, delta }),
        });
      } catch (e) {
        stopReason = opts.signal?.aborted ? 'cancelled' : 'engine_error';
        error = (e as Error).message;
        break;
      }
      totalTokens += gen.promptTokens + gen.completionTokens;
      const turn: Turn = { index: turnIndex, text: gen.text, promptTokens: gen.promptTokens, completionTokens: gen.completionTokens, latencyMs: gen.latencyMs, finishReason: gen.finishReason };
      const decision = pyvisionDecide(variant, gen.text, gen.finishReason);
      if (decision.kind === 'final') {
        turns.push(turn);
        emit(opts.onStep, { type: 'turn-end', turn });
        finalText = gen.text;
        stopReason = decision.stop;
        error = decision.error;
        break;
      }
      // The assistant message as each reference keeps it.
      const assistantText = variant === 'PV' ? `${gen.text}</code>\n` : pvrlOutputText(gen.text, gen.finishReason);
      messages.push({ role: 'assistant', content: [{ type: 'text', text: assistantText }] });
      let call: ToolCallRecord;
      let observation: string;
      let stop: StopReason | null;
      const obsContent: ChatContent[] = [];
      if (decision.kind === 'observe') {
        call = { raw: decision.code ?? '', name: 'python', arguments: { code: decision.code }, produced: [], error: decision.error };
        observation = decision.observation;
        stop = decision.stop;
        obsContent.push({ type: 'text', text: observation });
      } else {
        let code = decision.code;
        let execSource = decision.execSource;
        let edited = false;
        emit(opts.onStep, { type: 'code-planned', turnIndex, code });
        const hook = await opts.stepHook?.({ turnIndex, text: gen.text, code });
        if (hook && 'cancel' in hook) {
          turns.push(turn);
          stopReason = 'cancelled';
          break;
        }
        if (hook && 'code' in hook && hook.code !== code) {
          code = hook.code;
          edited = true;
          execSource = pyvisionExecSource(variant, code);
        }
        let run: CodeRunResult | null = null;
        let observed: PyVisionObserved;
        if (edited && pyvisionForbidden(code)) {
          const outcome: ExecOutcome = { stdout: '', numFigures: 0, error: PV_FORBIDDEN_MESSAGE, timeout: false };
          observed = pyvisionObserve(variant, outcome, imageIndex);
        } else {
          run = await sandbox.run(execSource);
          runs.push({ turn: turnIndex, wallMs: run.wallMs, cpuMs: run.cpuMs, limitsHit: run.limitsHit });
          observed = pyvisionObserve(variant, run, imageIndex);
        }
        const showFigures = run !== null && !run.timeout && run.error === null && run.numFigures > 0 && observed.stop === null;
        const produced: MediaRef[] = [];
        if (run && run.figures.length > 0) for (const f of run.figures) produced.push(await imageOps.importFile(f));
        call = {
          raw: code,
          name: 'python',
          arguments: { code, stdout: run?.stdout ?? '', limitsHit: run?.limitsHit ?? [], wallMs: run?.wallMs, cpuMs: run?.cpuMs },
          produced,
          ...(observed.error ? { error: observed.error } : {}),
          ...(edited ? { edited: true } : {}),
        };
        observation = observed.observation;
        stop = observed.stop;
        // The observation with each figure in place (PV: image parts; PVRL: `<image>` placeholders).
        if (showFigures) {
          const pieces = observation.split('<image>');
          pieces.forEach((piece, i) => {
            if (piece) obsContent.push({ type: 'text', text: piece });
            const fig = produced[i];
            if (i < pieces.length - 1 && fig) obsContent.push({ type: 'image', image: engineImage(fig) });
          });
          imagesInContext += produced.length;
        } else {
          obsContent.push({ type: 'text', text: observation });
        }
        imageIndex = observed.nextImageIndex;
      }
      turn.call = call;
      turn.observation = observation;
      turns.push(turn);
      emit(opts.onStep, { type: 'code-executed', turnIndex, call, observation });
      emit(opts.onStep, { type: 'turn-end', turn });
      if (stop) {
        stopReason = stop;
        error = call.error;
        break;
      }
      if (variant === 'PVRL' && imagesInContext >= PYVISION_LIMITS.PVRL.maxImages) {
        stopReason = 'max_images';
        break;
      }
      messages.push({ role: 'user', content: obsContent });
    }
  } finally {
    await sandbox.close();
  }
  const trajectory: Trajectory = {
    dialect: variant === 'PV' ? 'pyvision' : 'pyvision-rl',
    prompt: 'vistool_with_img_info_v2',
    media,
    originals: media,
    isVideo: false,
    question: opts.question,
    userText,
    turns,
    stopReason,
    ...(error ? { error } : {}),
    ...(finalText !== undefined ? { finalText } : {}),
    totalTokens,
    latencyMs: Date.now() - started,
  };
  emit(opts.onStep, { type: 'done', trajectory });
  return { trajectory, sandbox: { ...sandbox.info, runs } };
}

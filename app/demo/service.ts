/**
 * The Demo service: import media, run an episode with streaming events, step mode (pause before each call; run,
 * edit or stop), keep edited branches beside the original, save every run to the workspace (kind 'demo'), export
 * trajectories. Engines come from the model service (local, shared through the engine manager) or are built per run
 * (OpenAI-compatible, replay); pixels go through the ImageOps and animation renderer the door wires.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Box, DemoBranch, DemoEvent, DemoExample, DemoProposal, DemoRunReq, DemoScratchRun, ExportResult, MediaRef, ReplaySource, RunManifest, SampleRecord, Trajectory } from '../contract';
import { DemoRunReqSchema } from '../contract';
import { runEpisode, ScriptedEngine, countCalls, type StepHookContext, type StepHookDecision } from '../agent';
import { runPyVisionEpisode } from '../agent/pyvisionEpisode';
import type { CodeSandboxFactory } from '../tools/codeSandbox';
import { getDialect } from '../protocol';
import type { CallPlan, Dialect, ParsedCall } from '../protocol/types';
import { pyJsonDumps } from '../pycompat/json';
import type { MediaStore, RunStore, RunHandle } from '../workspace';
import { containedPath, safeFileName } from '../workspace/contain';
import { ATTENTION_UNAVAILABLE, OpenAIEngine } from '../engines/openai/openaiEngine';
import { AttentionRequestError, attentionRequestFor } from '../agent/attentionRequest';
import type { AttentionMaps } from '../contract/attention';
import { EngineError } from '../engines/errors';
import type { Engine } from '../engines/types';
import type { ModelService } from '../engines/models';
import type { ImageOps } from '../tools/imageOps';
import type { AnimationRenderer } from '../export';
import type { EngineState, EventName, EventPayload } from '../contract';
import { buildStoryboard, renderTrajectoryHtml, trajectoryMediaIds } from '../export';
import { APP_VERSION } from '../version';
import { hashModelFolder } from '../sweeps/plan';
import { createDemoPairs } from './pairs';

type ParsedRunReq = ReturnType<typeof DemoRunReqSchema.parse>;
/** A run request once a served engine is resolved to the OpenAI-compatible server it is. */
type RunReq = Omit<ParsedRunReq, 'engine'> & { engine: Exclude<ParsedRunReq['engine'], { kind: 'served' }> };

const IMAGE_EXT = new Set(['.jpg', '.jpeg', '.png', '.webp', '.gif', '.bmp', '.tif', '.tiff']);
const VIDEO_EXT = new Set(['.mp4', '.webm', '.mov', '.avi', '.mkv', '.m4v']);
interface Pause {
  turnIndex: number;
  proposal: DemoProposal;
  resolve(d: { action: 'run' | 'edit' | 'stop'; bbox?: Box; code?: string; keepStepping: boolean }): void;
}

interface LiveRun {
  id: string;
  controller: AbortController;
  stepping: boolean;
  pause: Pause | null;
  branches: Array<DemoBranch & { trajectory?: Trajectory }>;
  done: Promise<void>;
  /** Called when a turn starts (its generate has just been asked for) and when the run ends; see DemoRunOptions. */
  onTurnStart?: () => void;
}

/** Natural order for frame files: frame2 before frame10. */
function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The box a person drew, written back in the model's own convention (normalized < 1, or pixels). */
export function editedCall(original: ParsedCall | null, plan: CallPlan, bbox: Box, fallbackName: string): ParsedCall {
  const [x1, y1, x2, y2] = [Math.min(bbox[0], bbox[2]), Math.min(bbox[1], bbox[3]), Math.max(bbox[0], bbox[2]), Math.max(bbox[1], bbox[3])];
  const clamp = (v: number) => Math.max(0, Math.min(0.999, v));
  let box: number[];
  if (plan.kind === 'crop' && plan.bboxMode === 'absolute') {
    const [w, h] = plan.target.size;
    box = [Math.round(x1 * w), Math.round(y1 * h), Math.round(x2 * w), Math.round(y2 * h)];
  } else {
    box = [x1, y1, x2, y2].map((v) => Math.round(clamp(v) * 1000) / 1000);
  }
  const args = original && original.arguments && typeof original.arguments === 'object' ? { ...(original.arguments as Record<string, unknown>) } : {};
  args['bbox_2d'] = box;
  const name = original?.name ?? fallbackName;
  const json = pyJsonDumps({ name, arguments: args });
  // Keep the whitespace the model put around its JSON so the conversation text stays the model's.
  const raw = original ? (/^\s*/.exec(original.raw)?.[0] ?? '') + json + (/\s*$/.exec(original.raw)?.[0] ?? '') : json;
  return { name, arguments: args, raw };
}

/** What the Demo service is built from (createCore wires it). */
export interface DemoServiceDeps {
  workspace: string;
  media: MediaStore;
  runs: RunStore;
  /**
   * The Demo's scratch space (the workspace's `demo/`): every question's run is written here, out of the run list,
   * stats and Annotate's queue, until the user saves it (`save` moves it into `runs`) or discards it.
   */
  scratch: RunStore;
  models: ModelService;
  /** Image work off the thread that serves requests (native/image's worker ops in the app). */
  imageOps: ImageOps;
  animator: AnimationRenderer;
  /** Re-encode an image as JPEG (large PNGs in HTML exports). */
  toJpeg(bytes: Uint8Array, quality: number): Promise<Uint8Array>;
  /** The bundled example scenes (models/loupe-tiny/examples). */
  examplesDir: string;
  /** Move a scratch run into `runs/` under a unique name (`Workspace.saveDemoRun`, shared with `loupe runs save`). */
  saveDemoRun(id: string, name?: string): Promise<RunManifest>;
  /** Runs PyVision code (native/pysandbox in the app); without it, pyvision demo runs end with a clear error. */
  codeSandbox?: CodeSandboxFactory;
  emit<E extends EventName>(event: E, payload: EventPayload<E>): void;
  setEngineState(next: EngineState): void;
  getEngineState(): EngineState;
  /** A served engine by id (the core's ServedEngineLauncher): its URL, model and key; throws when it is not ready. */
  servedEngine?(id: string): { baseURL: string; model: string; apiKey?: string };
}

export type DemoService = ReturnType<typeof createDemoService>;

/** How a run starts when another service (the pair) starts it. */
export interface DemoRunOptions {
  /** Merged into the manifest's `extra` (a pair's link: `pair: { id, side, other }`). */
  extra?: Record<string, unknown>;
  /** Do not run: the run ends at once with this error (kept, so its column and the saved pair show why). */
  refusal?: string;
  /**
   * Called as each turn starts, in the same tick as that turn's `generate` call (so a local engine's queue already
   * holds it), and once more when the run ends.
   */
  onTurnStart?: () => void;
}

export function createDemoService(d: DemoServiceDeps) {
  const { media, runs, scratch, imageOps, animator, models } = d;
  const live = new Map<string, LiveRun>();
  /** Attention maps computed for a run's branch (`runId/branch` → turn → maps): the HTML export draws the ones looked at. */
  const attentionSeen = new Map<string, Map<number, AttentionMaps>>();

  /** Stop every live run (the core is shutting down). */
  async function dispose(): Promise<void> {
    for (const r of live.values()) {
      r.pause?.resolve({ action: 'stop', keepStepping: false });
      r.controller.abort(new Error('the core is shutting down'));
    }
    await Promise.allSettled([...live.values()].map((r) => r.done));
  }

  /** A question left running or paused in step mode is stopped (its partial trajectory kept) before it is saved or dropped. */
  async function settle(runId: string): Promise<void> {
    const run = live.get(runId);
    if (!run) return;
    run.stepping = false;
    run.pause?.resolve({ action: 'stop', keepStepping: false });
    run.controller.abort(new Error('stopped: the question was saved or discarded'));
    await run.done;
  }

  /** Where a run lives: the scratch space for unsaved Demo questions, else `runs/`. */
  const storeOf = async (runId: string): Promise<RunStore> => ((await scratch.hasRun(runId)) ? scratch : runs);

  async function recordedTrajectory(runId: string, qid: string): Promise<Trajectory> {
    const { records } = await (await storeOf(runId)).readSamples(runId);
    const rec = records.find((r) => r.qid === qid);
    if (!rec) throw new Error(`run ${runId} has no sample "${qid}"`);
    if (!rec.trajectory || rec.trajectory.turns.length === 0) throw new Error(`sample "${qid}" of run ${runId} has no recorded model turns to replay`);
    return rec.trajectory;
  }

  /** Builds the engine for a run; `owned` engines are disposed when the run ends. */
  async function makeEngine(spec: RunReq['engine'], settings: RunReq['settings']): Promise<{ engine: Engine; owned: boolean; release?: () => Promise<void>; label: string; replay: boolean; modelId: string; modelPath?: string }> {
    if (spec.kind === 'replay') {
      const t = await recordedTrajectory(spec.runId, spec.qid);
      const engine = new ScriptedEngine(
        t.turns.map((turn) => ({ text: turn.text, ...(turn.completionTokens !== undefined ? { completionTokens: turn.completionTokens } : {}) })),
        { id: 'replay', model: `replay:${spec.runId}/${spec.qid}` },
      );
      return { engine, owned: true, label: `Replay of ${spec.runId} / ${spec.qid} (recorded text; tools run for real)`, replay: true, modelId: `replay:${spec.runId}/${spec.qid}` };
    }
    if (spec.kind === 'openai') {
      const timeout = settings.turnTimeoutMs ?? 120_000;
      const engine = new OpenAIEngine({ baseURL: spec.baseURL, model: spec.model, ...(spec.apiKey ? { apiKey: spec.apiKey } : {}), timeoutMs: timeout, idleTimeoutMs: timeout, maxRetries: 1, retryBaseMs: 200 });
      return { engine, owned: true, label: `${spec.model} @ ${spec.baseURL}`, replay: false, modelId: spec.model };
    }
    // Held for this run (released when it ends), so a Demo pair's other model becoming the kept one cannot end this
    // one's process mid-run; the same folder twice is one process, whose turns the manager queues in order.
    const held = await models.hold(spec.modelId, spec.device ?? 'cpu', spec.dtype);
    try {
      const { info } = await models.engineFor(spec.modelId, spec.device ?? 'cpu', spec.dtype);
      return { engine: held.engine, owned: false, release: held.release, label: `${held.entry.name} (local, ${info.device ?? 'cpu'})`, replay: false, modelId: spec.modelId, modelPath: held.entry.path };
    } catch (err) {
      await held.release();
      throw err;
    }
  }

  function proposalOf(h: StepHookContext, lists: { initial: MediaRef[]; originals: MediaRef[]; prior: MediaRef[] }): DemoProposal {
    const raw = h.parse.ok ? h.parse.call.raw : h.parse.raw;
    const name = h.parse.ok ? h.parse.call.name : (h.parse.name ?? null);
    const plan = h.plan;
    if (plan.kind === 'error') return { turnIndex: h.turnIndex, name, raw, kind: 'error', error: plan.error.message };
    if (plan.kind === 'frames') return { turnIndex: h.turnIndex, name, raw, kind: 'frames' };
    const sel = plan.target;
    const pos = sel.position ?? sel.index;
    const target = sel.list === 'prior' ? lists.prior[pos] : sel.list === 'raw' ? lists.originals[pos] : sel.list === 'videoFrames' || sel.list === 'originals' ? lists.initial[pos] : pos < lists.initial.length ? lists.initial[pos] : lists.prior[pos - lists.initial.length];
    const [tw, th] = sel.size;
    const norm: Box = plan.bboxMode === 'normalized' ? plan.bboxRaw : [plan.bboxRaw[0] / tw, plan.bboxRaw[1] / th, plan.bboxRaw[2] / tw, plan.bboxRaw[3] / th];
    return {
      turnIndex: h.turnIndex,
      name,
      raw,
      kind: 'crop',
      targetIndex: sel.list === 'prior' ? lists.initial.length + pos : pos,
      ...(target ? { target } : {}),
      bboxMode: plan.bboxMode,
      bboxRaw: plan.bboxRaw,
      bboxNormalized: norm,
      bboxPadded: plan.normalizedBox,
    };
  }

  async function runBranch(run: LiveRun, req: RunReq, dialect: Dialect, branch: DemoBranch, opts: { interactive: boolean; presetEdits?: Map<number, Box> }): Promise<{ trajectory: Trajectory; edits: Map<number, Box>; engineLabel: string; replay: boolean; modelId: string; modelPath?: string }> {
    const edits = new Map<number, Box>();
    let pendingTokens = '';
    let tokenTurn = 0;
    let flushTimer: ReturnType<typeof setTimeout> | null = null;
    const send = (ev: DemoEvent) => d.emit('demo:event', ev);
    const flush = () => {
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = null;
      if (pendingTokens) send({ runId: run.id, branch: branch.id, type: 'tokens', turnIndex: tokenTurn, delta: pendingTokens });
      pendingTokens = '';
    };
    const emit = (ev: DemoEvent) => {
      flush();
      send(ev);
    };
    const lists = { initial: [] as MediaRef[], originals: [] as MediaRef[], prior: [] as MediaRef[] };

    let made: Awaited<ReturnType<typeof makeEngine>>;
    try {
      made = await makeEngine(req.engine, req.settings);
    } catch (err) {
      const message = `the engine could not start: ${errorText(err)}`;
      const t: Trajectory = { dialect: dialect.id, prompt: req.prompt, media: req.media, originals: req.media, isVideo: req.isVideo, question: req.question, turns: [], stopReason: 'engine_error', error: message };
      emit({ runId: run.id, branch: branch.id, type: 'error', message });
      return { trajectory: t, edits, engineLabel: req.engine.kind, replay: req.engine.kind === 'replay', modelId: req.engine.kind };
    }
    const localBusy = req.engine.kind === 'local';
        const s = req.settings;
    const limits = { ...(s.maxCalls ? { maxCalls: s.maxCalls } : {}), ...(s.maxImages ? { maxImages: s.maxImages } : {}), ...(s.tokenBudget ? { tokenBudget: s.tokenBudget } : {}), ...(s.maxTokensPerTurn ? { maxTokensPerTurn: s.maxTokensPerTurn } : {}) };
    let trajectory: Trajectory;
    try {
      trajectory = await runEpisode({
        engine: made.engine,
        dialect,
        imageOps,
        question: req.question,
        media: req.isVideo ? { videoFrames: req.media } : { images: req.media },
        signal: run.controller.signal,
        settings: {
          prompt: req.prompt,
          ...(s.minPixels ? { minPixels: s.minPixels } : {}),
          ...(s.maxPixels ? { maxPixels: s.maxPixels } : {}),
          decoding: { temperature: s.temperature },
          ...(Object.keys(limits).length ? { limits } : {}),
          ...(s.turnTimeoutMs ? { turnTimeoutMs: s.turnTimeoutMs } : {}),
        },
        onStep: (ev) => {
          switch (ev.type) {
            case 'episode-start':
              lists.initial = ev.media;
              lists.originals = ev.originals;
              emit({ runId: run.id, branch: branch.id, type: 'start', media: ev.media, originals: ev.originals, isVideo: ev.isVideo, system: ev.system, userText: ev.userText, engineLabel: made.label, replay: made.replay });
              break;
            case 'turn-start':
              emit({ runId: run.id, branch: branch.id, type: 'turn-start', turnIndex: ev.turnIndex, at: Date.now() });
              run.onTurnStart?.();
              break;
            case 'token':
              if (ev.turnIndex !== tokenTurn) flush();
              tokenTurn = ev.turnIndex;
              pendingTokens += ev.delta;
              flushTimer ??= setTimeout(flush, 30);
              break;
            case 'call-executed':
              for (const p of ev.call.produced) lists.prior.push(p);
              emit({ runId: run.id, branch: branch.id, type: 'call', turnIndex: ev.turnIndex, call: ev.call, observation: ev.observation });
              break;
            case 'turn-end':
              emit({ runId: run.id, branch: branch.id, type: 'turn', turn: ev.turn });
              break;
            default:
              break;
          }
        },
        stepHook: async (h): Promise<StepHookDecision> => {
          const call = h.parse.ok ? h.parse.call : null;
          const preset = opts.presetEdits?.get(h.turnIndex);
          if (preset) {
            edits.set(h.turnIndex, preset);
            return { call: editedCall(call, h.plan, preset, dialect.tools[0] ?? 'crop') };
          }
          if (!opts.interactive || !run.stepping) return undefined;
          const proposal = proposalOf(h, lists);
          const decision = await new Promise<Parameters<Pause['resolve']>[0]>((resolve) => {
            run.pause = { turnIndex: h.turnIndex, proposal, resolve };
            emit({ runId: run.id, branch: branch.id, type: 'paused', proposal });
          });
          run.pause = null;
          run.stepping = decision.keepStepping;
          if (decision.action === 'stop') return { cancel: true };
          if (decision.action === 'edit' && decision.bbox && h.plan.kind === 'crop') {
            edits.set(h.turnIndex, decision.bbox);
            return { call: editedCall(call, h.plan, decision.bbox, dialect.tools[0] ?? 'crop') };
          }
          return undefined;
        },
      });
    } finally {
      flush();
      if (made.owned) await made.engine.dispose().catch(() => undefined);
      await made.release?.().catch(() => undefined);
    }
    if (trajectory.error && trajectory.stopReason !== 'cancelled') {
      emit({ runId: run.id, branch: branch.id, type: 'error', message: trajectory.error });
      if (localBusy && /crash|exited/i.test(trajectory.error)) d.setEngineState({ ...d.getEngineState(), status: 'error', message: trajectory.error });
    }
    return { trajectory, edits, engineLabel: made.label, replay: made.replay, modelId: made.modelId, ...(made.modelPath ? { modelPath: made.modelPath } : {}) };
  }

  /** `edits`: per turn, the box a person drew, or (PyVision) the code they ran instead. */
  async function save(handle: RunHandle, req: RunReq, branch: DemoBranch, t: Trajectory, edits: Map<number, Box | string>): Promise<void> {
    const { calls, toolErrors } = countCalls(t);
    await handle.appendSample({
      qid: branch.id,
      bench: 'demo',
      question: req.question,
      answer: null,
      prediction: t.finalText ?? '',
      score: 0,
      correct: false,
      stop_reason: t.stopReason,
      calls,
      tool_errors: toolErrors,
      ...(t.latencyMs !== undefined ? { latency_ms: t.latencyMs } : {}),
      ...(t.error ? { error: t.error } : {}),
      trajectory: t,
      source: 'demo',
      extra: { branch: branch.id, label: branch.label, ...(branch.forkTurn !== undefined ? { forkTurn: branch.forkTurn } : {}), edits: Object.fromEntries(edits) },
    });
  }

  /**
   * A PyVision branch: the code tool in the episode's sandbox (isolated; see native/pysandbox). Step mode
   * pauses before each code run with the code, which the person may edit; the sandbox facts go to the
   * manifest.
   */
  async function runPyVisionBranch(run: LiveRun, req: RunReq, branch: DemoBranch, opts: { interactive: boolean }): Promise<{ trajectory: Trajectory; edits: Map<number, string>; engineLabel: string; replay: boolean; modelId: string; sandbox?: unknown }> {
    const edits = new Map<number, string>();
    const send = (ev: DemoEvent) => d.emit('demo:event', ev);
    const variant = req.dialect === 'pyvision' ? 'PV' : 'PVRL';
    const codeSandbox = d.codeSandbox;
    if (!codeSandbox) {
      const message = 'this Loupe has no code sandbox wired in, so PyVision code cannot run here';
      send({ runId: run.id, branch: branch.id, type: 'error', message });
      return { trajectory: { dialect: req.dialect, prompt: req.prompt, media: req.media, originals: req.media, isVideo: false, question: req.question, turns: [], stopReason: 'error', error: message }, edits, engineLabel: req.engine.kind, replay: req.engine.kind === 'replay', modelId: req.engine.kind };
    }
    let made: Awaited<ReturnType<typeof makeEngine>>;
    try {
      made = await makeEngine(req.engine, req.settings);
    } catch (err) {
      const message = `the engine could not start: ${errorText(err)}`;
      send({ runId: run.id, branch: branch.id, type: 'error', message });
      return { trajectory: { dialect: req.dialect, prompt: req.prompt, media: req.media, originals: req.media, isVideo: false, question: req.question, turns: [], stopReason: 'engine_error', error: message }, edits, engineLabel: req.engine.kind, replay: req.engine.kind === 'replay', modelId: req.engine.kind };
    }
    try {
      const r = await runPyVisionEpisode({
        engine: made.engine,
        variant,
        question: req.question,
        images: req.media.map((m) => media.pathOf(m.id)),
        imageOps,
        sandbox: codeSandbox,
        signal: run.controller.signal,
        temperature: req.settings.temperature,
        ...(req.settings.maxTokensPerTurn ? { maxTokens: req.settings.maxTokensPerTurn } : {}),
        ...(req.settings.maxCalls ? { maxTurns: req.settings.maxCalls + 1 } : {}),
        onStep: (ev) => {
          if (ev.type === 'episode-start') send({ runId: run.id, branch: branch.id, type: 'start', media: ev.media, originals: ev.media, isVideo: false, system: '', userText: ev.userText, engineLabel: made.label, replay: made.replay });
          else if (ev.type === 'turn-start') {
            send({ runId: run.id, branch: branch.id, type: 'turn-start', turnIndex: ev.turnIndex, at: Date.now() });
            run.onTurnStart?.();
          }
          else if (ev.type === 'token') send({ runId: run.id, branch: branch.id, type: 'tokens', turnIndex: ev.turnIndex, delta: ev.delta });
          else if (ev.type === 'code-executed') send({ runId: run.id, branch: branch.id, type: 'call', turnIndex: ev.turnIndex, call: ev.call, observation: ev.observation });
          else if (ev.type === 'turn-end') send({ runId: run.id, branch: branch.id, type: 'turn', turn: ev.turn });
        },
        stepHook: async (h) => {
          if (!opts.interactive || !run.stepping) return undefined;
          const proposal: DemoProposal = { turnIndex: h.turnIndex, name: 'python', raw: h.code, kind: 'code', code: h.code };
          const decision = await new Promise<Parameters<Pause['resolve']>[0]>((resolve) => {
            run.pause = { turnIndex: h.turnIndex, proposal, resolve };
            send({ runId: run.id, branch: branch.id, type: 'paused', proposal });
          });
          run.pause = null;
          run.stepping = decision.keepStepping;
          if (decision.action === 'stop') return { cancel: true };
          if (decision.action === 'edit' && decision.code !== undefined && decision.code !== h.code) {
            edits.set(h.turnIndex, decision.code);
            return { code: decision.code };
          }
          return undefined;
        },
      });
      if (r.trajectory.error && r.trajectory.stopReason !== 'cancelled') send({ runId: run.id, branch: branch.id, type: 'error', message: r.trajectory.error });
      return { trajectory: r.trajectory, edits, engineLabel: made.label, replay: made.replay, modelId: made.modelId, sandbox: r.sandbox };
    } catch (err) {
      // No isolation here (or the sandbox failed to start): say so, keep the run.
      const message = errorText(err);
      send({ runId: run.id, branch: branch.id, type: 'error', message });
      return { trajectory: { dialect: req.dialect, prompt: req.prompt, media: req.media, originals: req.media, isVideo: false, question: req.question, turns: [], stopReason: 'error', error: message }, edits, engineLabel: made.label, replay: made.replay, modelId: made.modelId };
    } finally {
      if (made.owned) await made.engine.dispose().catch(() => undefined);
      await made.release?.().catch(() => undefined);
    }
  }

  async function execute(run: LiveRun, req: RunReq, handle: RunHandle): Promise<void> {
    if (req.dialect === 'pyvision' || req.dialect === 'pyvision-rl') {
      const b: DemoBranch = { id: 'b0', label: 'Original' };
      run.branches.push(b);
      if (!req.stepMode) run.stepping = false;
      const r = await runPyVisionBranch(run, req, b, { interactive: req.stepMode });
      if (r.edits.size > 0) {
        b.label = 'Edited';
        b.forkTurn = Math.min(...r.edits.keys());
      }
      const m = handle.manifest;
      await handle.writeManifest({ ...m, model: { ...m.model, id: r.modelId }, engine: r.replay ? 'replay' : m.engine, extra: { ...m.extra, engineLabel: r.engineLabel, ...(r.sandbox ? { sandbox: r.sandbox } : {}) } }).catch(() => undefined);
      run.branches[0] = { ...b, trajectory: r.trajectory };
      await save(handle, req, b, r.trajectory, r.edits);
      d.emit('runs:changed', { runId: run.id });
      const listed = () => run.branches.map(({ id, label, forkTurn }) => ({ id, label, ...(forkTurn !== undefined ? { forkTurn } : {}) }));
      if (r.edits.size > 0 && !run.controller.signal.aborted) {
        // As with an edited box: the road not taken, the model's own code in a fresh sandbox, no pauses.
        const orig: DemoBranch = { id: 'b1', label: 'Original' };
        run.branches.push(orig);
        emit0({ runId: run.id, branch: b.id, type: 'done', trajectory: r.trajectory, branches: listed() });
        const r1 = await runPyVisionBranch(run, req, orig, { interactive: false });
        run.branches[1] = { ...orig, trajectory: r1.trajectory };
        await save(handle, req, orig, r1.trajectory, r1.edits);
        d.emit('runs:changed', { runId: run.id });
        emit0({ runId: run.id, branch: orig.id, type: 'done', trajectory: r1.trajectory, branches: listed() });
      } else {
        emit0({ runId: run.id, branch: b.id, type: 'done', trajectory: r.trajectory, branches: listed() });
      }
      return;
    }
    const dialect = getDialect(req.dialect);
    const first: DemoBranch = { id: 'b0', label: 'Original' };
    run.branches.push(first);
    const r0 = await runBranch(run, req, dialect, first, { interactive: req.stepMode });
    if (r0.edits.size > 0) {
      first.label = 'Edited';
      first.forkTurn = Math.min(...r0.edits.keys());
    }
    const m = handle.manifest;
    // A local model is recorded as the sweeps record it: its registered name, folder and content hash.
    const local = r0.modelPath ? { path: r0.modelPath, hash: (await modelHash(r0.modelPath).catch(() => null))?.hash } : {};
    await handle.writeManifest({ ...m, model: { ...m.model, id: r0.modelId, ...local }, engine: r0.replay ? 'replay' : m.engine, extra: { ...m.extra, engineLabel: r0.engineLabel } }).catch(() => undefined);
    run.branches[0] = { ...first, trajectory: r0.trajectory };
    await save(handle, req, first, r0.trajectory, r0.edits);
    d.emit('runs:changed', { runId: run.id });
    if (r0.edits.size > 0 && !run.controller.signal.aborted) {
      // Keep the road not taken: the same question, run as the model asked, no pauses.
      const orig: DemoBranch = { id: 'b1', label: 'Original' };
      run.branches.push(orig);
      emit0({ runId: run.id, branch: first.id, type: 'done', trajectory: r0.trajectory, branches: run.branches.map(({ id, label, forkTurn }) => ({ id, label, ...(forkTurn !== undefined ? { forkTurn } : {}) })) });
      const r1 = await runBranch(run, req, dialect, orig, { interactive: false });
      run.branches[1] = { ...orig, trajectory: r1.trajectory };
      await save(handle, req, orig, r1.trajectory, r1.edits);
      d.emit('runs:changed', { runId: run.id });
      emit0({ runId: run.id, branch: orig.id, type: 'done', trajectory: r1.trajectory, branches: run.branches.map(({ id, label, forkTurn }) => ({ id, label, ...(forkTurn !== undefined ? { forkTurn } : {}) })) });
    } else {
      emit0({ runId: run.id, branch: first.id, type: 'done', trajectory: r0.trajectory, branches: run.branches.map(({ id, label, forkTurn }) => ({ id, label, ...(forkTurn !== undefined ? { forkTurn } : {}) })) });
    }
  }
  const emit0 = (ev: DemoEvent) => d.emit('demo:event', ev);

  /** A run that must not go ahead (a pair's side that repeats the other): its column shows why; the question is kept. */
  async function refuse(run: LiveRun, req: RunReq, handle: RunHandle, message: string): Promise<void> {
    const b: DemoBranch = { id: 'b0', label: 'Original' };
    const trajectory: Trajectory = { dialect: req.dialect, prompt: req.prompt, media: req.media, originals: req.media, isVideo: req.isVideo, question: req.question, turns: [], stopReason: 'error', error: message };
    run.branches.push({ ...b, trajectory });
    emit0({ runId: run.id, branch: b.id, type: 'error', message });
    await save(handle, req, b, trajectory, new Map());
    emit0({ runId: run.id, branch: b.id, type: 'done', trajectory, branches: [b] });
  }
  const hashes = new Map<string, ReturnType<typeof hashModelFolder>>();
  /** Hashed once per folder per core: a talk's tenth question does not re-read the weights. */
  const modelHash = (dir: string) => {
    let h = hashes.get(dir);
    if (!h) hashes.set(dir, (h = hashModelFolder(dir)));
    return h;
  };

  async function branchesOf(runId: string): Promise<Array<DemoBranch & { trajectory: Trajectory }>> {
    const { records } = await (await storeOf(runId)).readSamples(runId);
    const out: Array<DemoBranch & { trajectory: Trajectory }> = [];
    for (const r of records) {
      if (!r.trajectory) continue;
      const ex = r.extra ?? {};
      const forkTurn = typeof ex['forkTurn'] === 'number' ? ex['forkTurn'] : undefined;
      out.push({ id: r.qid, label: typeof ex['label'] === 'string' ? ex['label'] : r.qid, ...(forkTurn !== undefined ? { forkTurn } : {}), trajectory: r.trajectory });
    }
    return out;
  }

  /** A trajectory as one self-contained HTML page (every image inlined). */
  async function trajectoryPage(runId: string, branchLabel: string, t: Trajectory, attention?: ReadonlyMap<number, AttentionMaps>): Promise<string> {
    const dataUrls = new Map<string, string>();
    for (const id of trajectoryMediaIds(t)) {
      const bytes = await media.read(id).catch(() => null);
      if (!bytes) continue;
      const ext = path.extname(id).slice(1);
      // Derived images are lossless PNGs (MBs each for a 2K photo); inline large ones as JPEG q90 so
      // the page stays mailable (11 MB → 0.85 MB on the bench trajectory, tests/bench/demo-export.bench.ts). The workspace keeps the originals.
      if (ext === 'png' && bytes.length > 300_000) {
        const jpeg = await d.toJpeg(bytes, 90);
        dataUrls.set(id, `data:image/jpeg;base64,${Buffer.from(jpeg).toString('base64')}`);
        continue;
      }
      const mime = ext === 'jpg' || ext === 'jpeg' ? 'image/jpeg' : `image/${ext}`;
      dataUrls.set(id, `data:${mime};base64,${bytes.toString('base64')}`);
    }
    return renderTrajectoryHtml(t, { dataUrls, source: `run ${runId}, branch ${branchLabel}; large images inlined as JPEG q90`, ...(attention ? { attention } : {}) });
  }

  async function importPaths(paths: string[]): Promise<{ media: MediaRef[]; isVideo: boolean }> {
    const out: MediaRef[] = [];
    let isVideo = false;
    for (const p of paths) {
      const abs = path.resolve(p);
      let st: import('node:fs').Stats;
      try {
        st = await fsp.stat(abs);
      } catch {
        throw new Error(`${abs}: no such file or folder`);
      }
      if (st.isDirectory()) {
        const names = (await fsp.readdir(abs)).filter((n) => IMAGE_EXT.has(path.extname(n).toLowerCase())).sort(naturalCompare);
        if (names.length === 0) throw new Error(`${abs}: the folder holds no image files (.jpg, .png, .webp) to use as frames`);
        if (names.length > 512) throw new Error(`${abs}: ${names.length} frames is too many (at most 512); pick a sampled subset`);
        for (const n of names) out.push(await imageOps.importFile(path.join(abs, n)));
        isVideo = true;
        continue;
      }
      const ext = path.extname(abs).toLowerCase();
      if (VIDEO_EXT.has(ext)) throw new Error(`${abs}: video files are not decoded in this build (no ffmpeg); extract frames to a folder (e.g. \`ffmpeg -i in.mp4 -vf fps=1 frames/%03d.jpg\`) and drop the folder`);
      out.push(await imageOps.importFile(abs));
    }
    if (paths.length > 1 && !isVideo) isVideo = false;
    return { media: out, isVideo };
  }

  const api = {
    dispose,
    importMedia: async ({ paths }: { paths: string[] }) => importPaths(paths),

    examples: async (): Promise<DemoExample[]> => {
      const dir = d.examplesDir;
      const text = await fsp.readFile(path.join(dir, 'samples.jsonl'), 'utf8').catch(() => '');
      const out: DemoExample[] = [];
      for (const line of text.split('\n').filter(Boolean)) {
        const s = JSON.parse(line) as { qid: string; category: string; question: string; answer: string; image?: string };
        if (!s.image) continue;
        const { media } = await importPaths([path.join(dir, s.image)]);
        out.push({ id: s.qid, title: `${s.category}: ${s.question}`, question: s.question, answer: s.answer, modelId: 'loupe-tiny', media });
      }
      return out;
    },

    replaySources: async (): Promise<ReplaySource[]> => {
      const out: ReplaySource[] = [];
      // The newest runs only: a workspace of large sweeps must not make the Demo page read every sample.
      for (const listing of (await runs.listRuns()).slice(0, 30)) {
        if (!listing.manifest || out.length >= 200) continue;
        const { records } = await runs.readSamples(listing.id).catch(() => ({ records: [] as never[] }));
        for (const r of records.slice(0, 200)) {
          const t = r.trajectory;
          if (!t || t.turns.length === 0) continue;
          const shown = t.originals.length ? t.originals : t.media;
          const present: MediaRef[] = [];
          for (const m of shown) if (await media.has(m.id).catch(() => false)) present.push(m);
          const d = (() => {
            try {
              return getDialect(t.dialect);
            } catch {
              return null;
            }
          })();
          const calls = t.turns.filter((x) => x.call || (d ? d.isToolTurn(x.text) : false)).length;
          out.push({ runId: listing.id, ...(listing.manifest.name ? { runName: listing.manifest.name } : {}), qid: r.qid, question: r.question, dialect: t.dialect, calls, turns: t.turns.length, media: present.length === shown.length ? present : [], isVideo: t.isVideo });
        }
      }
      return out;
    },

    run: async (input: DemoRunReq, opts: DemoRunOptions = {}): Promise<{ runId: string }> => {
      const parsed = DemoRunReqSchema.parse(input);
      let engine: RunReq['engine'];
      if (parsed.engine.kind === 'served') {
        if (!d.servedEngine) throw new Error('served engines are not available in this door');
        const s = d.servedEngine(parsed.engine.id);
        engine = { kind: 'openai', baseURL: s.baseURL, model: s.model, ...(s.apiKey ? { apiKey: s.apiKey } : {}) };
      } else engine = parsed.engine;
      const req: RunReq = { ...parsed, engine };
      for (const m of req.media) if (!(await media.has(m.id).catch(() => false))) throw new Error(`media ${m.id} is not in this workspace; import the image again`);
      if (req.dialect !== 'pyvision' && req.dialect !== 'pyvision-rl') getDialect(req.dialect);
      const handle = await scratch.createRun({
        kind: 'demo',
        name: `demo ${req.question.slice(0, 30)}`,
        model: { id: req.engine.kind === 'local' ? req.engine.modelId : req.engine.kind === 'openai' ? req.engine.model : `replay:${req.engine.runId}/${req.engine.qid}` },
        engine: req.engine.kind,
        dialect: req.dialect,
        prompt: req.prompt,
        ...(req.settings.minPixels ? { minPixels: req.settings.minPixels } : {}),
        ...(req.settings.maxPixels ? { maxPixels: req.settings.maxPixels } : {}),
        decoding: { temperature: req.settings.temperature },
        limits: { ...(req.settings.maxCalls ? { maxCalls: req.settings.maxCalls } : {}), ...(req.settings.maxImages ? { maxImages: req.settings.maxImages } : {}), ...(req.settings.tokenBudget ? { tokenBudget: req.settings.tokenBudget } : {}) },
        extra: { stepMode: req.stepMode, appVersion: APP_VERSION, question: req.question, ...opts.extra },
      });
      const run: LiveRun = { id: handle.id, controller: new AbortController(), stepping: req.stepMode, pause: null, branches: [], done: Promise.resolve(), ...(opts.onTurnStart ? { onTurnStart: opts.onTurnStart } : {}) };
      live.set(run.id, run);
      run.done = (opts.refusal !== undefined ? refuse(run, req, handle, opts.refusal) : execute(run, req, handle))
        .catch((err: unknown) => {
          d.emit('demo:event', { runId: run.id, branch: 'b0', type: 'error', message: `the run failed: ${errorText(err)}` });
        })
        .finally(async () => {
          await handle.close().catch(() => undefined);
          live.delete(run.id);
          run.onTurnStart?.();
        });
      return { runId: run.id };
    },

    stop: ({ runId }: { runId: string }) => {
      const run = live.get(runId);
      if (!run) return { stopped: false };
      run.stepping = false;
      run.pause?.resolve({ action: 'stop', keepStepping: false });
      run.controller.abort(new Error('stopped by the user'));
      return { stopped: true };
    },

    continue: ({ runId, turnIndex, action, bbox, code, keepStepping }: { runId: string; turnIndex: number; action: 'run' | 'edit' | 'stop'; bbox?: Box | undefined; code?: string | undefined; keepStepping: boolean }) => {
      const run = live.get(runId);
      if (!run?.pause || run.pause.turnIndex !== turnIndex) return { ok: false };
      if (action === 'edit' && run.pause.proposal.kind === 'code') {
        if (code === undefined) throw new Error('action "edit" of a code call needs code: the Python to run instead');
        run.pause.resolve({ action, code, keepStepping });
        return { ok: true };
      }
      if (action === 'edit') {
        if (!bbox) throw new Error('action "edit" needs bbox: [x1, y1, x2, y2] normalized to the target image');
        if (run.pause.proposal.kind !== 'crop') throw new Error(`the paused call of turn ${turnIndex} is not a crop; only crops can be edited`);
        if (bbox.some((v) => !Number.isFinite(v) || v < 0 || v > 1)) throw new Error(`bbox ${JSON.stringify(bbox)}: every value must be within [0, 1]`);
        if (Math.abs(bbox[2] - bbox[0]) < 0.005 || Math.abs(bbox[3] - bbox[1]) < 0.005) throw new Error(`bbox ${JSON.stringify(bbox)} is empty: draw a box with some width and height`);
      }
      run.pause.resolve({ action, ...(bbox ? { bbox } : {}), keepStepping });
      return { ok: true };
    },

    attention: async ({ runId, branch, turnIndex }: { runId: string; branch: string; turnIndex: number }): Promise<{ maps?: AttentionMaps; unavailable?: string }> => {
      const store = await storeOf(runId);
      const manifest = await store.readManifest(runId);
      const run = live.get(runId);
      const t = run?.branches.find((b) => b.id === branch)?.trajectory ?? (await branchesOf(runId)).find((b) => b.id === branch)?.trajectory;
      if (!t) throw new Error(`run ${runId} has no finished branch "${branch}"`);
      const turn = t.turns[turnIndex];
      if (!turn?.call || turn.call.targetIndex === undefined || turn.call.name === 'python' || turn.call.name === 'select_frames') return { unavailable: `turn ${turnIndex + 1} has no crop box to take attention from` };
      if (manifest.engine === 'openai') return { unavailable: ATTENTION_UNAVAILABLE };
      if (manifest.engine === 'replay') return { unavailable: 'unavailable: a replay re-runs recorded text, with no model to ask' };
      if (manifest.engine !== 'local') return { unavailable: `unavailable: the run's engine (${manifest.engine}) is not a local ONNX model` };
      if (manifest.dialect === 'pyvision' || manifest.dialect === 'pyvision-rl') return { unavailable: 'unavailable: PyVision turns write code, not a crop box' };
      let request;
      try {
        request = attentionRequestFor(t, turnIndex, getDialect(manifest.dialect), (m) => imageOps.pathOf(m), {
          ...(manifest.minPixels ? { minPixels: manifest.minPixels } : {}),
          ...(manifest.maxPixels ? { maxPixels: manifest.maxPixels } : {}),
        });
      } catch (e) {
        if (e instanceof AttentionRequestError) return { unavailable: `unavailable: ${e.message}` };
        throw e;
      }
      const { engine } = await models.engineFor(manifest.model.id, 'cpu');
      if (!engine.attention) return { unavailable: 'unavailable: this engine does not report attention' };
      try {
        const r = await engine.attention(request);
        const maps: AttentionMaps = { turnIndex, imageIndex: request.imageIndex, grid: r.grid, imageSize: r.imageSize, layers: r.layers, imageMass: r.imageMass, queryText: r.queryText, queryTokens: r.queryTokens };
        const seen = attentionSeen.get(`${runId}/${branch}`) ?? new Map<number, AttentionMaps>();
        seen.set(turnIndex, maps);
        attentionSeen.set(`${runId}/${branch}`, seen);
        return { maps };
      } catch (e) {
        if (e instanceof EngineError && e.kind === 'unavailable') return { unavailable: `unavailable: ${e.message}` };
        throw e;
      }
    },

    get: async ({ runId }: { runId: string }) => {
      const run = live.get(runId);
      const stored = await branchesOf(runId);
      if (run) for (const b of run.branches) if (b.trajectory && !stored.some((s) => s.id === b.id)) stored.push({ id: b.id, label: b.label, ...(b.forkTurn !== undefined ? { forkTurn: b.forkTurn } : {}), trajectory: b.trajectory });
      return { runId, branches: stored };
    },

    /** The unsaved Demo questions, newest first. */
    scratchList: async (): Promise<DemoScratchRun[]> => {
      const out: DemoScratchRun[] = [];
      for (const r of await scratch.listRuns()) {
        if (!r.manifest) continue;
        const { records } = await scratch.readSamples(r.id).catch(() => ({ records: [] as SampleRecord[] }));
        const first = records[0];
        out.push({
          id: r.id,
          name: r.manifest.name ?? r.id,
          createdAt: r.manifest.createdAt,
          model: r.manifest.model.id,
          // Asked but not yet answered (paused before its first sample): the question the manifest keeps.
          question: first?.question ?? (typeof r.manifest.extra?.['question'] === 'string' ? r.manifest.extra['question'] : ''),
          branches: records.length,
          turns: first?.trajectory?.turns.length ?? 0,
          live: live.has(r.id),
        });
      }
      return out;
    },

    /** Keep a Demo question: it becomes a run in `runs/` (same id and files), shown on the Runs page. */
    save: async ({ runId, name }: { runId: string; name?: string | undefined }): Promise<{ runId: string; name: string }> => {
      await settle(runId);
      const m = await d.saveDemoRun(runId, name);
      return { runId, name: m.name ?? runId };
    },

    /** Drop an unsaved Demo question for good (its media stay: they are shared, content-addressed). */
    discard: async ({ runId }: { runId: string }): Promise<{ discarded: boolean }> => {
      await settle(runId);
      if (!(await scratch.hasRun(runId))) throw new Error(`run ${runId} is not an unsaved Demo question`);
      await scratch.removeRun(runId);
      return { discarded: true };
    },

    export: async ({ runId, branch, format }: { runId: string; branch?: string | undefined; format: 'html' | 'webp' | 'gif' }): Promise<ExportResult> => {
      const all = await branchesOf(runId);
      const b = branch ? all.find((x) => x.id === branch) : all[0];
      if (!b) throw new Error(`run ${runId} has no ${branch ? `branch "${branch}"` : 'finished trajectory'} to export`);
      const t = b.trajectory;
      const dir = path.join(d.workspace, 'exports');
      await fsp.mkdir(dir, { recursive: true });
      const file = containedPath(dir, `${safeFileName(`${runId}-${b.id}`)}.${format}`); // a sample id may hold ../
      if (format === 'html') {
        const seen = attentionSeen.get(`${runId}/${b.id}`);
        const html = await trajectoryPage(runId, b.label, t, seen);
        await fsp.writeFile(file, html);
        return { format, path: file, name: path.basename(file), bytes: Buffer.byteLength(html) };
      }
      const frames = buildStoryboard(t);
      const out = await animator.render(frames, format);
      await fsp.writeFile(file, out.bytes);
      const put = await media.put(out.bytes, format);
      return { format, path: file, name: path.basename(file), bytes: out.bytes.length, frames: out.frames, mediaId: put.id };
    },
  };
  return { ...api, ...createDemoPairs({ workspace: d.workspace, media, runs, scratch, run: api.run, save: api.save, get: api.get, trajectoryPage }) };
}

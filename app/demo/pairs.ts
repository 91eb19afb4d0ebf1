/**
 * Demo pairs: two configurations (two models, two prompts, two dialects, two checkpoints) run at once on the same
 * input. Each side is an ordinary Demo run (its own events, step mode, branches and files), started by the Demo
 * service; the pair is only a link, `extra.pair = { id, side, label }` in both manifests, so the two saved
 * trajectories find each other again (Compare, the pair export) after a restart.
 *
 * Two sides on the same local model share one engine process: the engine manager queues their turns in arrival
 * order (one generate at a time per loaded model), and B starts once A's first turn is queued, so the columns take
 * turns, A's turn then B's, rather than one waiting for the other's whole episode.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { DemoPair, DemoRunPairReq, DemoRunReq, ExportResult, Trajectory } from '../contract';
import { DemoRunPairReqSchema } from '../contract';
import type { MediaStore, RunStore } from '../workspace';
import { containedPath } from '../workspace/contain';
import { renderPairHtml } from '../export';
import type { DemoRunOptions } from './service';

type Side = ReturnType<typeof DemoRunPairReqSchema.parse>['a'];

/** What the pair needs from the Demo service. */
export interface DemoPairDeps {
  workspace: string;
  media: MediaStore;
  runs: RunStore;
  scratch: RunStore;
  run(req: DemoRunReq, opts: DemoRunOptions): Promise<{ runId: string }>;
  save(req: { runId: string; name?: string }): Promise<{ runId: string; name: string }>;
  get(req: { runId: string }): Promise<{ branches: Array<{ id: string; label: string; trajectory: Trajectory }> }>;
  trajectoryPage(runId: string, branchLabel: string, t: Trajectory): Promise<string>;
}

/** A side in a few words: what a column's heading and the saved run's name say. */
export function sideLabel(s: Side): string {
  const who = s.engine.kind === 'local' ? s.engine.modelId : s.engine.kind === 'openai' ? s.engine.model : s.engine.kind === 'served' ? `served ${s.engine.id}` : `replay ${s.engine.runId}/${s.engine.qid}`;
  return [who, s.prompt, ...(s.dialect !== 'pixel-reasoner' ? [s.dialect] : [])].join(' · ');
}

/** The same engine, dialect and prompt: nothing to compare (devices and dtypes count: a CPU/GPU pair is a comparison). */
function sameConfig(a: Side, b: Side): boolean {
  return JSON.stringify([a.engine, a.dialect, a.prompt]) === JSON.stringify([b.engine, b.dialect, b.prompt]);
}

interface PairLink {
  id: string;
  side: 'A' | 'B';
  label: string;
}

function linkOf(extra: Record<string, unknown> | undefined): PairLink | null {
  const p = extra?.['pair'];
  if (!p || typeof p !== 'object') return null;
  const { id, side, label } = p as Record<string, unknown>;
  return typeof id === 'string' && (side === 'A' || side === 'B') && typeof label === 'string' ? { id, side, label } : null;
}

export function createDemoPairs(d: DemoPairDeps) {
  /** Find a pair's two runs from their manifests (scratch first: an unsaved pair; then `runs/`). */
  async function find(pairId: string): Promise<DemoPair> {
    type Found = { id: string; label: string; saved: boolean };
    let a = null as Found | null;
    let b = null as Found | null;
    for (const [store, saved] of [[d.scratch, false], [d.runs, true]] as const) {
      for (const r of await store.listRuns()) {
        const link = linkOf(r.manifest?.extra);
        if (!link || link.id !== pairId) continue;
        if (link.side === 'A') a ??= { id: r.id, label: link.label, saved };
        else b ??= { id: r.id, label: link.label, saved };
      }
    }
    if (!a || !b) throw new Error(`no Demo pair "${pairId}" in this workspace${a || b ? ' (only one of its runs is here)' : ''}`);
    return { pairId, a: a.id, b: b.id, saved: a.saved && b.saved, labels: [a.label, b.label] };
  }

  /** The first branch (the run as the model went, or as edited) of a side. */
  async function trajectoryOf(runId: string): Promise<{ label: string; trajectory: Trajectory } | null> {
    const { branches } = await d.get({ runId });
    return branches[0] ?? null;
  }

  return {
    runPair: async (input: DemoRunPairReq): Promise<DemoPair> => {
      const req = DemoRunPairReqSchema.parse(input);
      // The shared input is checked once: a missing image fails the pair before either side starts.
      for (const m of req.media) if (!(await d.media.has(m.id).catch(() => false))) throw new Error(`media ${m.id} is not in this workspace; import the image again`);
      const pairId = `pair-${new Date().toISOString().replace(/[-:.TZ]/g, '').slice(0, 14)}-${randomUUID().slice(0, 8)}`;
      const labels: [string, string] = [sideLabel(req.a), sideLabel(req.b)];
      const shared = { media: req.media, isVideo: req.isVideo, question: req.question, settings: req.settings, stepMode: req.stepMode };
      const start = (side: Side, name: 'A' | 'B', label: string, more: Omit<DemoRunOptions, 'extra'> = {}) =>
        d.run({ ...shared, engine: side.engine, dialect: side.dialect, prompt: side.prompt }, { extra: { pair: { id: pairId, side: name, label } }, ...more });
      // Two local sides may share one engine process, whose turns are queued in arrival order. B starts once A's first
      // turn is queued (or A ended), so the order is fixed: A's turn, B's turn, A's next… Without it B's set-up could
      // win the race and a one-turn side (notool) would answer before the other side showed anything.
      let aQueued: () => void = () => undefined;
      const aFirstTurn = new Promise<void>((resolve) => (aQueued = resolve));
      const a = await start(req.a, 'A', labels[0], { onTurnStart: () => aQueued() });
      if (req.a.engine.kind === 'local' && req.b.engine.kind === 'local') await aFirstTurn;
      const b = await start(req.b, 'B', labels[1], sameConfig(req.a, req.b) ? { refusal: `B repeats A (${labels[0]}): change B's model, prompt, dialect or checkpoint to compare two configurations` } : {});
      return { pairId, a: a.runId, b: b.runId, saved: false, labels };
    },

    pair: ({ pairId }: { pairId: string }) => find(pairId),

    savePair: async ({ pairId }: { pairId: string }): Promise<DemoPair> => {
      const p = await find(pairId);
      if (p.saved) return p;
      const question = (await trajectoryOf(p.a).catch(() => null))?.trajectory.question ?? '';
      const short = question.length > 40 ? `${question.slice(0, 39)}…` : question;
      // One after the other: each save stops its side first (a paused step keeps what it did).
      for (const [side, runId, label] of [['A', p.a, p.labels[0]], ['B', p.b, p.labels[1]]] as const) {
        if (await d.scratch.hasRun(runId)) await d.save({ runId, name: `${short} · ${side}: ${label}` });
      }
      return { ...p, saved: true };
    },

    exportPair: async ({ pairId }: { pairId: string }): Promise<ExportResult> => {
      const p = await find(pairId);
      const [ta, tb] = await Promise.all([trajectoryOf(p.a), trajectoryOf(p.b)]);
      if (!ta || !tb) throw new Error(`pair ${pairId}: ${!ta ? 'A' : 'B'} has no finished trajectory to export yet`);
      const column = async (side: 'A' | 'B', runId: string, label: string, b: { label: string; trajectory: Trajectory }) => {
        const t = b.trajectory;
        return { side, label, page: await d.trajectoryPage(runId, b.label, t), ...(t.finalText !== undefined ? { answer: t.finalText } : {}), ...(t.latencyMs !== undefined ? { latencyMs: t.latencyMs } : {}), ...(t.error ? { error: t.error } : {}) };
      };
      const html = renderPairHtml(ta.trajectory.question, [await column('A', p.a, p.labels[0], ta), await column('B', p.b, p.labels[1], tb)], `pair ${pairId}: A = run ${p.a}, B = run ${p.b}; large images inlined as JPEG q90`);
      const dir = path.join(d.workspace, 'exports');
      await fsp.mkdir(dir, { recursive: true });
      const file = containedPath(dir, `${pairId}.html`);
      await fsp.writeFile(file, html);
      return { format: 'html', path: file, name: path.basename(file), bytes: Buffer.byteLength(html) };
    },
  };
}

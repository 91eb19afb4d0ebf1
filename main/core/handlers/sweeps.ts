import path from 'node:path';
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { SweepProgress, sweepsCalls } from '../../../app/contract';
import { expandPlan, resolveModelRef } from '../../../app/sweeps/plan';
import { ModelRegistry } from '../../../app/engines/modelRegistry';
import { resourcesRoot } from '../../../app/paths';
import { runSweep, RunSetupError } from '../../../app/sweeps/runner';
import { codeSandboxFactory, engineFactory } from '../wiring';
import type { CoreContext } from '../context';
import { clusterEvalArgs, type ClusterSweepService } from '../../../app/sweeps/cluster/service';

/**
 * Sweeps started from the UI run in the core process through the same runner as `loupe eval`, so the
 * run files are identical and a sweep started here resumes with `loupe eval --run NAME` and back.
 */
export function sweepsHandlers(ctx: CoreContext, cluster: ClusterSweepService): DomainHandlers<typeof sweepsCalls> {
  const ws = ctx.ws;
  const active = new Map<string, { progress: SweepProgress; ctrl: AbortController }>();
  const emit = (p: SweepProgress) => ctx.emit('sweeps:progress', p);
  ctx.disposers.push(() => {
    for (const a of active.values()) a.ctrl.abort(new Error('core shutting down'));
  });

  return {
    'sweeps:start': async (req) => {
      // `served:<id>`: a served engine the core started, used as the OpenAI-compatible server it is (its key stays here).
      const served = req.model.startsWith('served:') ? ctx.servedEngine(req.model.slice('served:'.length)) : null;
      const ref = served ? `${served.baseURL}#${served.model}` : req.model;
      const model = await resolveModelRef(ref, new ModelRegistry(ctx.workspace, { bundledRoot: resourcesRoot() }), ctx.workspace);
      const runs = expandPlan({
        models: [model],
        benchmarks: [{ id: req.bench, data: path.resolve(req.data) }],
        settings: { dialect: [req.dialect], prompt: req.dialect === 'pyvision' || req.dialect === 'pyvision-rl' ? ['vcot'] : req.prompts, ...(req.limit !== undefined ? { limit: req.limit } : {}), ...(req.maxTokens !== undefined ? { maxTokensPerTurn: req.maxTokens } : {}) },
        ...(req.name ? { name: req.name } : {}),
      });
      const prefs = await ctx.settings();
      const ctrl = new AbortController();
      for (const r of runs) {
        const progress: SweepProgress = { runId: r.id, name: r.name, state: 'starting', done: 0, total: 0, correct: 0, samplesPerSec: null, etaMs: null };
        active.set(r.id, { progress, ctrl });
        emit(progress);
      }
      const update = (runId: string, patch: Partial<SweepProgress>) => {
        const a = active.get(runId);
        if (!a) return;
        a.progress = { ...a.progress, ...patch };
        emit(a.progress);
      };
      // The sweep runs in the background; its progress and outcome arrive as events.
      void runSweep(runs, {
        store: ws.runs,
        imageOps: ctx.imageOps,
        // Local models come from the core's engine manager: a model the Demo holds is shared, not loaded again.
        // Local models load on the Settings page's device and threads.
        engines: engineFactory({ manager: ctx.engines, ...(served?.apiKey ? { apiKey: served.apiKey } : {}), device: prefs.device, ...(prefs.threads ? { threads: prefs.threads } : {}), ...(req.concurrency ? { concurrency: req.concurrency } : {}) }),
        signal: ctrl.signal,
        // PyVision runs: each sample's code in its own sandbox process (refused before anything is written where none can start).
        codeSandbox: await codeSandboxFactory(),
        onEvent: (e) => {
          if (e.type === 'run-start') update(e.runId, { state: 'running', done: e.done, total: e.total });
          else if (e.type === 'sample') {
            const prev = active.get(e.runId)?.progress.correct ?? 0;
            update(e.runId, { done: e.done, total: e.total, correct: prev + (e.correct ? 1 : 0), samplesPerSec: e.samplesPerSec, etaMs: e.etaMs });
            ctx.emit('runs:changed', { runId: e.runId });
          } else if (e.type === 'run-end') {
            update(e.runId, { state: e.error ? 'error' : e.cancelled ? 'cancelled' : 'done', done: e.done, total: e.total, ...(e.error ? { error: e.error } : {}) });
            ctx.emit('runs:changed', { runId: e.runId });
          }
        },
      })
        .catch((err: unknown) => {
          const message = err instanceof RunSetupError || err instanceof Error ? err.message : String(err);
          for (const r of runs) update(r.id, { state: 'error', error: message });
        });
      return { runIds: runs.map((r) => r.id) };
    },
    'sweeps:cancel': ({ runId }) => {
      const a = active.get(runId);
      if (!a || a.progress.state === 'done' || a.progress.state === 'error') return { cancelled: false };
      a.ctrl.abort(new Error('cancelled from the UI'));
      return { cancelled: true };
    },
    'sweeps:list': () => [...[...active.values()].map((a) => a.progress), ...cluster.list()],
    'sweeps:clusterStart': (req) =>
      cluster.start({
        connector: req.connector,
        runName: req.name,
        shards: req.shards,
        evalArgs: clusterEvalArgs(req),
        ...(req.loupe ? { loupe: req.loupe } : {}),
        ...(req.remoteWorkspace ? { remoteWorkspace: req.remoteWorkspace } : {}),
        ...(req.cwd ? { cwd: req.cwd } : {}),
        ...(req.cpus ? { cpus: req.cpus } : {}),
      }),
    'sweeps:clusterCancel': async ({ runId }) => ({ cancelled: await cluster.cancel(runId) }),
  };
}

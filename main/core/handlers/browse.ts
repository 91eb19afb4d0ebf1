import path from 'node:path';
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { browseCalls, GroupStat } from '../../../app/contract';
import { attachRunImages } from '../../../app/importers/attach';
import type { RunIndexService } from '../../../app/browse/runIndex';
import { QueryError, SliceStore } from '../../../app/browse/query';
import { pairedCompare } from '../../../app/sweeps/stats';
import { indexStats, type IndexGroupStat } from '../../../app/browse/query/indexStats';
import type { CoreContext } from '../context';
import type { LabelService } from '../../../app/labels';
import { exportRunData } from '../../../app/training/exportRuns';

const fin = (x: number): number | null => (Number.isFinite(x) ? x : null);

/**
 * The sample index of some runs with the label column current: labels change in the label service, and the
 * index (cached per run set) takes the new union of labels per sample only when the service's version moved.
 */
export function labelledIndex(runIndex: RunIndexService, labels: LabelService) {
  const seen = new WeakMap<object, { version: number; size: number }>();
  return async (runIds: readonly string[]) => {
    const entry = await runIndex.index(runIds);
    await labels.ready();
    const s = seen.get(entry.index);
    // Re-apply when the labels changed or the index grew (a live run's new rows).
    if (!s || s.version !== labels.version || s.size !== entry.index.size) {
      entry.index.applyLabels(labels.bySample());
      seen.set(entry.index, { version: labels.version, size: entry.index.size });
    }
    return entry;
  };
}

/** A stats request for some runs was overtaken by a newer one for the same runs (a changed filter). */
export class SupersededError extends Error {
  constructor() {
    super('superseded by a newer statistics request for the same runs');
    this.name = 'SupersededError';
  }
}

/** Handlers of the Runs, Sample and Compare domain. */
export function browseHandlers(ctx: CoreContext, deps: { runIndex: RunIndexService; withLabels: ReturnType<typeof labelledIndex> }): DomainHandlers<typeof browseCalls> {
  const store = ctx.ws.runs;
  const service = deps.runIndex;
  const withLabels = deps.withLabels;

  const slices = new SliceStore(ctx.workspace);
  const sliceViews = async () => (await slices.list()).map((x) => ({ name: x.name, query: x.query, updatedAt: x.updatedAt }));

  // The newest stats request per run set: an older one still waiting (for the index, or its turn) gives up.
  const statsGeneration = new Map<string, number>();
  const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));

  return {
    'runs:list': async () => {
      const listed = await store.listRuns();
      return Promise.all(
        listed.map(async (r) => {
          if (!r.manifest) return { id: r.id, manifest: null, error: r.error, samples: 0, correct: 0, unreadable: 0 };
          const t = await service.table(r.id);
          const correct = t.index.bool('correct');
          let k = 0;
          for (let i = 0; i < t.index.size; i++) k += correct[i]!;
          return { id: r.id, manifest: r.manifest, samples: t.index.size, correct: k, unreadable: t.unreadable };
        }),
      );
    },
    'runs:rename': ({ runId, name }) => store.renameRun(runId, name),
    'runs:tag': ({ runId, tags }) => store.setTags(runId, tags),
    'runs:trash': async ({ runId }) => {
      await store.trashRun(runId);
      return {};
    },
    'runs:trashList': async () => (await store.listTrash()).map((r) => ({ id: r.id, manifest: r.manifest, ...(r.error ? { error: r.error } : {}) })),
    'runs:restore': async ({ runId }) => {
      await store.restoreRun(runId);
      return {};
    },
    'runs:emptyTrash': async () => ({ deleted: await store.emptyTrash() }),
    'runs:locateImages': async ({ runId, folder }) => {
      // The core's image ops (a worker thread, storing into this workspace's media).
      const r = await attachRunImages(store, runId, folder, ctx.imageOps);
      return { attached: r.attached, missing: r.missing.length, folderImages: r.folderImages };
    },
    'samples:query': async (req) => {
      const t0 = performance.now();
      const { index } = await withLabels(req.runIds);
      let ids: Int32Array;
      try {
        ids = index.select({ query: req.query, search: req.search, sort: req.sort });
      } catch (err) {
        if (err instanceof QueryError) {
          return { total: 0, rows: [], problem: { message: err.message, column: err.column }, ms: performance.now() - t0 };
        }
        throw err;
      }
      const rows = [];
      const end = Math.min(ids.length, req.offset + req.limit);
      for (let i = req.offset; i < end; i++) {
        const r = index.row(ids[i]!);
        rows.push({ ...r, labels: [...r.labels] });
      }
      return { total: ids.length, rows, ms: performance.now() - t0 };
    },
    'samples:get': ({ runId, qid }) => service.get(runId, qid),
    'runs:stats': async ({ runIds, query }) => {
      const key = [...new Set(runIds)].sort().join('\u0000');
      const gen = (statsGeneration.get(key) ?? 0) + 1;
      statsGeneration.set(key, gen);
      const { index } = await withLabels(runIds);
      // Let a newer request for the same runs (the filter changed again) take over before any work is done.
      await yieldNow();
      if (statsGeneration.get(key) !== gen) throw new SupersededError();
      statsGeneration.delete(key); // what follows is synchronous: no request can overtake it now
      const s = indexStats(index, query.trim() ? index.filter(query) : undefined);
      const toGroup = (g: IndexGroupStat): GroupStat => ({ key: g.key, n: g.n, correct: g.correct, accuracy: fin(g.accuracy), ci: { lo: fin(g.wilson.lo), hi: fin(g.wilson.hi) }, rapr: fin(g.rapr), callsPerSample: fin(g.callsPerSample), toolErrorRate: fin(g.toolErrorRate) });
      const tu = s.toolUse;
      return {
        overall: toGroup(s.overall),
        byBench: s.byBench.map(toGroup),
        byCategory: s.byCategory.map(toGroup),
        toolUse: { n: tu.n, rapr: fin(tu.rapr), callsPerSample: fin(tu.callsPerSample), toolErrorRate: fin(tu.toolErrorRate), stopReasons: tu.stopReasons, callHistogram: [...tu.callHistogram] },
        withTool: { n: s.withTool.n, accuracy: fin(s.withTool.accuracy), ci: { lo: fin(s.withTool.wilson.lo), hi: fin(s.withTool.wilson.hi) } },
        withoutTool: { n: s.withoutTool.n, accuracy: fin(s.withoutTool.accuracy), ci: { lo: fin(s.withoutTool.wilson.lo), hi: fin(s.withoutTool.wilson.hi) } },
      };
    },
    'slices:list': () => sliceViews(),
    'slices:save': async ({ name, query }) => {
      await slices.save({ name, query });
      return sliceViews();
    },
    'slices:delete': async ({ name }) => {
      await slices.remove(name);
      return sliceViews();
    },
    'runs:exportData': async ({ runIds }) => {
      const dir = path.join(ctx.workspace, 'exports', `training-data-${new Date().toISOString().replace(/[:.]/g, '-')}`);
      const r = await exportRunData(store, ctx.ws.media, runIds, dir);
      return { dir: r.dir, files: r.files, skippedRl: r.skipped.rl.length, skippedSft: r.skipped.sft.length };
    },
    'runs:compare': async ({ a, b }) => {
      const [ra, rb] = await Promise.all([service.statRows(a), service.statRows(b)]);
      const p = pairedCompare(ra, rb, { names: [a, b] });
      return {
        shared: p.shared,
        onlyA: p.onlyA,
        onlyB: p.onlyB,
        aBetter: p.aBetter,
        bBetter: p.bBetter,
        ties: p.ties,
        accuracyA: fin(p.accuracyA),
        accuracyB: fin(p.accuracyB),
        delta: { value: fin(p.delta.value), lo: fin(p.delta.lo), hi: fin(p.delta.hi) },
        p: fin(p.mcnemar.p),
        aBetterKeys: p.aBetterKeys,
        bBetterKeys: p.bBetterKeys,
        summary: p.summary,
      };
    },
  };
}

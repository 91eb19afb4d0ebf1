import path from 'node:path';
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { browseCalls, GroupStat } from '../../../app/contract';
import { attachRunImages } from '../../../app/importers/attach';
import type { RunIndexService } from '../../../app/browse/runIndex';
import { QueryError, SliceStore } from '../../../app/browse/query';
import { accuracy, accuracyByToolUse, accuracyTable, pairedCompare, toolUse, type AccuracyStat, type StatRow } from '../../../app/sweeps/stats';
import type { CoreContext } from '../context';
import type { LabelService } from '../../../app/labels';
import { exportRunData } from '../../../app/training/exportRuns';

const fin = (x: number): number | null => (Number.isFinite(x) ? x : null);

function group(key: Record<string, string | null>, a: AccuracyStat, rows: readonly StatRow[]): GroupStat {
  const tu = toolUse(rows);
  return { key, n: a.n, correct: a.correct, accuracy: fin(a.accuracy), ci: { lo: fin(a.wilson.lo), hi: fin(a.wilson.hi) }, rapr: fin(tu.rapr), callsPerSample: fin(tu.callsPerSample), toolErrorRate: fin(tu.toolErrorRate) };
}

/**
 * The sample index of some runs with the label column current: labels change in the label service, and the
 * index (cached per run set) takes the new union of labels per sample only when the service's version moved.
 */
export function labelledIndex(runIndex: RunIndexService, labels: LabelService) {
  const seen = new WeakMap<object, number>();
  return async (runIds: readonly string[]) => {
    const entry = await runIndex.index(runIds);
    await labels.ready();
    if (seen.get(entry) !== labels.version) {
      entry.index.applyLabels(labels.bySample());
      seen.set(entry, labels.version);
    }
    return entry;
  };
}

/** Handlers of the Runs, Sample and Compare domain. */
export function browseHandlers(ctx: CoreContext, deps: { runIndex: RunIndexService; withLabels: ReturnType<typeof labelledIndex> }): DomainHandlers<typeof browseCalls> {
  const store = ctx.ws.runs;
  const service = deps.runIndex;
  const withLabels = deps.withLabels;

  const slices = new SliceStore(ctx.workspace);
  const sliceViews = async () => (await slices.list()).map((x) => ({ name: x.name, query: x.query, updatedAt: x.updatedAt }));

  const rowsFor = async (runIds: readonly string[], query: string): Promise<StatRow[]> => {
    if (!query.trim()) return (await Promise.all(runIds.map((id) => service.statRows(id)))).flat();
    const { index, where } = await withLabels(runIds);
    const ids = index.filter(query);
    const out: StatRow[] = [];
    for (const id of ids) {
      const w = where[id];
      if (w) out.push((await service.scan(w.run)).rows[w.line]!);
    }
    return out;
  };

  return {
    'runs:list': async () => {
      const listed = await store.listRuns();
      return Promise.all(
        listed.map(async (r) => {
          if (!r.manifest) return { id: r.id, manifest: null, error: r.error, samples: 0, correct: 0, unreadable: 0 };
          const scan = await service.scan(r.id);
          return { id: r.id, manifest: r.manifest, samples: scan.rows.length, correct: scan.rows.filter((x) => x.correct).length, unreadable: scan.unreadable };
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
      const rows = await rowsFor(runIds, query);
      const overall = accuracy(rows);
      const tu = toolUse(rows);
      const split = accuracyByToolUse(rows);
      const toGroup = (g: ReturnType<typeof accuracyTable>[number]): GroupStat => ({ key: g.key, n: g.n, correct: g.correct, accuracy: fin(g.accuracy), ci: { lo: fin(g.wilson.lo), hi: fin(g.wilson.hi) }, rapr: fin(g.rapr), callsPerSample: fin(g.callsPerSample), toolErrorRate: fin(g.toolErrorRate) });
      return {
        overall: group({}, overall, rows),
        byBench: accuracyTable(rows, ['bench']).map(toGroup),
        byCategory: accuracyTable(rows, ['bench', 'category']).map(toGroup),
        toolUse: { n: tu.n, rapr: fin(tu.rapr), callsPerSample: fin(tu.callsPerSample), toolErrorRate: fin(tu.toolErrorRate), stopReasons: tu.stopReasons, callHistogram: [...tu.callHistogram] },
        withTool: { n: split.withTool.n, accuracy: fin(split.withTool.accuracy), ci: { lo: fin(split.withTool.wilson.lo), hi: fin(split.withTool.wilson.hi) } },
        withoutTool: { n: split.withoutTool.n, accuracy: fin(split.withoutTool.accuracy), ci: { lo: fin(split.withoutTool.wilson.lo), hi: fin(split.withoutTool.wilson.hi) } },
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

import path from 'node:path';
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { browseCalls, GroupStat } from '../../../app/contract';
import { RunStore } from '../../../app/workspace';
import { RunIndexService } from '../../../app/sweeps/runIndex';
import { QueryError, SliceStore } from '../../../app/sweeps/query';
import { accuracy, accuracyByToolUse, accuracyTable, pairedCompare, toolUse, type AccuracyStat, type StatRow } from '../../../app/sweeps/stats';
import type { CoreContext } from '../context';
import {
  ACTION_DESCRIPTIONS,
  LabelStore,
  agreementReport,
  buildKeyMap,
  currentLabelsToCsv,
  currentLabelsToJsonl,
  currentLabelRows,
  eventsToCsv,
  eventsToJsonl,
  foldLabels,
  labelsBySample,
  loadTaxonomy,
  normalizeChord,
  parseUnitKey,
  sampleKey,
  saveTaxonomy,
  validateKeyMap,
  type LabelEvent,
  type LabelFold,
} from '../../../app/labels';

const fin = (x: number): number | null => (Number.isFinite(x) ? x : null);

function group(key: Record<string, string | null>, a: AccuracyStat, rows: readonly StatRow[]): GroupStat {
  const tu = toolUse(rows);
  return { key, n: a.n, correct: a.correct, accuracy: fin(a.accuracy), ci: { lo: fin(a.wilson.lo), hi: fin(a.wilson.hi) }, rapr: fin(tu.rapr), callsPerSample: fin(tu.callsPerSample), toolErrorRate: fin(tu.toolErrorRate) };
}

/** Handlers of the Runs, Sample and Compare domain. */
export function browseHandlers(ctx: CoreContext): DomainHandlers<typeof browseCalls> {
  const store = new RunStore(path.join(ctx.workspace, 'runs'));
  const service = new RunIndexService({
    dir: (id) => store.runDir(id),
    readManifest: (id) => store.readManifest(id),
    listRunIds: async () => (await store.listRuns()).map((r) => r.id),
  });

  // Labels: append-only events per annotator; the fold (current labels) is kept in memory and the
  // union of labels per sample is pushed into every cached index so `label = x` filters work.
  const labelStore = new LabelStore(ctx.workspace);
  let events: LabelEvent[] | null = null;
  let fold: LabelFold = new Map();
  const platform: 'mac' | 'other' = process.platform === 'darwin' ? 'mac' : 'other';
  const loadLabels = async (): Promise<LabelFold> => {
    if (!events) {
      events = (await labelStore.readAll()).flatMap((f) => f.events);
      fold = foldLabels([{ events }]);
    }
    return fold;
  };
  const withLabels = async (runIds: readonly string[]) => {
    const entry = await service.index(runIds);
    const f = await loadLabels();
    if ((entry as { labelsVersion?: number }).labelsVersion !== labelsVersion) {
      entry.index.applyLabels(labelsBySample(f));
      (entry as { labelsVersion?: number }).labelsVersion = labelsVersion;
    }
    return entry;
  };
  let labelsVersion = 0;
  const sampleLabels = (runId: string, qid: string) => {
    const out: Array<{ who: string; label: string; step: number | null; note?: string; at: string }> = [];
    for (const [key, byWho] of fold) {
      const u = parseUnitKey(key);
      if (u.run !== runId || u.qid !== qid) continue;
      for (const [who, list] of byWho) for (const c of list) out.push({ who, label: c.label, step: u.step, note: c.note, at: c.at });
    }
    return out;
  };

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
    'labels:config': async () => {
      const taxonomy = await loadTaxonomy(ctx.workspace);
      const map = buildKeyMap(taxonomy);
      const report = validateKeyMap(map, { platform, taxonomy });
      const keymap: Record<string, string[]> = {};
      const problems: string[] = [...report.conflicts.map((c) => `'${c.chord}' is bound to ${c.actions.join(', ')}`), ...report.invalid.map((i) => i.message)];
      for (const [action, chords] of Object.entries(map)) {
        keymap[action] = chords.flatMap((c) => {
          try {
            return [normalizeChord(c, platform)];
          } catch {
            return [];
          }
        });
      }
      await loadLabels();
      const annotators = [...new Set([...(await labelStore.annotators())])];
      return { taxonomy: taxonomy.labels, keymap, actions: { ...ACTION_DESCRIPTIONS }, annotators, platform, problems };
    },
    'labels:setTaxonomy': async ({ labels }) => {
      const current = await loadTaxonomy(ctx.workspace);
      await saveTaxonomy(ctx.workspace, { ...current, labels });
      return (await loadTaxonomy(ctx.workspace)).labels;
    },
    'labels:sample': async ({ runId, qid }) => {
      await loadLabels();
      return sampleLabels(runId, qid);
    },
    'labels:apply': async (req) => {
      await loadLabels();
      const ev = await labelStore.append({ who: req.annotator, run: req.runId, qid: req.qid, step: req.step, label: req.label, op: req.op, note: req.note });
      events!.push(ev);
      fold = foldLabels([{ events: events! }]);
      labelsVersion++;
      ctx.emit('labels:changed', { runId: req.runId, qid: req.qid });
      return sampleLabels(req.runId, req.qid);
    },
    'labels:progress': async ({ runIds, query, annotator, sort, from }) => {
      const { index } = await withLabels(runIds);
      const ids = index.select({ query, sort });
      const mine = new Set<string>();
      for (const [key, byWho] of fold) {
        if (byWho.get(annotator)?.length) {
          const u = parseUnitKey(key);
          mine.add(sampleKey(u.run, u.qid));
        }
      }
      let labelled = 0;
      // The first unlabelled at or after `from`, else the first one before it (the queue wraps).
      type Pos = { run: string; qid: string; position: number };
      let next: Pos | null = null as Pos | null;
      let wrapped: Pos | null = null as Pos | null;
      for (let i = 0; i < ids.length; i++) {
        const r = index.row(ids[i]!);
        if (mine.has(sampleKey(r.run, r.qid))) labelled++;
        else if (i >= from) next ??= { run: r.run, qid: r.qid, position: i };
        else wrapped ??= { run: r.run, qid: r.qid, position: i };
      }
      return { total: ids.length, labelled, next: next ?? wrapped };
    },
    'labels:export': async ({ format, kind }) => {
      const f = await loadLabels();
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      if (kind === 'events') {
        return { filename: `loupe-label-events-${stamp}.${format}`, text: format === 'csv' ? eventsToCsv(events!) : eventsToJsonl(events!), rows: events!.length };
      }
      return { filename: `loupe-labels-${stamp}.${format}`, text: format === 'csv' ? currentLabelsToCsv(f) : currentLabelsToJsonl(f), rows: currentLabelRows(f).length };
    },
    'labels:agreement': async ({ annotators }) => {
      const f = await loadLabels();
      const who = annotators ?? (await labelStore.annotators());
      const taxonomy = await loadTaxonomy(ctx.workspace);
      const r = agreementReport(f, { annotators: who, labels: taxonomy.labels.map((l) => l.id) });
      return {
        annotators: r.annotators,
        method: r.method,
        units: r.units,
        partial: r.partial,
        primaryKappa: fin(r.primary.kappa),
        meanPerLabelKappa: fin(r.meanPerLabelKappa),
        perLabel: r.perLabel.map((l) => ({ label: l.label, kappa: fin(l.kappa), positives: l.positives })),
      };
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

/** Handlers of the Labels domain: a thin adapter over app/labels/service.ts (and the labelled sample index). */
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { EventName, EventPayload, labelsCalls } from '../../../app/contract';
import { parseUnitKey, sampleKey, type LabelService } from '../../../app/labels';
import type { labelledIndex } from './browse';

const fin = (x: number): number | null => (Number.isFinite(x) ? x : null);

export function labelsHandlers(
  labels: LabelService,
  withLabels: ReturnType<typeof labelledIndex>,
  emit: <E extends EventName>(event: E, payload: EventPayload<E>) => void,
): DomainHandlers<typeof labelsCalls> {
  const platform: 'mac' | 'other' = process.platform === 'darwin' ? 'mac' : 'other';
  return {
    'labels:config': async () => {
      await labels.ready();
      return { ...(await labels.keyConfig(platform)), annotators: await labels.store.annotators(), platform };
    },
    'labels:setTaxonomy': async ({ labels: list }) => {
      await labels.saveTaxonomy({ ...(await labels.taxonomy()), labels: list });
      return (await labels.taxonomy()).labels;
    },
    'labels:sample': async ({ runId, qid }) => {
      await labels.ready();
      return labels.sampleLabels(runId, qid);
    },
    'labels:apply': async (req) => {
      await labels.ready();
      const t = { run: req.runId, qid: req.qid, step: req.step };
      if (req.op === 'add') await labels.add(req.annotator, t, req.label, req.note);
      else await labels.remove(req.annotator, t, req.label);
      emit('labels:changed', { runId: req.runId, qid: req.qid });
      return labels.sampleLabels(req.runId, req.qid);
    },
    'labels:progress': async ({ runIds, query, annotator, sort, from }) => {
      const { index } = await withLabels(runIds);
      const ids = index.select({ query, sort });
      const mine = new Set<string>();
      for (const [key, byWho] of labels.fold) {
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
      await labels.ready();
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      if (kind === 'events') return { filename: `loupe-label-events-${stamp}.${format}`, text: labels.exportEvents(format), rows: labels.allEvents().length };
      return { filename: `loupe-labels-${stamp}.${format}`, text: labels.exportCurrent(format), rows: labels.currentRows() };
    },
    'labels:agreement': async ({ annotators }) => {
      await labels.ready();
      const who = annotators ?? (await labels.store.annotators());
      const taxonomy = await labels.taxonomy();
      const r = labels.agreement({ annotators: who, labels: taxonomy.labels.map((l) => l.id) });
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
  };
}

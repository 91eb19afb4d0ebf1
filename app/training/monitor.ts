/**
 * Follow a training job and turn its log into metric points: the piece the contract's `training:*` streams wrap.
 * One call = one follow; dispose() stops it. Metric points are also accumulated in a MetricSeries.
 */
import type { Connector, FollowHandle, FollowResult, JobStatus } from '../connectors/types';
import { MetricSeries, MetricStreamParser, type MetricFormat, type MetricPoint } from './metrics';

export interface MonitorOptions {
  format?: MetricFormat;
  /** Resume from this byte offset (points before it are not re-parsed). */
  offset?: number;
  pollMs?: number;
  smoothing?: number;
  onText?: (text: string, nextOffset: number) => void;
  onPoints?: (points: MetricPoint[]) => void;
  onStatus?: (status: JobStatus) => void;
  onWarning?: (message: string) => void;
}

export interface MonitorHandle extends FollowHandle {
  series: MetricSeries;
  done: Promise<FollowResult>;
}

export function monitorJob(connector: Connector, id: string, o: MonitorOptions = {}): MonitorHandle {
  const parser = new MetricStreamParser(o.format ?? 'auto');
  const series = new MetricSeries(o.smoothing ?? 0.6);
  const push = (pts: MetricPoint[]): void => {
    if (!pts.length) return;
    series.addAll(pts);
    o.onPoints?.(pts);
  };
  const h = connector.follow(id, {
    ...(o.offset !== undefined ? { offset: o.offset } : {}),
    ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
    onText: (t, off) => {
      o.onText?.(t, off);
      push(parser.push(t));
    },
    ...(o.onStatus ? { onStatus: o.onStatus } : {}),
    ...(o.onWarning ? { onWarning: o.onWarning } : {}),
  });
  const done = h.done.then((r) => {
    push(parser.end());
    return r;
  });
  return { series, done, dispose: () => h.dispose() };
}

import { useCallback, useEffect, useMemo, useState } from 'react';
import type { DemoProposal, Trajectory } from '../../../../app/contract';
import { getClient } from '../../client';
import { pairRows, useDemoPairStore, type PairColumn, type PairSide } from '../../stores/useDemoPairStore';
import { useAppStore } from '../../stores/useAppStore';
import { stepNumbers } from '../trajectory/geometry';
import { AnswerText } from './AnswerText';
import { PairImageViewer, type PairBox } from './PairImageViewer';
import { PairPausePanel } from './PairPausePanel';
import { PairStepCell } from './PairStepCell';
import { PairPresentation } from './PairPresentation';

const SIDES: PairSide[] = ['A', 'B'];

/** Seconds a side has run: its trajectory's own time once done, the wall clock while it runs. */
function seconds(c: PairColumn, now: number): string {
  if (c.trajectory.latencyMs !== undefined && c.endedAt !== null) return `${(c.trajectory.latencyMs / 1000).toFixed(1)} s`;
  if (c.startedAt === null) return '';
  return `${(((c.endedAt ?? now) - c.startedAt) / 1000).toFixed(1)} s`;
}

/** The boxes of one side on the shared (first question) image, the paused proposal dashed. */
function boxesOf(side: PairSide, trajectory: Trajectory, p: DemoProposal | null): PairBox[] {
  const steps = stepNumbers(trajectory);
  const out: PairBox[] = [];
  for (const t of trajectory.turns) if (t.call?.bboxNormalized && t.call.targetIndex === 0) out.push({ side, step: steps.get(t.index) ?? 0, row: t.index, box: t.call.bboxNormalized });
  if (p?.kind === 'crop' && p.targetIndex === 0 && p.bboxNormalized) out.push({ side, step: steps.size + 1, row: p.turnIndex, box: p.bboxNormalized, proposed: true });
  return out;
}

/** A side's time, ticking on its own while the side runs (so the columns do not re-render every half second). */
function Elapsed({ side, testId }: { side: PairSide; testId?: string }) {
  const c = useDemoPairStore((s) => s.cols[side]);
  const live = c.status === 'running' || c.status === 'paused' || c.status === 'starting';
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => setNow(Date.now()), 500);
    return () => clearInterval(t);
  }, [live]);
  return <span className="muted small" {...(testId ? { 'data-testid': testId } : {})}>{seconds(c, now)}</span>;
}

/** A side's heading: its configuration, state and time, with its own Stop. */
function ColumnHead({ side, label }: { side: PairSide; label: string }) {
  const status = useDemoPairStore((s) => s.cols[side].status);
  const stop = useDemoPairStore((s) => s.stop);
  const live = status === 'running' || status === 'paused' || status === 'starting';
  return (
    <div className={`pair-col-head pair-col-head-${side.toLowerCase()}`} data-testid={`pair-head-${side}`}>
      <span className={`pair-tag pair-tag-${side.toLowerCase()}`}>{side}</span>
      <strong className="pair-label">{label}</strong>
      <span className="muted small" data-testid={`pair-status-${side}`}>{status}</span>
      <Elapsed side={side} testId={`pair-time-${side}`} />
      <span className="grow" />
      <button type="button" className="btn btn-sm" disabled={!live} onClick={() => void stop(side)} data-testid={`pair-stop-${side}`}>Stop {side}</button>
    </div>
  );
}

/**
 * The Demo's two columns: A and B on one question, step rows aligned (row k of both at the same height, a CSS grid
 * row), both sides' boxes on one image, both answers and times, then Compare and the pair's HTML export.
 */
export function SideBySide() {
  const a = useDemoPairStore((s) => s.cols.A);
  const b = useDemoPairStore((s) => s.cols.B);
  const pair = useDemoPairStore((s) => s.pair);
  const starting = useDemoPairStore((s) => s.starting);
  const error = useDemoPairStore((s) => s.error);
  const activeRow = useDemoPairStore((s) => s.activeRow);
  const setActiveRow = useDemoPairStore((s) => s.setActiveRow);
  const save = useDemoPairStore((s) => s.save);
  const saving = useDemoPairStore((s) => s.saving);
  const exportHtml = useDemoPairStore((s) => s.exportHtml);
  const exports = useDemoPairStore((s) => s.exports);
  const navigate = useAppStore((s) => s.navigate);
  const [presenting, setPresenting] = useState(false);
  const mediaUrl = getClient().mediaUrl;
  const cols = { A: a, B: b };
  const ended = (c: PairColumn) => c.status === 'done' || c.status === 'error';
  const bothEnded = !!pair && ended(a) && ended(b);

  const rows = pairRows(a, b);
  const stepsA = useMemo(() => stepNumbers(a.trajectory), [a.trajectory]);
  const stepsB = useMemo(() => stepNumbers(b.trajectory), [b.trajectory]);
  // Only a new turn or proposal moves a box; streamed text does not.
  const boxes = useMemo(() => [...boxesOf('A', a.trajectory, a.proposal), ...boxesOf('B', b.trajectory, b.proposal)], [a.trajectory, a.proposal, b.trajectory, b.proposal]);
  const onSelect = useCallback((row: number) => setActiveRow(row), [setActiveRow]);
  const labels = pair?.labels ?? ['A', 'B'];

  const openCompare = async () => {
    const p = await save();
    if (p) navigate('runs', 'compare', p.a, p.b, 'demo/b0');
  };

  if (!pair && !starting && !error) {
    return <div className="demo-placeholder muted" data-testid="pair-placeholder">Side by side: set B's model, prompt or dialect in the side column, then Run A and B. Both stream here, step rows aligned.</div>;
  }
  return (
    <div className="pair" data-testid="pair-view">
      {error ? <div className="banner banner-error demo-banner" role="alert" data-testid="pair-error">{error}</div> : null}
      <PairImageViewer media={a.trajectory.media[0] ?? b.trajectory.media[0]} url={mediaUrl} boxes={boxes} activeRow={activeRow} />
      <div className="pair-grid" data-testid="pair-grid">
        {SIDES.map((side, i) => (
          <div key={side} className="pair-grid-head">
            <ColumnHead side={side} label={labels[i]!} />
            {cols[side].errors.map((e, j) => (
              <div key={j} className="banner banner-error demo-banner" role="alert" data-testid={`pair-col-error-${side}`}>{e}</div>
            ))}
            <PairPausePanel side={side} />
          </div>
        ))}
        {Array.from({ length: rows }, (_, row) =>
          SIDES.map((side) => {
            const c = cols[side];
            const turn = c.trajectory.turns.find((t) => t.index === row);
            const streamingText = c.streaming?.turnIndex === row && !turn ? c.streaming.text : null;
            const final = !!turn && !turn.call && ended(c) && row === c.trajectory.turns.length - 1;
            return <PairStepCell key={`${side}-${row}`} side={side} row={row} turn={turn} step={(side === 'A' ? stepsA : stepsB).get(row)} streamingText={streamingText} final={final} active={row === activeRow} mediaUrl={mediaUrl} onSelect={onSelect} />;
          }),
        )}
        {SIDES.map((side) => {
          const c = cols[side];
          return (
            <div key={`answer-${side}`} className={`pair-answer pair-answer-${side.toLowerCase()}`} data-testid={`pair-answer-${side}`}>
              <span className="demo-answer-label">Answer {side}</span>{' '}
              {c.trajectory.finalText !== undefined && ended(c) ? <AnswerText text={c.trajectory.finalText} /> : <span className="muted">{ended(c) ? (c.trajectory.error ?? 'no answer') : '…'}</span>}
              <span className="muted small"> · </span><Elapsed side={side} />
            </div>
          );
        })}
      </div>
      {bothEnded ? (
        <div className="demo-row pair-actions" data-testid="pair-actions">
          <button type="button" className="btn btn-primary" disabled={saving} onClick={() => void openCompare()} data-testid="pair-compare" title="Keep both runs (they move to Runs) and open them in Compare">Compare</button>
          <button type="button" className="btn" onClick={() => void exportHtml()} data-testid="pair-export-html">Export HTML (two columns)</button>
          <button type="button" className="btn" onClick={() => setPresenting(true)} data-testid="pair-present">Present (lockstep)</button>
          {pair?.saved ? <span className="muted small" data-testid="pair-saved">saved as a pair</span> : null}
          {exports.map((e) =>
            // Browser mode downloads from /exports/; Electron saves through the system dialog (as ExportBar does).
            getClient().exportUrl(e.name) ? (
              <a key={e.name} className="btn btn-sm" href={getClient().exportUrl(e.name) ?? undefined} download={e.name} data-testid="pair-export-link" title={e.path}>{e.name} ({Math.round(e.bytes / 1024)} KB)</a>
            ) : (
              <button key={e.name} type="button" className="btn btn-sm" onClick={() => void getClient().saveExport?.(e.name)} data-testid="pair-export-link" title={e.path}>{e.name} ({Math.round(e.bytes / 1024)} KB) Save…</button>
            ),
          )}
        </div>
      ) : null}
      {presenting ? <PairPresentation onClose={() => setPresenting(false)} /> : null}
    </div>
  );
}

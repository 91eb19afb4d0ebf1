/** The side by side's columns as pure data: one Demo run's events folded into a column (tested without a browser). */
import type { Box, DemoEvent, DemoProposal, Trajectory, Turn } from '../../../app/contract';

/** A column's state: the Demo's run states (useDemoStore's RunStatus), kept here so this file imports no store. */
export type RunStatus = 'idle' | 'starting' | 'running' | 'paused' | 'done' | 'error';

export type PairSide = 'A' | 'B';

export interface PairColumn {
  runId: string | null;
  status: RunStatus;
  trajectory: Trajectory;
  streaming: { turnIndex: number; text: string } | null;
  proposal: DemoProposal | null;
  editBox: Box | null;
  errors: string[];
  engineLabel: string;
  /** ms since the epoch: the first event of the run, and its `done`. */
  startedAt: number | null;
  endedAt: number | null;
}

export function emptyColumn(): PairColumn {
  return { runId: null, status: 'idle', trajectory: { dialect: '', prompt: 'vcot', media: [], originals: [], isVideo: false, question: '', turns: [], stopReason: 'answer' }, streaming: null, proposal: null, editBox: null, errors: [], engineLabel: '', startedAt: null, endedAt: null };
}

function upsertTurn(turns: Turn[], turn: Turn): Turn[] {
  const i = turns.findIndex((t) => t.index === turn.index);
  if (i < 0) return [...turns, turn].sort((a, b) => a.index - b.index);
  const next = turns.slice();
  next[i] = turn;
  return next;
}

/** One event into a column (a copy; the caller stores it). Branches other than the first (an edit's road not taken) stay in the saved run. */
export function applyPairEvent(c: PairColumn, ev: DemoEvent, now: number): PairColumn {
  if (ev.branch !== 'b0' && ev.type !== 'error') return c;
  const n = { ...c, startedAt: c.startedAt ?? now };
  switch (ev.type) {
    case 'start':
      n.trajectory = { ...n.trajectory, media: ev.media, originals: ev.originals, isVideo: ev.isVideo };
      n.engineLabel = ev.engineLabel;
      n.status = 'running';
      break;
    case 'turn-start':
      n.streaming = { turnIndex: ev.turnIndex, text: '' };
      if (n.status === 'starting') n.status = 'running';
      break;
    case 'tokens':
      n.streaming = { turnIndex: ev.turnIndex, text: (n.streaming?.turnIndex === ev.turnIndex ? n.streaming.text : '') + ev.delta };
      break;
    case 'paused':
      n.status = 'paused';
      n.proposal = ev.proposal;
      n.editBox = ev.proposal.bboxNormalized ?? null;
      break;
    case 'turn':
      n.trajectory = { ...n.trajectory, turns: upsertTurn(n.trajectory.turns, ev.turn) };
      if (n.streaming?.turnIndex === ev.turn.index) n.streaming = null;
      if (n.status === 'paused') {
        n.status = 'running';
        n.proposal = null;
      }
      break;
    case 'error':
      n.errors = [...n.errors, ev.message];
      break;
    case 'done':
      n.trajectory = ev.trajectory;
      n.streaming = null;
      n.proposal = null;
      n.editBox = null;
      n.endedAt = now;
      n.status = ev.trajectory.stopReason === 'engine_error' || ev.trajectory.stopReason === 'error' ? 'error' : 'done';
      break;
    default:
      break;
  }
  return n;
}

/** Both columns' steps as aligned rows: row k holds each side's k-th turn (or nothing). */
export function pairRows(a: PairColumn, b: PairColumn): number {
  const len = (c: PairColumn) => Math.max(c.trajectory.turns.length, c.streaming ? c.streaming.turnIndex + 1 : 0);
  return Math.max(len(a), len(b));
}

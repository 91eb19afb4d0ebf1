import { Fragment, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { isUngraded, useRunsStore } from '../../stores/useRunsStore';
import { useAppStore } from '../../stores/useAppStore';
import { pct } from './format';
import { RunEditor, RunRowActions, type Editing } from './RunAdmin';

/** The workspace's runs; tick several to browse them together, exactly two to compare, any to export training data. */
export function RunList() {
  const runs = useRunsStore((s) => s.runs);
  const selected = useRunsStore(useShallow((s) => s.selected));
  const select = useRunsStore((s) => s.select);
  const navigate = useAppStore((s) => s.navigate);
  const [editing, setEditing] = useState<Editing>(null);
  const exportData = useRunsStore((s) => s.exportData);
  const exported = useRunsStore((s) => s.exported);
  const exportError = useRunsStore((s) => s.exportError);
  const toggle = (id: string) => select(selected.includes(id) ? selected.filter((x) => x !== id) : [...selected, id]);
  return (
    <div className="card run-list">
      <div className="run-list-head">
        <h3>Runs</h3>
        <div style={{ display: 'flex', gap: 8 }}>
          <button type="button" className="btn" disabled={selected.length !== 2} onClick={() => navigate('runs', 'compare', selected[0]!, selected[1]!)} data-testid="compare-runs" title="Tick exactly two runs to compare them sample by sample">
            Compare
          </button>
          <button type="button" className="btn" disabled={selected.length === 0} onClick={() => void exportData()} data-testid="export-data" title="RL rows for verl, Pixel Reasoner and ms-swift, and SFT traces from the correct trajectories of the ticked runs">
            Export training data
          </button>
        </div>
      </div>
      {exported ? (
        <p className="muted small" data-testid="export-data-result" title={exported.dir}>
          Wrote {exported.files.map((f) => `${f.name} (${f.rows})`).join(', ')} to {exported.dir}; left out {exported.skippedRl} from RL rows, {exported.skippedSft} from SFT traces.
        </p>
      ) : null}
      {exportError ? <p className="tr-error small" role="alert" data-testid="export-data-error">{exportError}</p> : null}
      <table className="table compact" data-testid="runs-table">
        <thead>
          <tr><th /><th>Run</th><th>Model</th><th>Bench</th><th>Prompt</th><th className="num">n</th><th className="num">Acc.</th><th /></tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <Fragment key={r.id}>
            <tr className={selected.includes(r.id) ? 'selected' : undefined}>
              <td><input type="checkbox" aria-label={`select ${r.id}`} checked={selected.includes(r.id)} onChange={() => toggle(r.id)} disabled={!r.manifest} /></td>
              <td title={r.id} className="ellipsis">{r.manifest?.name ?? r.id}{r.manifest?.tags?.map((t) => <span key={t} className="badge" data-testid="run-tag">{t}</span>)}{r.unreadable ? <span className="badge badge-warn" title="lines that could not be read, e.g. a torn last line after a crash">{r.unreadable} unreadable</span> : null}{r.error ? <span className="badge badge-bad" title={r.error}>broken manifest</span> : null}</td>
              <td className="ellipsis">{r.manifest?.model.id ?? '—'}</td>
              <td>{r.manifest?.bench?.id ?? '—'}</td>
              <td>{r.manifest?.prompt ?? '—'}</td>
              <td className="num">{r.samples}</td>
              <td className="num" title={isUngraded(r) ? 'no ground truth: a Demo question has no answer to score' : undefined}>{r.samples && !isUngraded(r) ? pct(r.correct / r.samples) : '—'}</td>
              <td><RunRowActions run={r} onEdit={setEditing} /></td>
            </tr>
            {editing?.runId === r.id ? (
              <tr className="run-editor-row">
                <td colSpan={8}><RunEditor key={editing.kind} run={r} editing={editing} onDone={() => setEditing(null)} /></td>
              </tr>
            ) : null}
            </Fragment>
          ))}
        </tbody>
      </table>
    </div>
  );
}

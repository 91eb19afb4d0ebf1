import { useState } from 'react';
import { useLabelsStore } from '../../stores/useLabelsStore';

/** Download the labels: current labels (after undo/removes) or the raw event log, as JSONL or CSV. */
export function ExportPanel() {
  const exportLabels = useLabelsStore((s) => s.exportLabels);
  const last = useLabelsStore((s) => s.lastExport);
  const [kind, setKind] = useState<'current' | 'events'>('current');
  return (
    <div className="card an-export">
      <div className="an-tax-head">
        <h3>Export</h3>
        <select className="input an-kind" value={kind} onChange={(e) => setKind(e.target.value as 'current' | 'events')} aria-label="What to export" data-testid="export-kind">
          <option value="current">current labels</option>
          <option value="events">every event</option>
        </select>
      </div>
      <div className="an-editor-actions">
        <button type="button" className="btn btn-sm" onClick={() => void exportLabels('jsonl', kind)} data-testid="export-jsonl">JSONL</button>
        <button type="button" className="btn btn-sm" onClick={() => void exportLabels('csv', kind)} data-testid="export-csv">CSV</button>
        {last ? <span className="muted small" data-testid="export-result">{last.filename} · {last.rows} row(s)</span> : null}
      </div>
    </div>
  );
}

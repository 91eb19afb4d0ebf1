import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useAppStore } from '../../stores/useAppStore';
import { useLabelsStore } from '../../stores/useLabelsStore';
import { useRunsStore } from '../../stores/useRunsStore';

/** The queue: which runs, which filter, where we are and how much is labelled. */
export function QueueBar() {
  const runs = useRunsStore((s) => s.runs);
  const selected = useRunsStore(useShallow((s) => s.selected));
  const select = useRunsStore((s) => s.select);
  const filter = useLabelsStore((s) => s.filter);
  const problem = useLabelsStore((s) => s.problem);
  const setFilter = useLabelsStore((s) => s.setFilter);
  const loadQueue = useLabelsStore((s) => s.loadQueue);
  const total = useLabelsStore((s) => s.total);
  const position = useLabelsStore((s) => s.position);
  const progress = useLabelsStore((s) => s.progress);
  const submit = useLabelsStore((s) => s.submit);
  const who = useAppStore((s) => s.settings?.annotator ?? '');
  const [draft, setDraft] = useState(filter);
  useEffect(() => setDraft(filter), [filter]);
  const toggleRun = (id: string) => {
    select(selected.includes(id) ? selected.filter((x) => x !== id) : [...selected, id]);
    void loadQueue();
  };
  const done = progress && progress.total ? progress.labelled / progress.total : 0;
  return (
    <div className="card an-queue">
      <div className="an-queue-row">
        <span className="muted small">Runs</span>
        <span className="an-runs">
          {runs.filter((r) => r.manifest).map((r) => (
            <label key={r.id} className={selected.includes(r.id) ? 'chip an-run on' : 'chip an-run'} title={r.id}>
              <input type="checkbox" checked={selected.includes(r.id)} onChange={() => toggleRun(r.id)} /> {r.manifest?.name ?? r.id}
            </label>
          ))}
        </span>
        <span className="grow" />
        <input
          className={problem ? 'input an-filter input-bad' : 'input an-filter'}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') void setFilter(draft);
          }}
          placeholder="queue filter, e.g. correct = false and bench = vstar"
          aria-label="Queue filter"
          spellCheck={false}
          data-testid="queue-filter"
        />
      </div>
      {problem ? <div className="error-text small" role="alert" data-testid="queue-problem">{problem}</div> : null}
      <div className="an-queue-row">
        <span data-testid="queue-position" className="an-pos">{total ? `${position + 1} of ${total}` : selected.length ? 'no samples match' : 'tick a run'}</span>
        <div className="an-progress" aria-hidden="true"><div style={{ width: `${(done * 100).toFixed(1)}%` }} /></div>
        <span data-testid="progress" className="an-progress-text">
          {progress && who ? `${progress.labelled} / ${progress.total} labelled by ${who}` : who ? '' : 'no annotator set'}
        </span>
        <button type="button" className="btn btn-sm" disabled={!who || !total} onClick={() => void submit()} data-testid="next-unlabelled" title="Next sample you have not labelled">
          Next unlabelled →
        </button>
      </div>
    </div>
  );
}

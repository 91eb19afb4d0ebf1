import { useEffect, useState } from 'react';
import { useRunsStore } from '../../stores/useRunsStore';
import { count } from './format';

/** The filter (query language) and full-text search. Enter applies the filter; search applies as you type. */
export function QueryBar() {
  const query = useRunsStore((s) => s.query);
  const problem = useRunsStore((s) => s.problem);
  const total = useRunsStore((s) => s.total);
  const lastMs = useRunsStore((s) => s.lastMs);
  const setQuery = useRunsStore((s) => s.setQuery);
  const setSearch = useRunsStore((s) => s.setSearch);
  const [draft, setDraft] = useState(query);
  const [text, setText] = useState('');
  const slices = useRunsStore((s) => s.slices);
  const sliceError = useRunsStore((s) => s.sliceError);
  const loadSlices = useRunsStore((s) => s.loadSlices);
  const saveSlice = useRunsStore((s) => s.saveSlice);
  const deleteSlice = useRunsStore((s) => s.deleteSlice);
  const [naming, setNaming] = useState<string | null>(null);
  useEffect(() => {
    void loadSlices();
  }, [loadSlices]);
  useEffect(() => setDraft(query), [query]);
  useEffect(() => {
    const t = setTimeout(() => setSearch(text), 200);
    return () => clearTimeout(t);
  }, [text, setSearch]);
  return (
    <div className="querybar-wrap">
    <div className="querybar">
      <div className="query-field">
        <input
          className={problem ? 'input input-bad' : 'input'}
          placeholder="filter, e.g.  correct = false and calls > 1 and bench = vstar"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') setQuery(draft);
            if (e.key === 'Escape') {
              setDraft('');
              setQuery('');
            }
          }}
          aria-label="Filter"
          data-testid="query-input"
          spellCheck={false}
        />
        {problem ? (
          <div className="query-problem" role="alert" data-testid="query-problem">
            {problem.column ? <pre>{`${draft}\n${' '.repeat(Math.max(0, problem.column - 1))}^`}</pre> : null}
            {problem.message}
          </div>
        ) : null}
      </div>
      <input className="input search" placeholder="search question, answer, model text, image name" value={text} onChange={(e) => setText(e.target.value)} aria-label="Search" data-testid="search-input" />
      <span className="muted small" data-testid="row-count">{count(total)} samples{lastMs !== null ? ` · ${lastMs.toFixed(0)} ms` : ''}</span>
    </div>
    <div className="slices" data-testid="slices">
      <span className="muted small">Slices:</span>
      {slices.map((sl) => (
        <span key={sl.name} className={sl.query === query ? 'chip active' : 'chip'} title={sl.query}>
          <button type="button" className="linkish" onClick={() => setQuery(sl.query)} data-testid="slice-chip">{sl.name}</button>
          <button type="button" className="linkish muted" aria-label={`delete slice ${sl.name}`} onClick={() => void deleteSlice(sl.name)}>×</button>
        </span>
      ))}
      {naming === null ? (
        <button type="button" className="btn small-btn" disabled={!query.trim()} onClick={() => setNaming('')} data-testid="save-slice" title="Save the current filter as a named slice">Save filter as slice…</button>
      ) : (
        <form onSubmit={(e) => { e.preventDefault(); if (naming.trim()) void saveSlice(naming.trim()).then(() => setNaming(null)); }}>
          <input className="input slim" autoFocus placeholder="slice name" value={naming} onChange={(e) => setNaming(e.target.value)} onKeyDown={(e) => e.key === 'Escape' && setNaming(null)} data-testid="slice-name" />
        </form>
      )}
      {sliceError ? <span className="error-text" role="alert">{sliceError}</span> : null}
    </div>
    </div>
  );
}

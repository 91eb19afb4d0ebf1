import { useEffect, useRef, useState } from 'react';
import { describeChord } from '../../../../app/contract/keymap';
import type { TaxonomyLabel } from '../../../../app/contract';
import { useAppStore } from '../../stores/useAppStore';
import { myLabels, useLabelsStore } from '../../stores/useLabelsStore';
import { useRunsStore } from '../../stores/useRunsStore';
import { NoteBox } from './NoteBox';
import { slugLabelId } from './slug';

/**
 * The failure taxonomy for the current unit (the sample or one step): each label with its key, whether
 * you set it, who else did (muted), your note, and a slice button that opens Runs filtered to it.
 */
export function TaxonomyPanel() {
  const config = useLabelsStore((s) => s.config);
  const labels = useLabelsStore((s) => s.labels);
  const step = useLabelsStore((s) => s.step);
  const row = useLabelsStore((s) => s.row);
  const focusLabel = useLabelsStore((s) => s.focusLabel);
  const searchFocus = useLabelsStore((s) => s.searchFocus);
  const toggleLabel = useLabelsStore((s) => s.toggleLabel);
  const saveTaxonomy = useLabelsStore((s) => s.saveTaxonomy);
  const who = useAppStore((s) => s.settings?.annotator ?? '');
  const navigate = useAppStore((s) => s.navigate);
  const [search, setSearch] = useState('');
  const searchRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (searchFocus) searchRef.current?.focus();
  }, [searchFocus]);
  if (!config) return null;
  const mine = myLabels(labels, who, step);
  const others = labels.filter((l) => l.step === step && l.who !== who);
  const q = search.trim().toLowerCase();
  const visible = config.taxonomy.filter((l) => !l.archived && (!q || l.name.toLowerCase().includes(q) || l.id.includes(q) || l.description.toLowerCase().includes(q)));
  const keyOf = (l: TaxonomyLabel) => (config.keymap[`label:${l.id}`] ?? []).map((c) => describeChord(c, config.platform));
  const openSlice = (id: string) => {
    useRunsStore.getState().setQuery(`label = ${id}`);
    navigate('runs');
  };
  const addFromSearch = async () => {
    const name = search.trim();
    const id = slugLabelId(name);
    if (!id) return;
    if (await saveTaxonomy([...config.taxonomy, { id, name, description: '' }])) setSearch('');
  };
  // Labels on this unit that the taxonomy no longer lists (archived or removed) stay visible.
  const unknown = [...new Set([...mine, ...others].map((l) => l.label))].filter((id) => !visible.some((v) => v.id === id) && !q);
  return (
    <div className="card an-tax" data-testid="taxonomy-panel">
      <div className="an-tax-head">
        <h3>{step === null ? 'Sample labels' : `Step ${step + 1} labels`}</h3>
        <input
          ref={searchRef}
          className="input an-tax-search"
          placeholder="search or add a label ( / )"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') setSearch('');
            if (e.key === 'Enter') {
              e.preventDefault();
              const first = visible[0];
              if (first) {
                void toggleLabel(first.id);
                setSearch('');
                e.currentTarget.blur();
              } else void addFromSearch();
            }
          }}
          spellCheck={false}
          data-testid="taxonomy-search"
        />
      </div>
      <ul className="an-labels">
        {visible.map((l) => {
          const on = mine.find((m) => m.label === l.id);
          const by = others.filter((o) => o.label === l.id);
          return (
            <li key={l.id} className={on ? 'an-label on' : 'an-label'} style={l.color ? { borderLeftColor: l.color } : undefined}>
              <button
                type="button"
                className="an-label-btn"
                aria-pressed={!!on}
                onClick={() => void toggleLabel(l.id)}
                disabled={!row}
                title={l.description}
                data-testid={`label-${l.id}`}
              >
                <span className="an-keys">{keyOf(l).map((k) => <kbd key={k}>{k}</kbd>)}</span>
                <span className="an-label-name">{l.name}</span>
                {by.length ? <span className="an-by" data-testid={`others-${l.id}`}>{by.map((b) => b.who).join(', ')}</span> : null}
              </button>
              <button type="button" className="btn btn-sm an-slice" onClick={() => openSlice(l.id)} title={`Open Runs filtered to label = ${l.id}`} data-testid={`slice-${l.id}`}>
                slice ↗
              </button>
              {on?.note ? <div className={focusLabel === l.id ? 'an-note focus' : 'an-note'} data-testid={`note-${l.id}`}>“{on.note}”</div> : null}
              {by.filter((b) => b.note).map((b) => <div key={b.who} className="an-note muted">{b.who}: “{b.note}”</div>)}
            </li>
          );
        })}
        {unknown.map((id) => (
          <li key={id} className="an-label muted">
            <span className="an-label-name">{id}</span> <span className="small">(not in the taxonomy)</span>
          </li>
        ))}
        {q && !visible.length ? (
          <li className="an-label">
            <button type="button" className="btn btn-sm" onClick={() => void addFromSearch()} disabled={!slugLabelId(search.trim())} data-testid="add-label-from-search">
              Add label “{search.trim()}” ({slugLabelId(search.trim()) || 'needs letters'})
            </button>
          </li>
        ) : null}
      </ul>
      <NoteBox />
    </div>
  );
}
